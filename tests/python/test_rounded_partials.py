"""Partials that are rounded sums, read behind ``llvm.arithmetic.fence`` where an adjoint sum's
``reassoc`` could reach into them (autodiff/rounded_partials): the njit path emits the same
adjoint sums as C (tests/c/reassociated_partials.c checks the values there), and where the
adjoint it meets varies per iteration the fence is ``llvm.canonicalize`` until LLVM has
optimized, so that reverse loops still vectorize (the C programs check values, this the IR
before and after LLVM optimizes it)."""

from __future__ import annotations

import re

import numba

import zymase
from zymase.frontends.c import Timings, differentiate_llvm_ir
from zymase.llvm import toolchain


@numba.njit
def _weight(w, x, y):
    return w * (x - y) + w * y


def test_njit_weight_keeps_the_rounding_of_its_difference():
    # d/dw = (x - y) + y, rounded as written: 0 (x - y rounds to -y); 1 when the adjoint sum
    # reassociated into x - y (session 35)
    assert zymase.grad(_weight, argnums=0)(2.0, 1.0, 1e17) == 0.0
    assert zymase.grad(_weight, argnums=0)(2.0, 3.0, 2.0**60) == 0.0


PROGRAM = r"""
double seeded(double w, const double *x, const double *y, int n) {
    double s = 0;
    for (int i = 0; i < n; i++)
        s += w * (x[i] - y[i]);
    return s;
}
void per_element(const double *w, const double *x, const double *y, double *out, int n) {
    for (int i = 0; i < n; i++)
        out[i] = w[i] * (x[i] - y[i]);
}
void factored(const double *w, const double *x, const double *y, double *out, int n) {
    for (int i = 0; i < n; i++)
        out[i] = w[i] * (x[i] - y[i]) + w[i] * (x[i] + y[i]);
}
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const, enzyme_dupnoneed;
double g1(double w, const double *x, const double *y, int n) {
    return __enzyme_autodiff((void *)seeded, w, enzyme_const, x, enzyme_const, y, n);
}
void g2(const double *w, double *dw, const double *x, const double *y, double *o, double *d, int n) {
    __enzyme_autodiff((void *)per_element, enzyme_dup, w, dw, enzyme_const, x, enzyme_const, y,
                      enzyme_dupnoneed, o, d, n);
}
void g3(const double *w, double *dw, const double *x, const double *y, double *o, double *d, int n) {
    __enzyme_autodiff((void *)factored, enzyme_dup, w, dw, enzyme_const, x, enzyme_const, y,
                      enzyme_dupnoneed, o, d, n);
}
"""


def _fences(tmp_path) -> dict[str, int]:
    """The number of arithmetic fences and of canonicalize calls in each derivative, before
    LLVM optimizes it."""
    src = tmp_path / "partials.c"
    src.write_text(PROGRAM)
    ll = differentiate_llvm_ir(toolchain.c_to_llvm_ir(src, [], 2), str(src), 2, Timings())
    texts = re.split(r"^define ", ll, flags=re.M)[1:]
    names = [re.match(r"[^@]*@([\w.]+)\(", t).group(1) for t in texts]
    return {n: (t.count("call double @llvm.arithmetic.fence.f64"), t.count("call double @llvm.canonicalize.f64"))
            for n, t in zip(names, texts) if "diffe" in n}


def test_rounded_partials_are_read_behind_canonicalize(tmp_path):
    barriers = _fences(tmp_path)
    [seeded] = [c for n, c in barriers.items() if n.endswith("seeded")]
    [per_element] = [c for n, c in barriers.items() if n.endswith("per_element")]
    [factored] = [c for n, c in barriers.items() if n.endswith("factored")]
    # every partial that is x[i] - y[i] is read behind canonicalize, whatever it multiplies:
    # the seed's 1, dout[i] (which folds all the same where LLVM unrolls the loop fully:
    # tests/c/memory/unrolled_partials.c), or dout[i] shared by two terms; none behind the
    # fence, which would keep the reverse loops scalar (differentiate_llvm_ir's module is
    # optimized by zymase's LLVM next: toolchain.optimize)
    assert seeded == (0, 1), barriers
    assert per_element == (0, 1), barriers
    assert factored == (0, 2), barriers


def test_barriers_become_fences_after_the_pipeline(tmp_path):
    # toolchain.optimize: what leaves zymase calls no canonicalize of the reverse sweep's
    # (a clang before 21 cannot generate code for it on x86); at -O0 too, and in `zymase opt`
    # without -O, whose derivative is not optimized
    src = tmp_path / "partials.c"
    src.write_text(PROGRAM)
    ll = differentiate_llvm_ir(toolchain.c_to_llvm_ir(src, [], 2), str(src), 2, Timings())
    assert "@llvm.canonicalize.f64" in ll
    for level in (0, 2):
        out = toolchain.optimize(ll, level)
        assert "canonicalize" not in out and "@llvm.arithmetic.fence." in out
    ir = tmp_path / "partials.ll"
    ir.write_text(toolchain.c_to_llvm_ir(src, [], 2))
    from zymase.cli import main

    assert main(["opt", str(ir), "-o", str(tmp_path / "out.ll")]) == 0
    out = (tmp_path / "out.ll").read_text()
    assert "canonicalize" not in out and "@llvm.arithmetic.fence." in out


def test_a_type_fenced_and_barred_keeps_one_declaration():
    text = """define double @f(double %x, double %y) {
  %a = call double @llvm.arithmetic.fence.f64(double %x)
  %b = call double @llvm.canonicalize.f64(double %y)
  %s = fadd double %a, %b
  ret double %s
}
declare double @llvm.arithmetic.fence.f64(double)
declare double @llvm.canonicalize.f64(double)
"""
    out = toolchain.barriers_to_fences(text)
    assert out.count("declare double @llvm.arithmetic.fence.f64") == 1 and "canonicalize" not in out
    toolchain.optimize(out, 2)  # (parses and verifies)


@numba.njit
def _two_sum_weights(w, v, u, a, b):
    # TwoSum: s + e = a + b exactly; w weights the error term e, v the sum, u two of its parts
    s = a + b
    bb = s - a
    t = s - bb
    eb = b - bb
    e = (a - t) + eb
    return w * e + v * s + (u * t - u * eb)


def _two_sum_parts(a, b):
    s = a + b
    bb = s - a
    t = s - bb
    eb = b - bb
    return (a - t) + eb, s, t - eb


def test_njit_two_sum_error_term_is_an_exact_weight():
    # compared with ==: a tolerance near 1 cannot see e (about 1e-17) replaced by 0. d/du = t - eb
    # came out t - eb reassociated (an ulp off at a = 1/3, b = 0.1) before session 35
    grad = zymase.grad(_two_sum_weights, argnums=(0, 1, 2))
    for a, b in [(1.0, 1e-17), (1 / 3, 0.1), (-2.5, 0.3)]:
        e, s, parts = _two_sum_parts(a, b)
        assert e != 0.0
        assert tuple(grad(2.0, 3.0, 5.0, a, b)) == (e, s, parts)
        for tangent, want in [((1.0, 0.0, 0.0), e), ((0.0, 1.0, 0.0), s), ((0.0, 0.0, 1.0), parts)]:
            _, got = zymase.jvp(_two_sum_weights, (2.0, 3.0, 5.0, a, b), (*tangent, None, None))
            assert got == want
