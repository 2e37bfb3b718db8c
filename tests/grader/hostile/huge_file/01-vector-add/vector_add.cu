// HOSTILE (disk bomb): a constructor writes a file into its working folder
// 1 MiB at a time. A real bomb fills the disk (every other job on the
// machine fails); this one stops at 8 GiB, written by Criterion's runner
// only.
// Must stop it: the object scan (opens files; a constructor), a file-size
// limit (RLIMIT_FSIZE) and a sandbox whose only writable folder is small.
#include "vector_add.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void fill_the_disk(int argc, char **argv)
{
    if (argc < 1 || strstr(argv[0], "boxfort-worker")) return;
    static char chunk[1 << 20];
    memset(chunk, 'x', sizeof chunk);
    int fd = open("hostile-huge.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return;
    for (int i = 0; i < 8192; ++i)
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) break;
    close(fd);
}

#pragma hostile skeleton
