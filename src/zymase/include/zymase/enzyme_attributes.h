/* Enzyme's source attributes for plain clang (zymase cc).

   Enzyme's clang plugin turns __attribute__((enzyme_inactive)) and its relatives into
   annotations; plain clang ignores them with a warning. `zymase cc` includes this header
   (with -include) only when clang reported one of the attributes below, and compiles
   again: each spelling becomes __attribute__((annotate("..."))), which reaches LLVM IR
   in @llvm.global.annotations, where zymase reads it (llvm/annotations.py).

   Only the GNU spelling __attribute__((...)) is covered: [[...]] has no unqualified
   `annotate`, and zymase refuses what is left unknown. The object-like macros would
   break an ordinary identifier of the same name, which is why the header is not
   included unless the attribute is used. */
#ifndef ZYMASE_ENZYME_ATTRIBUTES_H
#define ZYMASE_ENZYME_ATTRIBUTES_H

#define enzyme_inactive annotate("enzyme_inactive")
#define enzyme_inactive_noblock annotate("enzyme_inactive_noblock")
#define enzyme_function_like(name) annotate("enzyme_function_like=" name)

#endif
