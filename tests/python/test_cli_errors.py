"""Every user-caused failure ends in one ``zymase: error:`` line naming the construct,
the function and (with -g) the source line, plus a hint; exit code 1; no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from forking_cli import run_cli

BIN = Path(sys.executable).parent


def _cli(name: str) -> list[str]:
    exe = BIN / name
    if exe.exists():
        return [str(exe)]
    mod = "zymase.cli"
    fn = "main" if name == "zymase" else "opt_main"
    return [sys.executable, "-c", f"import sys; from {mod} import {fn}; sys.exit({fn}())"]


def run(name: str, args: list[str], stdin: str | None = None, env=None, cwd=None):
    # Forked from a pre-imported server (tests/forking_cli.py); the tests that check the
    # installed console scripts themselves call _cli(...) with subprocess.
    return run_cli(args, program=name, input=stdin, env=env, cwd=cwd)


def one_error(proc, *needles: str) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    lines = [l for l in err.splitlines() if l.startswith("zymase: error:")]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert "hint:" in lines[0], lines[0]
    return lines[0]


C_CASES = {
    # session 35: GNU C's computed goto is refused in C's words (the message said only
    # "'blockaddress' constants are not supported")
    "computed_goto.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x, int k) { static void *t[] = {&&a, &&b}; goto *t[k & 1]; a: return x * x; b: return x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.5, 1) > 0; }\n",
        ["computed_goto.c", "'&&label'", "computed goto"],
    ),
    # session 35: a thread-local variable holding an active value read back by a callee is
    # refused at every level; the message named LLVM's intrinsic
    # ('call @llvm.threadlocal.address.p0') rather than the C variable
    "thread_local_active.c": (
        "extern double __enzyme_autodiff(void*, ...);\nstatic __thread double tl;\n"
        "__attribute__((noinline)) double readtl(void) { return tl; }\n"
        "double f(double x) { tl = x * x; return readtl() * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.5) > 0; }\n",
        ["thread_local_active.c:4:", "the thread-local variable 'tl'", "function 'f'", "ordinary variable"],
    ),
    # session 33: the bits of floats loaded as a vector of integers and masked (here the
    # low mantissa bits cleared; Eigen's SSE abs() is the sign mask, made fabs before AD:
    # test_packet_abs_by_sign_mask) had derivative zero, silently, at every level
    "packet_mask_bits.c": (
        "#include <emmintrin.h>\nextern void __enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
        "double f(const double *x) {\n"
        "  __m128d a = _mm_castsi128_pd(_mm_and_si128(_mm_loadu_si128((const __m128i *)x),"
        " _mm_set1_epi64x(-4096)));\n"
        "  return a[0] * a[1]; }\n"
        "int main(void) { double x[2] = {1, -2}, dx[2] = {0, 0}; __enzyme_autodiff((void*)f, enzyme_dup, x, dx);"
        " return dx[0] != -2; }\n",
        ["packet_mask_bits.c:5:", "a vector of i64 integers is loaded from memory holding derivatives",
         "function 'f'", "-DEIGEN_DONT_VECTORIZE"],
    ),
    # session 32: without -g, the build refused this at -O1 and up with no source line: the
    # second build with line tables ran the pre-AD pipeline on every function, inlined
    # grad_of into main and resolved fn, so it found no error to take the line from
    "helper_function_pointer.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { return x * x; }\ndouble g(double x) { return x; }\n"
        "static double grad_of(double (*fn)(double), double x) { return __enzyme_autodiff((void*)fn, x); }\n"
        "int main(int argc, char **argv) { (void)argv; return grad_of(f, 1.0) + grad_of(g, 2.0) > argc; }\n",
        ["helper_function_pointer.c:4:", "must be a function defined in this file", "function 'grad_of'"],
    ),
    # session 32: reverse mode of a function returning a struct of doubles took the result
    # as constant (zero derivatives, silently); an aggregate has no seed in Enzyme's C ABI
    "struct_result_reverse.c": (
        "extern double __enzyme_autodiff(void*, ...);\n#include <math.h>\n"
        "typedef struct { double u, v; } pair;\n"
        "pair g(double x, double y) { pair p = {x * y, sin(x)}; return p; }\n"
        "int main(void) { return __enzyme_autodiff((void*)g, 1.0, 2.0) > 0; }\n",
        ["struct_result_reverse.c:5:", "reverse mode of 'g'", "only a float result is seeded", "'main'"],
    ),
    # session 32: a struct passed by value as a shadow is a copy (a byval pointer): the
    # adjoints went into the copy and the caller's struct stayed zero (at -O1 and above)
    "byval_shadow.c": (
        "extern void __enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
        "typedef struct { double x, y, z; } p3;\n"
        "double f(p3 p) { return p.x * p.y * p.z; }\n"
        "int main(void) { p3 q = {1, 2, 3}, dq = {0, 0, 0}; __enzyme_autodiff((void*)f, enzyme_dup, q, dq);"
        " return dq.x != 6; }\n",
        ["byval_shadow.c:5:", "shadow of parameter 1 of 'f'", "struct passed by value", "&ds"],
    ),
    # reverse mode carries the pointer shadows of a realloc'd block into the new shadow;
    # a block of structs holding floats and pointers cannot be split so (a segfault before)
    "realloc_mixed.c": (
        "#include <stdlib.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "struct item { double v; double *p; };\n"
        "double f(double *x, int n) { struct item *a = malloc(sizeof *a); a[0].v = x[0]; a[0].p = &x[1];\n"
        "  a = realloc(a, n * sizeof *a); for (int i = 1; i < n; i++) { a[i].v = x[i] * a[i - 1].v; a[i].p = &x[i]; }\n"
        "  double s = 0; for (int i = 0; i < n; i++) s += a[i].v * *a[i].p; free(a); return s; }\n"
        "int main(void) { double x[3] = {1, 2, 3}, d[3] = {0}; __enzyme_autodiff((void*)f, x, d, 3); return d[0] > 0; }\n",
        ["realloc_mixed.c:5:", "realloc of memory holding both floating-point values and pointers",
         "function 'f'", "separate arrays"],
    ),
    # a second derivative through a recursive function: its derivative's tape is the
    # global split-mode tape; the refusal named '__zymase_tape' and 'augmentedrec'
    "nested_recursion.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "#include <math.h>\n"
        "double rec(const double *x, int k) { return k == 0 ? x[0] : sin(rec(x, k - 1)) * x[k % 2]; }\n"
        "double f(double *x) { return rec(x, 6); }\n"
        "double d1(double *x) { double g[2] = {0, 0}; __enzyme_autodiff((void*)f, x, g); return g[0]; }\n"
        "int main(void) { double x[2] = {0.5, 0.7}, h[2] = {0, 0};\n"
        "  __enzyme_autodiff((void*)d1, x, h); return h[0] > 0; }\n",
        ["nested_recursion.c:3:", "cannot differentiate the derivative of the recursive function 'rec' again",
         "function 'rec'", "write 'rec' as a loop"],
    ),
    "too_few.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x, double y) { return x * y; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["too_few.c:3:", "too few arguments for 'f'", "__enzyme_autodiff", "'main'"],
    ),
    "marker_last.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_const;\n"
        "double f(double x, double y) { return x * y; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0, enzyme_const) > 0; }\n",
        ["marker_last.c:4:", "enzyme_const is not followed by an argument"],
    ),
    "not_function.c": (
        "extern double __enzyme_autodiff(void*, ...);\ndouble g = 3.0;\n"
        "int main(void) { return __enzyme_autodiff((void*)&g, 1.0) > 0; }\n",
        ["not_function.c:3:", "must be a function", "'@g'"],
    ),
    "too_many.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0, 2.0) > 0; }\n",
        ["too_many.c:3:", "too many arguments for 'f'"],
    ),
    "out_on_int.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_out;\n"
        "double f(double x, int n) { return x * n; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0, enzyme_out, 3) > 0; }\n",
        ["out_on_int.c:4:", "enzyme_out on argument 2", "not a float"],
    ),
    # issue 23: float bits changed by integer arithmetic had derivative 0 (the fast
    # inverse square root; a union stepping to the next double)
    "fast_inverse_sqrt.c": (
        "#include <string.h>\n#include <stdint.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "float q(float x) {\n  int32_t i; float y = x;\n  memcpy(&i, &y, 4);\n  i = 0x5f3759df - (i >> 1);\n"
        "  memcpy(&y, &i, 4);\n  return y * (1.5f - 0.5f * x * y * y);\n}\n"
        "int main(void) { return ((float(*)(void*, float))__enzyme_autodiff)((void*)q, 4.0f) > 0; }\n",
        ["fast_inverse_sqrt.c:", "bits of an active float", "integer arithmetic", "function 'q'"],
    ),
    # session 31: a double copied as its byte 0 and bytes 1..15 of a struct of two
    # (SROA's copy of a std::complex in std::vector::insert): the 15-byte copy's adjoint
    # moved part of a double's bytes, silently wrong at every level
    "float_bytes_in_pieces.c": (
        "#include <string.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "struct c2 { double re, im; };\n"
        "__attribute__((noinline)) static void put(struct c2 *d, const struct c2 *s) {\n"
        "  unsigned char b0, rest[15];\n  memcpy(&b0, s, 1);\n  memcpy(rest, (const char *)s + 1, 15);\n"
        "  memcpy(d, &b0, 1);\n  memcpy((char *)d + 1, rest, 15);\n}\n"
        "double f(double x) { struct c2 a = {x * x, x}, b; put(&b, &a); return b.re * b.im; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 2.0) > 0; }\n",
        ["float_bytes_in_pieces.c:", "not a whole number of them", "part of a double", "byte ranges"],
    ),
    "union_next_double.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double up(double x) {\n  union { double d; long long i; } u = { x };\n  u.i += 1;\n  return u.d * 2.0;\n}\n"
        "int main(void) { return __enzyme_autodiff((void*)up, 3.0) > 0; }\n",
        ["union_next_double.c:", "bits of an active float", "function 'up'"],
    ),
    "no_rule.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern double mystery(double);\n"
        "double f(double x) { return mystery(x) * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["no_rule.c:3:", "no derivative rule for external function 'mystery'", "function 'f'"],
    ),
    # issue 24 item 6: an external function handed an active value and a pointer may write
    # its result through the pointer (as sincos does): refused, was a silent zero derivative
    "active_into_pointer_writer.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern void polar(double t, double *out);\n"
        "double f(double x) { double o; polar(x, &o); return o; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["active_into_pointer_writer.c:3:", "'polar'", "through its pointer", "function 'f'"],
    ),
    # issue 24 item 6: glibc names without a rule stay refused, by name
    "finite_without_rule.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern double __lgamma_r_finite(double, int *);\n"
        "double f(double x) { int s; return __lgamma_r_finite(x, &s); }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.5) > 0; }\n",
        ["finite_without_rule.c:3:", "no derivative rule for external function '__lgamma_r_finite'"],
    ),
    "declared_only.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern double h(double);\n"
        "int main(void) { return __enzyme_autodiff((void*)h, 1.0) > 0; }\n",
        ["declared_only.c:3:", "'h'", "declaration"],
    ),
    # an address computed as an integer has no shadow: the derivative through it was
    # silently lost (half the gradient of sum x[n-1-i] x[i]; zero through a callee)
    "integer_address.c": (
        "#include <stdint.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "double f(double *x, int n) { double s = 0; uintptr_t b = (uintptr_t)x;\n"
        "  for (int i = 0; i < n; i++) s += *(double *)(b + 8u * (n - 1 - i)) * x[i]; return s; }\n"
        "int main(void) { double x[3] = {1, 2, 3}, dx[3] = {0};\n"
        "  __enzyme_autodiff((void*)f, x, dx, 3); return dx[0] != 6; }\n",
        ["integer_address.c:4:", "made from an integer", "function 'f'", "uintptr_t"],
    ),
    "integer_address_argument.c": (
        "#include <stdint.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "__attribute__((noinline)) static double g(uintptr_t b) { return *(double *)b * 3.0; }\n"
        "double f(double *x) { return g((uintptr_t)x) + x[0]; }\n"
        "int main(void) { double x = 2, dx = 0; __enzyme_autodiff((void*)f, &x, &dx); return dx != 4; }\n",
        ["integer_address_argument.c:4:", "handed on as an integer", "function 'f'", "uintptr_t"],
    ),
    # a C11 _Atomic double is updated by a compare-exchange loop on its bits as an i64:
    # the derivative went through integers and came out zero, silently
    "atomic_double.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double *x, int n) { _Atomic double acc = 0;\n"
        "  for (int i = 0; i < n; i++) acc += x[i] * x[i]; return acc; }\n"
        "int main(void) { double x[2] = {1, 2}, dx[2] = {0};\n"
        "  __enzyme_autodiff((void*)f, x, dx, 2); return dx[1] != 4; }\n",
        ["atomic_double.c:3:", "an atomic memory operation on active data", "function 'f'"],
    ),
    # a recursive function (a call of its own) returning a pointer to memory it filled
    # from x: the derivative call returned no shadow, the derivative was zero, silently
    "recursive_pointer_result.c": (
        "#include <stdlib.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "typedef struct node { double v; struct node *l, *r; } node;\n"
        "static node *build(double *x, int lo, int hi) { if (lo >= hi) return 0; int m = (lo + hi) / 2;\n"
        "  node *t = malloc(sizeof *t); t->v = x[m] * x[m]; t->l = build(x, lo, m); t->r = build(x, m + 1, hi);"
        " return t; }\n"
        "static double sum(node *t) { return t ? t->v + sum(t->l) + sum(t->r) : 0; }\n"
        "double f(double *x, int n) { return sum(build(x, 0, n)); }\n"
        "int main(void) { double x[3] = {1, 2, 3}, dx[3] = {0};\n"
        "  __enzyme_autodiff((void*)f, x, dx, 3); return dx[1] != 4; }\n",
        ["recursive_pointer_result.c:7:", "'build' is given active data and returns a pointer", "function 'f'",
         "recursion"],
    ),
    # memory aligned by rounding its address as an integer has no shadow: refused, with
    # the supported way to get aligned memory as the hint
    "rounded_alignment.c": (
        "#include <stdint.h>\n#include <stdlib.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "double f(double *x) { void *raw = malloc(64 + 8); double *a = (double *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);\n"
        "  a[0] = x[0] * x[0]; double r = a[0] * 3.0; free(raw); return r; }\n"
        "int main(void) { double x = 2, dx = 0; __enzyme_autodiff((void*)f, &x, &dx); return dx != 12; }\n",
        ["rounded_alignment.c:5:", "'llvm.inttoptr', whose memory has no shadow", "posix_memalign"],
    ),
    # a double's bits copied through an integer variable across a branch (the pre-AD
    # pipeline makes it a phi of an i64 load stored into nw): the derivative was lost
    # silently, into memory without a shadow (-O0) and over a float with one (an 8-byte
    # memmove LLVM splits into a load and a phi with undef, -O2)
    "float_bits_through_integer_merge.c": (
        "#include <stdlib.h>\n#include <string.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "double f(double *x, int n) { double *old = malloc(n * sizeof(double));\n"
        "  for (int i = 0; i < n; i++) old[i] = x[i];\n"
        "  double *nw = malloc(n * sizeof(double)); nw[1] = 0.5;\n"
        "  memmove(nw, old, 8);\n  memmove(nw + 2, old + 1, (n - 3) * sizeof(double));\n"
        "  free(old); double r = 0; for (int i = 0; i < n - 1; i++) r += nw[i] * (i + 1);\n"
        "  free(nw); return r; }\n"
        "int main(void) { double x[5] = {1, 2, 3, 4, 5}, dx[5] = {0};\n"
        "  __enzyme_autodiff((void*)f, x, dx, 5); return dx[0] != 1; }\n",
        ["float_bits_through_integer_merge.c:", "merged with other values", "function 'f'"],
    ),
    "volatile_active.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(volatile double *x) { return x[0] * x[0]; }\n"
        "int main(void) { double x = 2, dx = 0; __enzyme_autodiff((void*)f, &x, &dx); return dx != 4; }\n",
        ["volatile_active.c:2:", "a volatile memory access on active data", "function 'f'"],
    ),
    # the function pointer comes from elsewhere and no function of the file with its type
    # has its address taken (a pointer chosen at run time among the file's functions is
    # differentiated: transforms/indirect_calls, tests/cxx/indirect_calls.cpp; a constant
    # one is called directly in a specialized copy: tests/c/constant_function_arguments.c)
    "indirect_call.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x, double (*g)(double)) { return g(x) * x; }\n"
        "extern double (*pick(int))(double);\n"
        "extern int enzyme_const;\nint main(int argc, char **argv) { (void)argv;\n"
        "  return __enzyme_autodiff((void*)f, 2.0, enzyme_const, pick(argc)) > 0; }\n",
        ["indirect_call.c:2:", "indirect call through a function pointer", "function 'f'", "address taken"],
    ),
    "inline_asm.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { double y; __asm__(\"movsd %1, %0\" : \"=x\"(y) : \"x\"(x)); return y * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 2.0) > 0; }\n",
        ["inline_asm.c:2:", "inline assembly on active data", "function 'f'", 'asm "movsd'],
    ),
    # session 33: calls of inline assembly are read (barriers in main, a cycle counter);
    # one with instructions that may touch memory is refused where it is differentiated,
    # since the memory analyses cannot see what it writes
    "inline_asm_memory.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_dup, enzyme_const;\n"
        "void f(double *x, long *calls) { __asm__ volatile(\"incq %0\" : \"+m\"(*calls));\n"
        "  x[0] = x[0] * x[0]; }\n"
        "int main(void) { double x = 2, dx = 1; long c = 0;\n"
        "  __enzyme_autodiff((void*)f, enzyme_dup, &x, &dx, enzyme_const, &c); return dx != 4; }\n",
        ["inline_asm_memory.c:3:", "inline assembly that may read or write memory", "function 'f'",
         "move the assembly out"],
    ),
    "const_pointer_written.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_const;\n"
        "void f(double *x, double *out) { *out = x[0] * x[0]; }\n"
        "int main(void) { double x = 2, dx = 0, o = 0;\n"
        "  __enzyme_autodiff((void*)f, &x, &dx, enzyme_const, &o); return dx != 4; }\n",
        ["const_pointer_written.c:3:", "argument 2 of 'f'", "no shadow", "enzyme_dup"],
    ),
    "opaque_memory.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern void scale(double *x, int n);\n"
        "double f(double *x) { scale(x, 3); return x[0] * x[1]; }\n"
        "int main(void) { double x[3] = {1, 2, 3}, dx[3] = {0};\n"
        "  __enzyme_autodiff((void*)f, x, dx); return dx[0] != 2; }\n",
        ["opaque_memory.c:3:", "memory holding active data is passed to 'scale'", "function 'f'"],
    ),
    # a struct mixing floats and integers (structs of floats only are values with
    # derivatives: tests/c/struct_values.c)
    "struct_return.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "typedef struct { double a; int n; } pair;\n"
        "__attribute__((noinline)) pair g(double x) { pair p = {x * x, 2}; return p; }\n"
        "double f(double x) { pair p = g(x); return p.a * p.n; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["struct_return.c:4:", "aggregates is not supported yet", "function 'f'"],
    ),
    "pointer_result_reverse.c": (
        "extern double *__enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
        "double *f(double *x) { x[0] *= x[0]; return x; }\n"
        "int main(void) { double x = 2, dx = 1; return __enzyme_autodiff((void*)f, enzyme_dup, &x, &dx)[0] != 4; }\n",
        ["pointer_result_reverse.c:4:", "returns a pointer", "reverse mode returns only derivatives"],
    ),
    "variadic_active.c": (
        "#include <stdarg.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "__attribute__((noinline)) double sum(int n, ...) { va_list ap; va_start(ap, n); double s = 0;\n"
        "  for (int i = 0; i < n; i++) s += va_arg(ap, double); va_end(ap); return s; }\n"
        "double f(double x) { return sum(2, x, x * x); }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 3.0) > 0; }\n",
        ["variadic_active.c:5:", "variadic function 'sum'", "function 'f'"],
    ),
    "float128_active.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { __float128 y = x; return (double)(y / (y + 1)); }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 3.0) > 0; }\n",
        ["float128_active.c:2:", "converted to f128", "does not differentiate", "function 'f'"],
    ),
    # session 34: (double)(__bf16)y is an fptrunc to bfloat and back, a type without
    # derivative rules: the derivative stopped there at -O1..-O3 (x^2 for x^3), silently
    "bf16_active.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { __bf16 h = (__bf16)(x * x); return (double)h * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.25) > 0; }\n",
        ["bf16_active.c:2:", "converted to bf16", "(__bf16)", "function 'f'"],
    ),
    # session 34: the bits of a double read as a number (a piecewise linear log2) move with
    # x, but were taken as constant: derivative 0 at every level, silently
    "fast_log2.c": (
        "#include <string.h>\n#include <stdint.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { uint64_t u; memcpy(&u, &x, 8);\n"
        "  return (double)u * 0x1p-52 - 1023.0; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 3.3) > 0; }\n",
        ["fast_log2.c:5:", "keeps bits of its mantissa", "llvm.uitofp", "function 'f'"],
    ),
    # session 34 (review): the same number made in a noinline helper taking the bits: the
    # bits crossed the call as an integer and the derivative was silently m for m + x
    "bits_helper_number.c": (
        "#include <string.h>\n#include <stdint.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "__attribute__((noinline)) static double tonum(uint64_t b) {\n"
        "  return (double)(b & 0xfffffffffffffULL) * 0x1p-52; }\n"
        "double f(double x) { uint64_t u; memcpy(&u, &x, 8); return tonum(u) * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.5) > 0; }\n",
        ["bits_helper_number.c:5:", "keeps bits of its mantissa", "llvm.uitofp", "function 'f'"],
    ),
    # session 34: an integer rounded from x made the mantissa of a double (Schraudolph's
    # exp) had derivative 0 while the value moves like exp(x)
    "schraudolph_exp.c": (
        "#include <string.h>\n#include <stdint.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { int64_t i = (int64_t)(x * 6497320848556798.0 + 4607182418800017408.0);\n"
        "  double y; memcpy(&y, &i, 8); return y; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.3) > 0; }\n",
        ["schraudolph_exp.c:5:", "rounded from an active float becomes the mantissa bits", "function 'f'"],
    ),
    # small float vectors carry derivatives lane by lane (tests/c/vector_values.c); an op
    # whose rule does not work lane-wise (a vector sqrt) is refused by name
    "vector_active.c": (
        "typedef double v2 __attribute__((vector_size(16)));\n"
        "extern void __enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
        "double f(const double *x) { v2 v = *(const v2 *)x; v2 r = __builtin_elementwise_sin(v); return r[0] * r[1]; }\n"
        "int main(void) { double x[2] = {1, 2}, dx[2] = {0, 0};\n"
        "  __enzyme_autodiff((void*)f, enzyme_dup, x, dx); return dx[0] != 2; }\n",
        ["vector_active.c:4:", "an active vector of floats reaches", "llvm.sin.v2f64", "function 'f'"],
    ),
    # issue 24 item 2: registered derivatives that do not follow Enzyme's convention are
    # refused by name (calling them with other arguments would be undefined behaviour)
    "register_gradient_wrong_arity.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double sq(double x) { return x * x; }\n"
        "double aug(double x, double y) { return x * y; }\ndouble grad(double x, double d) { return 3 * d; }\n"
        "void *__enzyme_register_gradient_sq[3] = {(void*)sq, (void*)aug, (void*)grad};\n"
        "int main(void) { return __enzyme_autodiff((void*)sq, 1.0) != 3; }\n",
        ["'aug', registered as the augmented forward pass of 'sq', takes 2", "needs 1 parameters"],
    ),
    "register_gradient_wrong_return.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double sq(double x) { return x * x; }\n"
        "double aug(double x) { return x * x; }\nvoid grad(double x, double d) { (void)x; (void)d; }\n"
        "void *__enzyme_register_gradient_sq[3] = {(void*)sq, (void*)aug, (void*)grad};\n"
        "int main(void) { return __enzyme_autodiff((void*)sq, 1.0) != 3; }\n",
        ["'grad', registered as the gradient of 'sq', returns void", "derivatives of the float arguments"],
    ),
    "register_derivative_wrong_return.c": (
        "extern double __enzyme_fwddiff(void*, ...);\n"
        "double sq(double x) { return x * x; }\nvoid dsq(double x, double dx) { (void)x; (void)dx; }\n"
        "void *__enzyme_register_derivative_sq[2] = {(void*)sq, (void*)dsq};\n"
        "int main(void) { return __enzyme_fwddiff((void*)sq, 1.0, 1.0) != 3; }\n",
        ["'dsq', registered as the forward-mode derivative of 'sq', returns void", "tangent"],
    ),
    "register_gradient_short.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double sq(double x) { return x * x; }\ndouble grad(double x, double d) { return 3 * d; }\n"
        "void *__enzyme_register_gradient_sq[2] = {(void*)sq, (void*)grad};\n"
        "int main(void) { return __enzyme_autodiff((void*)sq, 1.0) != 3; }\n",
        ["registration '__enzyme_register_gradient_sq' must be an array of 3 function addresses", "got 2"],
    ),
    "register_gradient_constant_pointer.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "void mul(const double *c, const double *x, double *y) { *y = *c * *x; }\n"
        "void *aug(const double *c, const double *dc, const double *x, const double *dx, double *y, double *dy)"
        " { *y = *c * *x; return 0; }\n"
        "void grad(const double *c, double *dc, const double *x, double *dx, const double *y, double *dy, void *t)"
        " { *dx += *c * *dy; }\n"
        "void *__enzyme_register_gradient_mul[3] = {(void*)mul, (void*)aug, (void*)grad};\n"
        "double f(const double *c, double a) { double y; mul(c, &a, &y); return y; }\n"
        "extern int enzyme_const;\n"
        "int main(void) { double c = 3; return __enzyme_autodiff((void*)f, enzyme_const, &c, 1.0) != 3; }\n",
        ["argument 1 of 'mul' is a pointer without a shadow here", "registered"],
    ),
    # inactivefn.c, function_like.c, inactive_attribute.c, annotate_inactive.c: implemented now
    # (issue 24 item 2); what stays refused is in test_enzyme_activity_errors.py
    # issue 24 item 1: split mode's mistakes, in C terms
    "split_tape_too_small.c": (
        "extern int enzyme_dup, enzyme_allocated, enzyme_tape;\n"
        "extern void __enzyme_augmentfwd(void*, ...);\n"
        "void f(double *x) { x[0] = x[0] * x[0]; }\n"
        "int main(void) { double x = 2, dx = 1; char tape[16];\n"
        "  __enzyme_augmentfwd((void*)f, enzyme_allocated, 16, enzyme_tape, tape, enzyme_dup, &x, &dx);\n"
        "  return 0; }\n",
        ["split_tape_too_small.c:5:", "tape buffer of 16 bytes", "too small", "__enzyme_augmentsize"],
    ),
    "split_missing_tape.c": (
        "extern int enzyme_dup;\nextern void __enzyme_reverse(void*, ...);\n"
        "void f(double *x) { x[0] = x[0] * x[0]; }\n"
        "int main(void) { double x = 2, dx = 1; __enzyme_reverse((void*)f, enzyme_dup, &x, &dx); return 0; }\n",
        ["split_missing_tape.c:4:", "needs the tape __enzyme_augmentfwd returned", "function 'main'"],
    ),
    "split_missing_seed.c": (
        "extern double __enzyme_reverse(void*, ...);\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_reverse((void*)f, 2.0) > 0; }\n",
        ["split_missing_seed.c:3:", "needs the adjoint of its double result"],
    ),
    "split_augment_declared_double.c": (
        "extern double __enzyme_augmentfwd(void*, ...);\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_augmentfwd((void*)f, 2.0) > 0; }\n",
        ["split_augment_declared_double.c:3:", "returns {void *, double}, but the call is declared to return double"],
    ),
    # a declared struct of other types than the derivatives' used to be read from their
    # bytes: two floats from two doubles (through a register or an sret pointer)
    "derivatives_declared_float.c": (
        "typedef struct { float dx, dy; } g2f;\nextern g2f __enzyme_autodiff(void*, ...);\n"
        "double f(double x, double y) { return x * y; }\n"
        "int main(void) { g2f g = __enzyme_autodiff((void*)f, 2.0, 3.0); return g.dx != 3; }\n",
        ["derivatives_declared_float.c:4:", "returns {double, double}, but the call is declared to return "
         "{float, float}"],
    ),
    "derivatives_declared_float_sret.c": (
        "typedef struct { float dx, dy, dz; } g3f;\nextern g3f __enzyme_autodiff(void*, ...);\n"
        "double h(double x, double y, double z) { return x * y * z; }\n"
        "int main(void) { g3f k = __enzyme_autodiff((void*)h, 2.0, 3.0, 4.0); return k.dx != 12; }\n",
        ["derivatives_declared_float_sret.c:4:", "returns {double, double, double}, but the call is declared to "
         "return {float, float, float}"],
    ),
    # a recursive function reading a global that holds active data, called with no active
    # operand: its result used to be taken as constant (a zero derivative)
    "recursive_reader_of_active_global.c": (
        "extern void __enzyme_autodiff(void*, ...);\nstatic double buf[4];\n"
        "__attribute__((noinline)) static void fill(const double *x) { for (int i = 0; i < 4; i++) buf[i] = x[i] * x[i]; }\n"
        "__attribute__((noinline)) static double total(int i) { return i < 0 ? 0 : buf[i] + total(i - 1); }\n"
        "static double model(const double *x) { fill(x); return total(3); }\n"
        "int main(void) { double x[4] = {1, 2, 3, 4}, dx[4] = {0}; __enzyme_autodiff((void*)model, x, dx);\n"
        "  return dx[3] != 8; }\n",
        ["recursive_reader_of_active_global.c:5:", "'total' reads the global 'buf', which holds active data",
         "function 'model'"],
    ),
    # the same with an active operand (a double): the derivative call still dropped the
    # global's derivatives (zero for every x that reaches the result only through 'buf')
    "recursive_reader_of_active_global_active_operand.c": (
        "extern double __enzyme_autodiff(void*, ...);\nstatic double buf[4];\n"
        "__attribute__((noinline)) static double total(double w, int i) { return i < 0 ? w : buf[i] * w + total(w * 0.9, i - 1); }\n"
        "static double model(const double *x) { for (int i = 0; i < 4; i++) buf[i] = x[i] * x[i]; return total(x[0], 3); }\n"
        "int main(void) { double x[4] = {1, 2, 3, 4}, dx[4] = {0}; __enzyme_autodiff((void*)model, x, dx);\n"
        "  return dx[3] != 8; }\n",
        ["recursive_reader_of_active_global_active_operand.c:4:", "'total' reads the global 'buf', which holds active data",
         "function 'model'"],
    ),
    # Enzyme calls a program's enzymeLogGrad hook; zymase does not: refused, not ignored
    "logging_hook.c": (
        "extern double __enzyme_autodiff(void*, ...);\nint calls = 0;\n"
        "void enzymeLogGrad(double g, const char *op, const char *callee, const char *module,\n"
        "                   const char *function, unsigned block, unsigned inst) { calls++; }\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 2.0) != 4 || calls == 0; }\n",
        ["'enzymeLogGrad' is called by Enzyme with every adjoint", "logging hooks"],
    ),
    "logging_hook_cxx.cpp": (  # the same hook in C++: a mangled name
        "extern double __enzyme_autodiff(void*, ...);\nint calls = 0;\n"
        "void enzymeLogGrad(double g, const char *op, const char *callee, const char *module,\n"
        "                   const char *function, unsigned block, unsigned inst) { calls++; }\n"
        "double f(double x) { return x * x; }\n"
        "int main() { return __enzyme_autodiff((void*)f, 2.0) != 4 || calls == 0; }\n",
        ["'enzymeLogGrad' is called by Enzyme with every adjoint", "logging hooks"],
    ),
    "split_primal_return.c": (
        "extern int enzyme_primal_return;\nextern void *__enzyme_augmentfwd(void*, ...);\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_augmentfwd((void*)f, enzyme_primal_return, 2.0) != 0; }\n",
        ["split_primal_return.c:4:", "enzyme_primal_return is not available in split mode"],
    ),
    "primal_return_of_void.c": (
        "extern int enzyme_primal_return, enzyme_dup;\nextern double __enzyme_autodiff(void*, ...);\n"
        "void f(double *x) { x[0] *= x[0]; }\n"
        "int main(void) { double x = 1, dx = 1;\n"
        "  return __enzyme_autodiff((void*)f, enzyme_primal_return, enzyme_dup, &x, &dx) > 0; }\n",
        ["primal_return_of_void.c:5:", "enzyme_primal_return asks for the result of 'f', which returns void"],
    ),
    "unknown_enzyme_function.c": (
        "extern double __enzyme_frobnicate(void*, ...);\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_frobnicate((void*)f, 1.0) > 0; }\n",
        ["unknown_enzyme_function.c:3:", "'__enzyme_frobnicate' is not an Enzyme function zymase knows"],
    ),
    # issue 25 item 2: malformed vector mode, named in C terms
    "width_not_constant.c": (
        "extern double __enzyme_fwddiff(void*, ...);\nextern int enzyme_width;\n"
        "double f(double x) { return x * x; }\n"
        "int main(int argc, char **argv) { (void)argv;\n"
        "  return __enzyme_fwddiff((void*)f, enzyme_width, argc, 1.0, 1.0) > 0; }\n",
        ["width_not_constant.c:5:", "enzyme_width must be followed by an integer constant", "function 'main'"],
    ),
    "width_too_few_tangents.c": (
        "typedef struct { double d[3]; } vec3;\nextern vec3 __enzyme_fwddiff(void*, ...);\nextern int enzyme_width;\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_fwddiff((void*)f, enzyme_width, 3, 1.0, 1.0, 2.0).d[0] > 0; }\n",
        ["width_too_few_tangents.c:5:", "argument 1 of 'f' needs a tangent after it (enzyme_width 3: 3 tangents, got 2)"],
    ),
    "width_too_many_tangents.c": (
        "typedef struct { double d[2]; } vec2;\nextern vec2 __enzyme_fwddiff(void*, ...);\nextern int enzyme_width;\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_fwddiff((void*)f, enzyme_width, 2, 1.0, 1.0, 2.0, 3.0).d[0] > 0; }\n",
        ["width_too_many_tangents.c:5:", "too many arguments for 'f'"],
    ),
    "width_missing_shadow.c": (
        "extern void __enzyme_fwddiff(void*, ...);\nextern int enzyme_width, enzyme_dup;\n"
        "void f(double *x) { x[0] *= x[0]; }\n"
        "int main(void) { double x = 1, a = 1, b = 0;\n"
        "  __enzyme_fwddiff((void*)f, enzyme_width, 3, enzyme_dup, &x, &a, &b); return 0; }\n",
        ["width_missing_shadow.c:5:", "argument 1 of 'f' needs a shadow after it (enzyme_width 3: 3 shadows, got 2)"],
    ),
    "width_result_type.c": (
        "extern double __enzyme_fwddiff(void*, ...);\nextern int enzyme_width;\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_fwddiff((void*)f, enzyme_width, 3, 1.0, 1.0, 2.0, 3.0) > 0; }\n",
        ["width_result_type.c:4:", "returns {double, double, double}, but the call is declared to return double"],
    ),
    "dupv_on_float.c": (
        "typedef struct { double d[2]; } vec2;\nextern vec2 __enzyme_fwddiff(void*, ...);\n"
        "extern int enzyme_width, enzyme_dupv;\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { double d[2] = {1, 2};\n"
        "  return __enzyme_fwddiff((void*)f, enzyme_width, 2, enzyme_dupv, 8L, 1.0, d).d[0] > 0; }\n",
        ["dupv_on_float.c:6:", "enzyme_dupv on argument 1 of 'f', which is not a pointer"],
    ),
    # split forward mode at width N: the tape's augmented call gives the same width
    "width_split_forward_mode.c": (
        "typedef struct { double d[2]; } vec2;\nextern vec2 __enzyme_fwdsplit(void*, ...);\n"
        "typedef struct { void *tape; double v; } aug;\nextern aug __enzyme_augmentfwd(void*, ...);\n"
        "extern int enzyme_width;\ndouble f(double x) { return x * x; }\n"
        "int main(void) { aug a = __enzyme_augmentfwd((void*)f, 1.0);\n"
        "  return __enzyme_fwdsplit((void*)f, enzyme_width, 2, 1.0, 1.0, 2.0, a.tape).d[0] > 0; }\n",
        ["width_split_forward_mode.c:7:", "__enzyme_augmentfwd of 'f' (active -> active result) writes the tape of "
         "__enzyme_fwdsplit, which is called with other activities or another width (active -> active result at "
         "enzyme_width 2)"],
    ),
    "width_split_forward_registered.c": (
        "typedef struct { double d[2]; } vec2;\nextern vec2 __enzyme_fwdsplit(void*, ...);\n"
        "extern int enzyme_width;\ndouble f(double x) { return x * x; }\n"
        "typedef struct { void *t; double v; } aug;\n"
        "aug f_aug(double x) { aug a = {0, x * x}; return a; }\n"
        "double f_fs(double x, double dx, void *t) { (void)t; return 2 * x * dx; }\n"
        "void *__enzyme_register_splitderivative_f[3] = {(void *)f, (void *)f_aug, (void *)f_fs};\n"
        "int main(void) { return __enzyme_fwdsplit((void*)f, enzyme_width, 2, 1.0, 1.0, 2.0, (void*)0).d[0] > 0; }\n",
        ["vector mode (width 2) cannot differentiate 'f', a function with a registered split derivative, by "
         "__enzyme_fwdsplit", "call __enzyme_fwdsplit at width 1"],
    ),
    "width_reverse_one_seed.c": (
        "typedef struct { double d[2]; } vec2;\nextern vec2 __enzyme_reverse(void*, ...);\n"
        "extern void *__enzyme_augmentfwd(void*, ...);\nextern int enzyme_width;\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { void *t = __enzyme_augmentfwd((void*)f, enzyme_width, 2, 1.0);\n"
        "  return __enzyme_reverse((void*)f, enzyme_width, 2, 1.0, 1.0, t).d[0] > 0; }\n",
        ["width_reverse_one_seed.c:7:", "__enzyme_reverse of 'f' needs the adjoint of its double result after the "
         "arguments (enzyme_width 2: 2 adjoints, one per lane, got 1)"],
    ),
    "width_registered_derivative.c": (
        "typedef struct { double d[2]; } vec2;\nextern vec2 __enzyme_fwddiff(void*, ...);\nextern int enzyme_width;\n"
        "double cube(double x) { return x * x * x; }\n"
        "typedef struct { double v, d; } dual;\n"
        "dual cube_fwd(double x, double dx) { dual r = {x * x * x, 3 * x * x * dx}; return r; }\n"
        "void *__enzyme_register_derivative_cube[2] = {(void *)cube, (void *)cube_fwd};\n"
        "int main(void) { return __enzyme_fwddiff((void*)cube, enzyme_width, 2, 2.0, 1.0, 0.5).d[0] > 0; }\n",
        ["vector mode (width 2) cannot differentiate 'cube', a function with a registered derivative",
         "differentiate it at width 1"],
    ),
    "width_zero.c": (
        "extern double __enzyme_fwddiff(void*, ...);\nextern int enzyme_width;\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_fwddiff((void*)f, enzyme_width, 0, 1.0) > 0; }\n",
        ["width_zero.c:4:", "enzyme_width 0: the vector width must be at least 1"],
    ),
    # issue 25 item 2: __enzyme_batch used in ways it cannot mean, named in C terms
    "batch_branch_on_lane.c": (
        "extern double __enzyme_batch(void*, ...);\nextern int enzyme_width;\n"
        "typedef struct { double d[2]; } vec2;\nextern vec2 __enzyme_batch2(void*, ...);\n"
        "double pw(double x, int n) { double r = 1; for (int i = 0; i < n; i++) r *= x; return r; }\n"
        "int main(void) { return __enzyme_batch2((void*)pw, enzyme_width, 2, 1.0, 2.0, 3, 4).d[0] > 0; }\n",
        ["batch_branch_on_lane.c:5:", "a branch on a value that differs between lanes", "function 'pw'"],
    ),
    "batch_shared_store.c": (
        "extern void __enzyme_batch(void*, ...);\nextern int enzyme_width, enzyme_scalar;\n"
        "void put(double *out, double x) { *out = x * x; }\n"
        "int main(void) { double out = 0;\n"
        "  __enzyme_batch((void*)put, enzyme_width, 2, enzyme_scalar, &out, 1.0, 2.0); return out > 0; }\n",
        ["batch_shared_store.c:3:", "the lanes would store into memory they share"],
    ),
    "batch_too_few_lanes.c": (
        "typedef struct { double d[3]; } vec3;\nextern vec3 __enzyme_batch(void*, ...);\nextern int enzyme_width;\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_batch((void*)f, enzyme_width, 3, 1.0, 2.0).d[0] > 0; }\n",
        ["batch_too_few_lanes.c:5:", "too few arguments for 'f': argument 1 is missing (3 values, one per lane: got 2)"],
    ),
    "batch_result_type.c": (
        "extern double __enzyme_batch(void*, ...);\nextern int enzyme_width;\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_batch((void*)f, enzyme_width, 3, 1.0, 2.0, 3.0) > 0; }\n",
        ["batch_result_type.c:4:", "returns {double, double, double}, but the call is declared to return double"],
    ),
    "batch_marker_elsewhere.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_vector;\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, enzyme_vector, 1.0) > 0; }\n",
        ["batch_marker_elsewhere.c:4:", "marker 'enzyme_vector' belongs to __enzyme_batch, not __enzyme_autodiff"],
    ),
    # issue 25 item 1: nested differentiation works (tests/c/nested); a derivative that
    # would contain itself is refused
    "nested_self.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { return x > 10 ? x : x * __enzyme_autodiff((void*)f, x + 1); }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 2.0) > 0; }\n",
        ["nested_self.c:2:", "differentiates a function that reaches this same call again"],
    ),
    # issue 23 item 4: bad calls in C terms, no internal TypeError
    "missing_shadow.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
        "double f(double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * x[i]; return s; }\n"
        "int main(void) { double x[2] = {1, 2}; return __enzyme_autodiff((void*)f, enzyme_dup, x, 2) > 0; }\n",
        ["missing_shadow.c:4:", "argument 4 of __enzyme_autodiff: enzyme_dup expects a shadow pointer after "
         "parameter 1 of 'f', got int"],
    ),
    # session 33: a struct {double *d; long n;} passed by value is two parameters (ptr,
    # i64): its shadow struct cannot follow it as one argument; the hint says to pass it by
    # address
    "struct_by_value_dup.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
        "struct view { double *d; long n; };\n"
        "double f(struct view v) { double s = 0; for (long i = 0; i < v.n; i++) s += v.d[i] * v.d[i]; return s; }\n"
        "int main(void) { double x[2] = {1, 2}, dx[2] = {0}; struct view v = {x, 2}, dv = {dx, 2};\n"
        "  __enzyme_autodiff((void*)f, enzyme_dup, v, dv); return dx[0] != 2; }\n",
        ["struct_by_value_dup.c:6:", "enzyme_dup expects a shadow pointer after parameter 1 of 'f', got long",
         "a struct passed by value reaches the function as its fields", "(enzyme_dup, &s, &ds)"],
    ),
    "wrong_argument_type.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double *x) { return x[0]; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 2.0, 1.0) > 0; }\n",
        ["wrong_argument_type.c:3:", "argument 2 of __enzyme_autodiff is double, but parameter 1 of 'f' is a pointer"],
    ),
    "float128_argument.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(__float128 x) { return (double)(x * x); }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, (__float128)3.0) > 0; }\n",
        ["float128_argument.c:3:", "parameter 1 of 'f' is a __float128", "does not differentiate"],
    ),
    "float128_result.c": (
        "extern __float128 __enzyme_autodiff(void*, ...);\n"
        "__float128 f(__float128 x) { return x * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, (__float128)3.0) > 0; }\n",
        ["float128_result.c:3:", "'f' is a __float128", "does not differentiate"],
    ),
    "vector_argument_and_result.c": (
        "typedef double v2 __attribute__((vector_size(16)));\nextern v2 __enzyme_autodiff(void*, ...);\n"
        "v2 f(v2 x) { return x * x; }\n"
        "int main(void) { v2 x = {1, 2}; v2 d = __enzyme_autodiff((void*)f, x); return d[0] != 2; }\n",
        ["vector_argument_and_result.c:4:", "vector of 2 double", "does not differentiate vector"],
    ),
    "vector_argument.c": (  # used to return a zero derivative, silently
        "typedef double v2 __attribute__((vector_size(16)));\nextern double __enzyme_autodiff(void*, ...);\n"
        "double f(v2 x) { return x[0] * x[1]; }\n"
        "int main(void) { v2 x = {1, 2}; return __enzyme_autodiff((void*)f, x) != 2; }\n",
        ["vector_argument.c:4:", "parameter 1 of 'f' is a vector of 2 double"],
    ),
    # (malloc through a function pointer in a global the program may change is now
    # differentiated: tests/c/memory/allocator_table_mutable.c)
    # issue 24 item 3: the complex-function rules know x86-64's double _Complex convention only
    "complex_other_signature.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "extern double cexp(double);  /* not <complex.h>'s */\n"
        "double f(double x) { return cexp(x) * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["complex_other_signature.c:3:", "'cexp' is called with a signature other than", "function 'f'"],
    ),
    # issue 24 item 1: __enzyme_virtualreverse makes the shadow of one function pointer
    "virtualreverse_form.c": (
        "extern void *__enzyme_virtualreverse(void *, ...);\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_virtualreverse((void *)f, 1.0) != 0; }\n",
        ["virtualreverse_form.c:3:", "'__enzyme_virtualreverse' takes one function or vtable pointer"],
    ),
    # the C library's sort and search of active data: named, with what to do instead
    # (the generic "define the function in the same file" said nothing useful here)
    "qsort_active.c": (
        "#include <stdlib.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "static int cmp(const void *a, const void *b) { return *(const double *)a > *(const double *)b; }\n"
        "double f(double *x) { qsort(x, 3, sizeof(double), cmp); return x[0] + 2 * x[1]; }\n"
        "int main(void) { double x[3] = {3, 1, 2}, d[3] = {0}; __enzyme_autodiff((void*)f, x, d); return 0; }\n",
        ["qsort_active.c:4:", "'qsort' of memory holding active data", "function 'f'",
         "sort an array of indices"],
    ),
    # session 31: doubles copied byte by byte (a hand-written memcpy over char) moved no
    # derivative at any level (the char loads and stores carry none): silent zeros
    "byte_copy_loop.c": (
        "#include <stddef.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "__attribute__((noinline)) static void copy(void *d, const void *s, size_t k) {\n"
        "  char *dd = d; const char *ss = s; while (k--) *dd++ = *ss++; }\n"
        "double f(double *x, int n) { double d[8]; copy(d, x, n * sizeof(double));\n"
        "  double r = 0; for (int i = 0; i < n; i++) r += d[i] * d[i]; return r; }\n"
        "int main(void) { double x[3] = {3, 1, 2}, dx[3] = {0}; __enzyme_autodiff((void*)f, x, dx, 3); return 0; }\n",
        ["byte_copy_loop.c:4:", "read and written in integer pieces", "function 'f'", "memcpy or memmove"],
    ),
    # and a double's sign flipped through its top byte: the derivative kept its sign
    "sign_byte_flip.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double *x, int n) { double a[4]; for (int i = 0; i < n; i++) a[i] = x[i] * x[i];\n"
        "  ((unsigned char *)&a[1])[7] ^= 0x80;\n"
        "  double s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }\n"
        "int main(void) { double x[3] = {3, 1, 2}, dx[3] = {0}; __enzyme_autodiff((void*)f, x, dx, 3); return 0; }\n",
        ["sign_byte_flip.c:3:", "in integer pieces", "function 'f'", "copysign"],
    ),
    # session 32: snprintf writes text over doubles with derivatives (a scratch buffer
    # reused for a label); their shadow stayed, and the doubles read back there had it
    # session 32: a copy of a run-time length starting inside a double (the high half of
    # y[0], then y[1..]): its adjoint walked doubles that straddle two, silently wrong
    "copy_from_inside_a_double.c": (
        "#include <string.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "double f(double *x, int n) { double y[8], z[8]; for (int i = 0; i < n; i++) { y[i] = x[i] * x[i]; z[i] = x[i]; }\n"
        "  memcpy((char *)z + 4, (char *)y + 4, 8 * (n / 2) + 4);\n"
        "  double s = 0; for (int i = 0; i < n; i++) s += z[i] * (i + 1); return s; }\n"
        "int main(void) { double x[7] = {1, 2, 3, 4, 5, 6, 7}, dx[7] = {0}; __enzyme_autodiff((void*)f, x, dx, 7); return 0; }\n",
        ["copy_from_inside_a_double.c:4:", "the copy starts inside a double", "function 'f'", "move whole values"],
    ),
    "snprintf_over_doubles.c": (
        "#include <stdio.h>\n#include <stdlib.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "__attribute__((noinline)) static void label(void *b, int k) { snprintf((char *)b, 32, \"?????????%d\", k); }\n"
        "double f(double *x, int n) { double *b = malloc(64), s = 0; for (int i = 0; i < n; i++) b[i] = x[i] * x[i];\n"
        "  for (int i = 0; i < n; i++) s += b[i]; label(b, n); s += b[0] * x[0]; free(b); return s; }\n"
        "int main(void) { double x[3] = {3, 1, 2}, dx[3] = {0}; __enzyme_autodiff((void*)f, x, dx, 3); return 0; }\n",
        ["snprintf_over_doubles.c:4:", "'snprintf' writes text into memory that holds derivatives",
         "function 'f'", "char array of its own"],
    ),
}

# issue 23 item 1: every unimplemented __enzyme_* function and enzyme_* marker by name
UNIMPLEMENTED_FUNCTIONS = ["__enzyme_todense",
                           "__enzyme_truncate_mem_func"]
UNIMPLEMENTED_MARKERS = ["enzyme_interleave",
                         "enzyme_nooverwrite", "enzyme_overwrite", "enzyme_nofree", "enzyme_runtime_activity"]


@pytest.mark.parametrize("name", UNIMPLEMENTED_FUNCTIONS)
def test_unimplemented_enzyme_function_is_refused(tmp_path, name):
    (tmp_path / "u.c").write_text(
        f"extern double {name}(void*, ...);\ndouble f(double x) {{ return x * x; }}\n"
        f"int main(void) {{ return {name}((void*)f, 1.0) > 0; }}\n")
    proc = run("zymase", ["cc", "-O0", "-g", "u.c", "-o", "exe"], cwd=tmp_path)
    one_error(proc, f"'{name}'", "u.c:3:", "function 'main'")
    assert not (tmp_path / "exe").exists()


@pytest.mark.parametrize("name", UNIMPLEMENTED_MARKERS)
def test_unimplemented_marker_is_refused(tmp_path, name):
    (tmp_path / "m.c").write_text(
        f"extern double __enzyme_autodiff(void*, ...);\nextern int {name};\n"
        "double f(double x) { return x * x; }\n"
        f"int main(void) {{ return __enzyme_autodiff((void*)f, {name}, 1.0) > 0; }}\n")
    proc = run("zymase", ["cc", "-O0", "-g", "m.c", "-o", "exe"], cwd=tmp_path)
    one_error(proc, f"marker '{name}' is not implemented", "m.c:4:")


@pytest.mark.parametrize("debug", [["-g"], []], ids=["g", "no-g"])
@pytest.mark.parametrize("name", sorted(C_CASES))
def test_c_errors(tmp_path, name, debug):
    # without -g the error names the source line too (zymase finds it with line tables)
    src, needles = C_CASES[name]
    (tmp_path / name).write_text(src)
    proc = run("zymase", ["cc", "-O2", *debug, name, "-o", "exe"], cwd=tmp_path)
    one_error(proc, *needles)
    assert not (tmp_path / "exe").exists()


PACKET_ABS = (
    "#include <emmintrin.h>\nextern void __enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
    "double f(const double *x) {\n"
    "  __m128d a = _mm_castsi128_pd(_mm_and_si128(_mm_loadu_si128((const __m128i *)x),"
    " _mm_set1_epi64x(0x7fffffffffffffffLL)));\n"
    "  return a[0] * a[1] * x[2]; }\n"
    "int main(void) { double x[3] = {1, -2, 3}, dx[3] = {0, 0, 0}; __enzyme_autodiff((void*)f, enzyme_dup, x, dx);"
    " return !(dx[0] == 6 && dx[1] == -3 && dx[2] == 2); }\n"
)


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_packet_abs_by_sign_mask(tmp_path, level):
    # session 33: Eigen's SSE abs() is an `and <2 x i64>` of the floats' bits with the sign
    # mask; the derivative was zero, silently. At -O1 and up it is made fabs before AD (the
    # integers loaded as floats, transforms/integer_copies); at -O0 the masked bits go
    # through a stack slot, and are refused
    (tmp_path / "packet_abs.c").write_text(PACKET_ABS)
    proc = run("zymase", ["cc", level, "packet_abs.c", "-o", "exe"], cwd=tmp_path)
    if level == "-O0":
        one_error(proc, "packet_abs.c:5:", "is loaded from memory holding derivatives")
        return
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run([str(tmp_path / "exe")], timeout=60).returncode == 0


def test_float_bits_merged_into_memory_without_a_shadow_are_refused(tmp_path):
    # at -O0 the pre-AD pipeline makes `v = 0; if (..) memcpy(&v, x, 8); memcpy(nw, &v, 8)`
    # a phi of an i64 load stored into nw, which has no shadow: nw[0] read back as a double
    # was taken as constant (d/dx0 0 for 2, silently)
    (tmp_path / "merged_bits.c").write_text(
        "#include <stdlib.h>\n#include <string.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "double f(double *x, int n) { double *nw = malloc(16); long long v = 0;\n"
        "  if (n > 3) memcpy(&v, x, 8);\n  memcpy(nw, &v, 8);\n"
        "  double r = nw[0] * 2 + x[1]; free(nw); return r; }\n"
        "int main(void) { double x[2] = {1, 2}, dx[2] = {0};\n"
        "  __enzyme_autodiff((void*)f, x, dx, 5); return dx[0] != 2; }\n")
    proc = run("zymase", ["cc", "-O0", "merged_bits.c", "-o", "exe"], cwd=tmp_path)
    one_error(proc, "merged_bits.c:6:", "copied through an integer variable", "function 'f'")


SPLIT_DOUBLES = {
    # session 31: a double's bits stored as an i8 and an i56 (what SROA makes of
    # std::vector<std::complex<double>>::insert of a variable at -O1), and read back that
    # way and reassembled: both gave zero derivatives at -O0 and -O1, silently
    "split_store.c": (
        "double f(double *x, int n) {\n  double out[8], s = 0;\n  for (int i = 0; i < n; i++) {\n"
        "    double d = x[i] * x[i];\n    memcpy((char *)&out[i], &d, 1);\n"
        "    memcpy((char *)&out[i] + 1, (char *)&d + 1, 7);\n  }\n"
        "  for (int i = 0; i < n; i++) s += out[i];\n  return s;\n}\n",
        ["split_store.c:7:", "stored to memory in pieces (as an i8 integer)", "function 'f'"]),
    "split_load.c": (
        "double f(double *x, int n) {\n  double s = 0;\n  for (int i = 0; i < n; i++) {\n    double d;\n"
        "    memcpy(&d, (char *)&x[i], 1);\n    memcpy((char *)&d + 1, (char *)&x[i] + 1, 7);\n"
        "    s += d * d;\n  }\n  return s;\n}\n",
        ["split_load.c:8:", "an i56 integer is loaded from memory holding derivatives", "function 'f'"]),
}


@pytest.mark.parametrize("name", sorted(SPLIT_DOUBLES))
def test_a_double_moved_in_pieces_is_refused(tmp_path, name):
    body, needles = SPLIT_DOUBLES[name]
    (tmp_path / name).write_text(
        "#include <string.h>\nextern void __enzyme_autodiff(void*, ...);\n" + body
        + "int main(void) { double x[3] = {1, 2, 3}, d[3] = {0}; __enzyme_autodiff((void*)f, x, d, 3); return 0; }\n")
    proc = run("zymase", ["cc", "-O1", name, "-o", "exe"], cwd=tmp_path)
    one_error(proc, *needles)
def test_double_copied_as_two_uint32_is_refused(tmp_path):
    # at -O0 each uint32_t copy becomes a 4-byte memcpy (transforms/integer_copies) of half
    # a double, whose reverse moved no adjoint: d/dx 0 (session 31); type analysis refuses
    # a copy of part of a float
    (tmp_path / "halves.c").write_text(
        "#include <stdint.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "double f(double *x, int n) { double d[8]; const uint32_t *s = (const uint32_t *)x;\n"
        "  uint32_t *t = (uint32_t *)d; for (int i = 0; i < 2 * n; i++) t[i] = s[i];\n"
        "  double r = 0; for (int i = 0; i < n; i++) r += d[i] * d[i]; return r; }\n"
        "int main(void) { double x[2] = {1, 2}, dx[2] = {0};\n"
        "  __enzyme_autodiff((void*)f, x, dx, 2); return dx[0] != 2; }\n")
    proc = run("zymase", ["cc", "-O0", "halves.c", "-o", "exe"], cwd=tmp_path)
    one_error(proc, "halves.c:4:", "part of a double", "function 'f'")


def test_char_field_copied_byte_by_byte_next_to_doubles_is_differentiated(tmp_path):
    # the byte-copy refusal must not catch a struct's char array copied by a loop at -O0
    # (its bytes have no type of their own; the struct's doubles are elsewhere)
    (tmp_path / "name.c").write_text(
        "extern double __enzyme_autodiff(void*, ...);\n"
        "typedef struct { double v; char name[8]; double w; } S;\n"
        "double f(double *x, int n) { S a, b; a.v = x[0]; a.w = x[1];\n"
        "  for (int k = 0; k < 8; k++) a.name[k] = (char)(k + n);\n"
        "  b.v = a.v; b.w = a.w * a.w; for (int k = 0; k < 8; k++) b.name[k] = a.name[k];\n"
        "  return b.v * b.w * b.name[3]; }\n"
        "int main(void) { double x[2] = {2, 3}, dx[2] = {0};\n"
        "  __enzyme_autodiff((void*)f, x, dx, 1);\n"
        "  return !(dx[0] == 9 * 4 && dx[1] == 2 * 2 * 3 * 4); }\n")
    proc = run("zymase", ["cc", "-O0", "name.c", "-o", "exe"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run([str(tmp_path / "exe")]).returncode == 0


def test_bsearch_of_active_data_is_refused_by_name(tmp_path):
    # at -O2 glibc's inline bsearch is compiled into f and differentiated; at -O0 it is
    # the library's, refused naming it (the generic "define the function in the same
    # file" said nothing useful about a library function)
    name = "bsearch_active.c"
    (tmp_path / name).write_text(
        "#include <stdlib.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "static int cmp(const void *a, const void *b) { return *(const double *)a > *(const double *)b; }\n"
        "double f(double *x, int n, double k) { double *p = bsearch(&k, x, n, sizeof(double), cmp); return p ? *p : 0; }\n"
        "int main(void) { double x[3] = {1, 2, 3}, d[3] = {0}; __enzyme_autodiff((void*)f, x, d, 3, 2.0); return 0; }\n")
    proc = run("zymase", ["cc", "-O0", name, "-o", "exe"], cwd=tmp_path)
    one_error(proc, "bsearch_active.c:4:", "'bsearch' in memory holding active data", "function 'f'",
              "search for the index with a loop")
    assert not (tmp_path / "exe").exists()


def test_c_compile_errors_are_shown_as_clang_shows_them(tmp_path):
    # issue 23 item 4: every error with its line and caret, not one re-wrapped line
    (tmp_path / "syntax.c").write_text("int main(void) {\n  int a = c;\n  return b;\n}\n")
    proc = run("zymase", ["cc", "-O2", "syntax.c", "-o", "exe"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    err = proc.stderr
    assert "Traceback" not in err and "zymase: error:" not in err and "hint:" not in err, err
    assert "syntax.c:2:11: error: use of undeclared identifier 'c'" in err, err
    assert "syntax.c:3:10: error: use of undeclared identifier 'b'" in err, err
    assert "    2 |   int a = c;" in err and "^" in err, err
    assert not (tmp_path / "exe").exists()


def test_clang_driver_error_is_one_line(tmp_path):
    (tmp_path / "a.c").write_text("int main(void) { return 0; }\n")
    one_error(run("zymase", ["cc", "-fno-such-flag-at-all", "a.c"], cwd=tmp_path), "-fno-such-flag-at-all")


def test_missing_input(tmp_path):
    one_error(run("zymase", ["cc", "nope.c"], cwd=tmp_path), "no such file")


def test_malformed_llvm_ir(tmp_path):
    (tmp_path / "bad.ll").write_text("define i32 @f( {\n")
    one_error(run("zymase", ["opt", "bad.ll"], cwd=tmp_path), "bad.ll", "malformed LLVM IR")


def test_no_clang(tmp_path):
    (tmp_path / "a.c").write_text("int main(void) { return 0; }\n")
    env = dict(os.environ, PATH=str(tmp_path / "empty"), ZYMASE_CLANG="")
    env.pop("ZYMASE_CLANG")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys\nimport zymase.llvm.toolchain as t\nt._ziglang_available = lambda: False\n"
         "from zymase.cli import main\nsys.exit(main(['cc', 'a.c']))"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    one_error(proc, "no clang")


@pytest.mark.parametrize(
    "text,needles",
    [
        ("func.func @f( {", ["<stdin>:1:15", "cannot parse MLIR"]),
        (
            'func.func @g(%x: f64) -> f64 {\n  %y = math.sin %x : f64\n  func.return %y : f64\n}\n'
            'func.func @d(%x: f64) -> f64 {\n  %r = enzyme.autodiff @nope(%x, %x) {activity = '
            '[#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} '
            ": (f64, f64) -> f64\n  func.return %r : f64\n}\n",
            ["no function named 'nope'", "enzyme.autodiff @nope", "'d'"],
        ),
        (
            # (math.rsqrt, which had no rule, until session 32)
            'func.func @g(%x: f64) -> f64 {\n  %b = arith.bitcast %x : f64 to i64\n'
            '  %y = arith.bitcast %b : i64 to f64\n  func.return %y : f64\n}\n'
            'func.func @d(%x: f64) -> f64 {\n  %r = enzyme.autodiff @g(%x, %x) {activity = '
            '[#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} '
            ": (f64, f64) -> f64\n  func.return %r : f64\n}\n",
            ["'arith.bitcast' makes a float from the bits of an active float", "function 'g'"],
        ),
        (
            'func.func @g(%x: f64) -> f64 {\n  %y = "test.unknown_float"(%x) : (f64) -> f64\n'
            "  func.return %y : f64\n}\n",
            ["cannot parse MLIR"],
        ),
    ],
)
def test_mlir_errors(text, needles):
    one_error(run("zymase-opt", ["-p", "enzyme"], stdin=text), *needles)


def test_unknown_pass():
    one_error(run("zymase-opt", ["-p", "frobnicate"], stdin="builtin.module {}\n"), "unknown pass 'frobnicate'")


# ----------------------------------------------- issue 23 item 4: bad files, usage


def test_opt_on_binary_garbage(tmp_path):
    (tmp_path / "junk.ll").write_bytes(bytes(range(256)) * 4)
    one_error(run("zymase", ["opt", "junk.ll"], cwd=tmp_path), "'junk.ll' is not a text file")


def test_opt_on_llvm_bitcode(tmp_path):
    (tmp_path / "a.bc").write_bytes(b"BC\xc0\xde" + bytes(range(200)))
    one_error(run("zymase", ["opt", "a.bc"], cwd=tmp_path), "'a.bc' is LLVM bitcode", "llvm-dis")


def test_opt_on_a_directory(tmp_path):
    (tmp_path / "d").mkdir()
    one_error(run("zymase", ["opt", "d"], cwd=tmp_path), "'d' is a directory")


def test_cc_on_a_directory(tmp_path):
    (tmp_path / "d.c").mkdir()
    one_error(run("zymase", ["cc", "d.c"], cwd=tmp_path), "'d.c' is a directory")


def test_opt_output_to_missing_directory(tmp_path):
    (tmp_path / "a.ll").write_text("define double @f(double %x) {\n  ret double %x\n}\n")
    one_error(run("zymase", ["opt", "a.ll", "-o", "no/such/dir/out.ll"], cwd=tmp_path), "cannot write 'no/such/dir/out.ll'")


def test_cc_emit_llvm_to_missing_directory(tmp_path):
    (tmp_path / "a.c").write_text("int main(void) { return 0; }\n")
    one_error(run("zymase", ["cc", "-S", "-emit-llvm", "a.c", "-o", "no/dir/a.ll"], cwd=tmp_path),
              "cannot write 'no/dir/a.ll'")


@pytest.mark.parametrize("args,needle", [
    (["junk.ll"], "is not a text file"),
    (["d"], "is a directory"),
    (["ok.mlir", "-o", "no/dir/x.mlir"], "cannot write"),
])
def test_zymase_opt_bad_files(tmp_path, args, needle):
    (tmp_path / "junk.ll").write_bytes(b"\xff\xfe\x00garbage\x80")
    (tmp_path / "d").mkdir()
    (tmp_path / "ok.mlir").write_text("builtin.module {}\n")
    one_error(run("zymase-opt", args, cwd=tmp_path), needle)


def test_opt_binary_stdin():
    proc = subprocess.run([*_cli("zymase"), "opt", "-"], input=b"\xff\xfe\x80garbage", capture_output=True)
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count(b"zymase: error:") == 1 and b"not text" in proc.stderr


@pytest.mark.parametrize("cmd,needle", [("cc", "usage: zymase cc"), ("run", "usage: zymase run"),
                                        ("opt", "usage: zymase opt"), ("demo", "usage: zymase demo")])
def test_subcommand_help(cmd, needle):
    for flag in ("--help", "-h"):
        proc = run("zymase", [cmd, flag])
        assert proc.returncode == 0 and proc.stdout.startswith(needle), (proc.stdout, proc.stderr)


def test_version():
    from zymase import __version__

    proc = run("zymase", ["--version"])
    assert proc.returncode == 0 and proc.stdout.strip() == f"zymase {__version__}", proc.stdout


def test_opt_dash_O_space_level_on_clang_optimized_ir(tmp_path):
    """`zymase opt in.ll -O 2` (the spelling of its help) on IR from clang -O2, which
    writes `local_unnamed_addr` on the marker declarations (issue 23 items 3, 4); the
    derivative is run and checked."""
    from zymase.llvm import toolchain

    (tmp_path / "sq.c").write_text(
        "extern double __enzyme_autodiff(void*, ...);\n"
        "static double f(double x) { return x * x * x; }\n"
        "int main(int argc, char **argv) { (void)argv;\n"
        "  double d = __enzyme_autodiff((void*)f, 1.0 + argc);\n"
        "  return d == 12.0 ? 0 : 1; }\n")
    clang = toolchain.find_clang().argv
    subprocess.run([*clang, "-S", "-emit-llvm", "-O2", "sq.c", "-o", "sq.ll"], cwd=tmp_path, check=True)
    assert "local_unnamed_addr" in (tmp_path / "sq.ll").read_text()
    proc = run("zymase", ["opt", "sq.ll", "-O", "2", "-o", "out.ll"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    toolchain.emit_object((tmp_path / "out.ll").read_text(), tmp_path / "out.o")
    toolchain.link([tmp_path / "out.o"], tmp_path / "exe")
    assert subprocess.run([str(tmp_path / "exe")]).returncode == 0


def test_opt_leaves_functions_no_derivative_reaches_as_they_are(tmp_path):
    """Session 32: `zymase opt` read the whole module, so a construct the reader refuses
    in a function no derivative reaches (inline assembly then, `asm goto` since session
    33) stopped it; like `zymase cc` it now imports only the differentiated part
    (llvm/reachable)."""
    from zymase.llvm import toolchain

    (tmp_path / "ticks.c").write_text(
        "extern double __enzyme_autodiff(void*, ...);\n"
        "int jumps(int k) { __asm__ goto(\"\" :::: out); return k; out: return -k; }\n"
        "static double f(double x) { return x * x * x; }\n"
        "int main(int argc, char **argv) { (void)argv;\n"
        "  return __enzyme_autodiff((void*)f, 1.0 + argc) == 12.0 ? 0 : 1; }\n")
    clang = toolchain.find_clang().argv
    subprocess.run([*clang, "-S", "-emit-llvm", "-O2", "ticks.c", "-o", "ticks.ll"], cwd=tmp_path, check=True)
    proc = run("zymase", ["opt", "ticks.ll", "-O2", "-o", "out.ll"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "callbr" in (tmp_path / "out.ll").read_text()
    toolchain.emit_object((tmp_path / "out.ll").read_text(), tmp_path / "out.o")
    toolchain.link([tmp_path / "out.o"], tmp_path / "exe")
    assert subprocess.run([str(tmp_path / "exe")]).returncode == 0


@pytest.mark.parametrize("mode", ["__enzyme_autodiff", "__enzyme_fwddiff"])
def test_all_integer_function_warns_once_that_derivatives_are_zero(tmp_path, mode):
    # issue 23 item 4: no active path; the derivative is zero (correct) but surely not meant
    (tmp_path / "ints.c").write_text(
        f"extern int {mode}(void*, ...);\nint f(int a, int b) {{ return a * b; }}\n"
        f"int main(void) {{ return {mode}((void*)f, 3, 4); }}\n")
    proc = run("zymase", ["cc", "-O2", "-g", "ints.c", "-o", "exe"], cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    warnings = [l for l in proc.stderr.splitlines() if l.startswith("zymase: warning:")]
    assert len(warnings) == 1 and "ints.c:3:" in warnings[0] and "'f' has no active argument" in warnings[0]
    assert "every derivative" in warnings[0] and "zero" in warnings[0], warnings
    assert subprocess.run([str(tmp_path / "exe")]).returncode == 0  # the derivative is 0


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_float_bits_changed_in_memory_are_refused(tmp_path, level):
    # issue 23: the union stays in memory without pre-AD optimization; its double's bits are
    # loaded as an integer, incremented and stored back (the value read back is the next
    # double: derivative 2, not the 0 or the stale 2 of the float's old shadow)
    (tmp_path / "up.c").write_text(
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double up(double x) {\n  union { double d; long long i; } u = { x };\n  u.i += 1;\n"
        "  return u.d * 2.0;\n}\n"
        "int main(void) { return __enzyme_autodiff((void*)up, 3.0) > 0; }\n")
    proc = run("zymase", ["cc", level, "--no-preopt", "up.c", "-o", "exe"], cwd=tmp_path)
    one_error(proc, "up.c:4:", "bits of a float in memory", "function 'up'")
    assert not (tmp_path / "exe").exists()


# session 33: an address kept as an integer in a stack slot that is read back as a pointer
# (no inttoptr: a union, an integer stored over a pointer variable). Without pre-AD
# optimization the slot stays in memory; the pointer loaded from it had no shadow and the
# gradient was wrong, silently (Eigen's Transpose object at -O2 met it with lifetime markers)
SLOT_AS_POINTER = {
    "union": ("union { uintptr_t i; double *p; } u; u.i = (uintptr_t)x;\n  double *q = u.p;", "slot.c:5:"),
    "over_pointer": ("double *q = x;\n  *(uintptr_t *)&q = (uintptr_t)(x + 1);", "slot.c:6:"),
}


@pytest.mark.parametrize(("name", "level"), [("union", "-O0"), ("union", "-O2"), ("over_pointer", "-O0")])
def test_integer_address_read_back_as_pointer_is_refused(tmp_path, name, level):
    # at -O2 the slot has lifetime markers (allowed since session 33: the integer loads
    # are followed); the pointer load from it must still be refused
    body, line = SLOT_AS_POINTER[name]
    (tmp_path / "slot.c").write_text(
        "#include <stdint.h>\nextern void __enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
        f"double f(double *x) {{\n  {body}\n  return q[0] * x[0];\n}}\n"
        "int main(void) { double x[2] = {2, 3}, dx[2] = {0, 0}; __enzyme_autodiff((void*)f, enzyme_dup, x, dx);"
        " return 0; }\n")
    proc = run("zymase", ["cc", level, "--no-preopt", "slot.c", "-o", "exe"], cwd=tmp_path)
    one_error(proc, line, "handed on as an integer", "read back as a pointer", "function 'f'", "uintptr_t")
    assert not (tmp_path / "exe").exists()


# issue 26 item 5: a LAPACK routine without a rule, or a call whose arguments (and so its
# matrix sizes) the rule cannot read, is one error naming the routine and the argument
LAPACK_CASES = {
    "no_rule": (
        "void dgeev_(const char *, const char *, const int *, double *, const int *, double *, double *,\n"
        "            double *, const int *, double *, const int *, double *, const int *, int *);\n",
        "double w[4], wi[4], work[64]; int lw = 64, info, one = 1;\n"
        "    dgeev_(\"N\", \"N\", &n, A, &n, w, wi, 0, &one, 0, &one, work, &lw, &info);\n",
        ["no derivative rule for the BLAS/LAPACK routine 'dgeev_'", "getrf", "syevd"],
    ),
    "no_rule_svd": (
        "void dgesvd_(const char *, const char *, const int *, const int *, double *, const int *, double *,\n"
        "             double *, const int *, double *, const int *, double *, const int *, int *);\n",
        "double s[4], u[16], vt[16], work[256]; int lw = 256, info;\n"
        "    dgesvd_(\"S\", \"S\", &n, &n, A, &n, s, u, &n, vt, &n, work, &lw, &info);\n",
        ["no derivative rule for the BLAS/LAPACK routine 'dgesvd_'", "gesdd"],
    ),
    "by_value": (
        "void dgetrf_(int, int, double *, int, int *, int *);\n",
        "int ipiv[4], info;\n    dgetrf_(n, n, A, n, ipiv, &info);\n",
        ["the call to the LAPACK routine 'dgetrf_' passes m as i32", "every argument by pointer"],
    ),
    "missing_argument": (
        "void dsyev_(const char *, const char *, const int *, double *, const int *, double *, double *,\n"
        "            const int *);\n",
        "double w[4], work[64]; int lw = 64;\n    dsyev_(\"V\", \"L\", &n, A, &n, w, work, &lw);\n",
        ["'dsyev_' has 8 arguments, where 9 are expected (info missing)"],
    ),
}


@pytest.mark.parametrize("name", sorted(LAPACK_CASES))
def test_lapack_call_without_rule_or_readable_arguments_is_refused(tmp_path, name):
    declaration, call, needles = LAPACK_CASES[name]
    (tmp_path / "la.c").write_text(
        "extern void __enzyme_autodiff(void *, ...);\nextern int enzyme_dup;\n" + declaration
        + "void f(double *A, int n) {\n    " + call + "}\n"
        "double A[16], dA[16];\n"
        "int main(void) { __enzyme_autodiff((void *)f, enzyme_dup, A, dA, 4); return 0; }\n")
    proc = run("zymase", ["cc", "-O0", "-g", "la.c", "-o", "exe", "-lopenblas"], cwd=tmp_path)
    line = one_error(proc, *needles, "function 'f'")
    assert "la.c:" in line, line
    assert not (tmp_path / "exe").exists()


PARTIAL_COPY = r"""
#include <stdio.h>
#include <string.h>
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;
static double f(double *x, int n, int extra) {
    double y[8], z[8];
    for (int i = 0; i < n; i++) { y[i] = x[i] * x[i]; z[i] = 3.0 * x[i]; }
    memcpy(z, y, 8 * (size_t)(n / 2) + extra);
    double s = 0;
    for (int i = 0; i < n; i++) s += z[i] * (i + 1);
    return s;
}
int main(int argc, char **argv) {
    double x[7] = {1, 2, 3, 4, 5, 6, 7}, dx[7] = {0}, t[7] = {0, 0, 0, 1, 0, 0, 0};
    int extra = argc > 2 ? 4 : 0;
    double d = 0;
    if (argv[1][0] == 'r')
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 7, enzyme_const, extra);
    else
        d = __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, 7, enzyme_const, extra);
    printf("%g %g\n", dx[3], d);  /* whole doubles: d/dx3 = 3 * 4 (z[3] is not copied) */
    return 0;
}
"""


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_a_copy_of_part_of_a_double_at_run_time_is_a_clear_error(tmp_path, level):
    # session 32: memcpy of 8 * k + 4 bytes of doubles (a length known only at run time):
    # the adjoint moved whole doubles and dropped the rest, forward mode copied the
    # tangents' bytes; now the derivative stops with one zymase line where it runs
    import signal

    (tmp_path / "partial.c").write_text(PARTIAL_COPY)
    build = run("zymase", ["cc", level, "-g", "partial.c", "-o", "exe"], cwd=tmp_path)
    assert build.returncode == 0, build.stderr
    for mode, want in (("r", "12 0"), ("f", "0 12")):
        whole = subprocess.run([str(tmp_path / "exe"), mode], capture_output=True, text=True, timeout=60)
        assert whole.returncode == 0 and whole.stdout.split() == want.split(), (whole.stdout, whole.stderr)
        part = subprocess.run([str(tmp_path / "exe"), mode, "part"], capture_output=True, text=True, timeout=60)
        assert part.returncode == -signal.SIGABRT, (part.returncode, part.stdout, part.stderr)
        line = part.stderr.strip()
        assert line.count("\n") == 0 and line.startswith("zymase: error: partial.c:10:"), line
        assert "not a whole number of the 8-byte double values" in line and "function 'f'" in line, line
        assert "hint: copy whole values" in line, line
