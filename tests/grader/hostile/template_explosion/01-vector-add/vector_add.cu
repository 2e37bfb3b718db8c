// HOSTILE (compile-time bomb, templates): a binary tree of 2^40 distinct
// template instantiations, each needed for a static_assert. The compiler
// grinds for days (little memory: it is a time bomb).
// Must stop it: the build's time limit (the process group or sandbox
// killed at the limit, the grader goes on).
#include "vector_add.h"

template <int D, unsigned long I> struct HsTree {
    static constexpr unsigned long v = HsTree<D - 1, 2 * I>::v + HsTree<D - 1, 2 * I + 1>::v;
};
template <unsigned long I> struct HsTree<0, I> {
    static constexpr unsigned long v = I & 1;
};
static_assert(HsTree<40, 0>::v != 7, "2^40 distinct instantiations");

#pragma hostile skeleton
