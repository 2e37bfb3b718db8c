// HOSTILE (start-up code before constructors): a GNU indirect function. The
// dynamic loader calls its resolver while it relocates the program, before
// any constructor and before main, as soon as the program refers to it
// (here: its address in a static variable). The resolver writes a forged
// JSON report (every test PASSED, path from /proc/self/cmdline) and exits.
// Static, no constructor, no libc call: raw `syscall` instructions.
// Must stop it: the object scan (an ifunc, raw system calls), and the
// grader's check of the report against evidence.
#include "vector_add.h"

#pragma hostile raw_syscalls
#pragma hostile forge

extern "C" {
static void hs_nothing(void) {}
static void (*hs_resolve(void))(void)
{
    hs_forge();
    hs_exit(0);
    return hs_nothing;
}
static void hs_indirect(void) __attribute__((ifunc("hs_resolve")));
}

// its address in initialised data: the loader must resolve it (never called)
__attribute__((used)) static void (*volatile hs_ref)(void) = hs_indirect;

#pragma hostile skeleton
