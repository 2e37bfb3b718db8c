// HOSTILE (forged report, constructor): a C constructor runs in Criterion's
// runner before main, writes a JSON report that says every test PASSED (and
// a passing speed record) at the --json= path it reads from
// /proc/self/cmdline, then exits 0 before a single test runs. Every file
// access is a raw `syscall` instruction, so the symbol table shows nothing.
// Must stop it: the object scan (a constructor, raw system calls), and the
// grader's check of the report against evidence only a real run leaves.
#include "vector_add.h"

#pragma hostile raw_syscalls
#pragma hostile forge

__attribute__((constructor)) static void hs_before_main(void)
{
    hs_forge();
    hs_exit(0);
}

#pragma hostile skeleton
