"""The derivative of an op carries the op's fast-math flags (autodiff.flavor.derivative_flags):
code under ``#pragma clang fp reassociate(on)`` gets adjoint products with ``reassoc nsz``
(LLVM reassociates only ops with both), and code without flags gets plain arithmetic. The
values are checked by tests/c/memory/reassoc_pragma_adjoints.c; this checks the IR before
LLVM optimizes it (the MLIR flavor: tests/mlir/filecheck/fastmath_derivatives.mlir)."""

from __future__ import annotations

import re

from zymase.frontends.c import Timings, differentiate_llvm_ir
from zymase.llvm import toolchain

PROGRAM = r"""
double order_free(const double *restrict x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
#pragma clang fp reassociate(on)
        s += x[i] * x[i] * x[i];
    }
    return s;
}
double ordered(const double *restrict x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i] * x[i];
    return s;
}
extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;
void g1(const double *x, double *dx, int n) { __enzyme_autodiff((void *)order_free, enzyme_dup, x, dx, enzyme_const, n); }
void g2(const double *x, double *dx, int n) { __enzyme_autodiff((void *)ordered, enzyme_dup, x, dx, enzyme_const, n); }
double t1(const double *x, const double *tx, int n) { return __enzyme_fwddiff((void *)order_free, enzyme_dup, x, tx, enzyme_const, n); }
double t2(const double *x, const double *tx, int n) { return __enzyme_fwddiff((void *)ordered, enzyme_dup, x, tx, enzyme_const, n); }
"""


def _derivatives(tmp_path) -> dict[str, str]:
    src = tmp_path / "fm.c"
    src.write_text(PROGRAM)
    ll = differentiate_llvm_ir(toolchain.c_to_llvm_ir(src, [], 2), str(src), 2, Timings())
    bodies = re.findall(r"^define [^@]*@(\w+)\(.*?^}", ll, re.M | re.S)
    texts = re.split(r"^define ", ll, flags=re.M)[1:]
    return {name: text for name, text in zip(bodies, texts)}


def _fmul_flags(body: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"= fmul ([a-z ]*?)\s*(?:double|<)", body)]


def test_adjoints_of_order_free_code_may_be_reassociated(tmp_path):
    fns = _derivatives(tmp_path)
    [rev] = [t for n, t in fns.items() if n.startswith("diffe") and "order_free" in n]
    flags = _fmul_flags(rev)
    # primal products: reassoc; the adjoint products: reassoc nsz
    assert "reassoc nsz" in flags, flags
    assert all(f in ("reassoc", "reassoc nsz") for f in flags), flags


def test_adjoints_of_ordered_code_stay_plain(tmp_path):
    fns = _derivatives(tmp_path)
    [rev] = [t for n, t in fns.items() if n.startswith("diffe") and n.endswith("ordered")]
    flags = _fmul_flags(rev)
    assert flags and all(f == "" for f in flags), flags


def test_tangents_carry_the_flags_too(tmp_path):
    fns = _derivatives(tmp_path)
    [fwd] = [t for n, t in fns.items() if n.startswith("fwddiffe") and "order_free" in n]
    [plain] = [t for n, t in fns.items() if n.startswith("fwddiffe") and n.endswith("ordered")]
    assert "reassoc nsz" in _fmul_flags(fwd)
    assert all(f == "" for f in _fmul_flags(plain))


NORMALIZE = r"""
#include <math.h>
__attribute__((noinline)) static double mag(const double *restrict x, int n) {
#pragma clang fp reassociate(on)
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}
double objective(const double *restrict in, double *restrict out, const double *restrict w, int n) {
#pragma clang fp reassociate(on)
    for (int i = 0; i < n; i++)
        out[i] = in[i] / mag(in, n);
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += w[i] * out[i];
    return s;
}
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_dupnoneed, enzyme_const;
void grad(const double *in, double *din, double *out, double *dout, const double *w, int n) {
    __enzyme_autodiff((void *)objective, enzyme_dup, in, din, enzyme_dupnoneed, out, dout, enzyme_const, w,
                      enzyme_const, n);
}
"""


def test_divisions_keep_their_reciprocal_out_of_the_loop(tmp_path):
    """With ``reassoc`` on the adjoint's division, LLVM turned ``(dy / (2 |x|)) * x_i`` into
    ``(dy * x_i) / (2 |x|)``: a division per element instead of one before the loop."""
    src = tmp_path / "normalize.c"
    src.write_text(NORMALIZE)
    ll = toolchain.optimize(
        differentiate_llvm_ir(toolchain.c_to_llvm_ir(src, ["-fno-math-errno"], 2), str(src), 2, Timings()), 2
    )
    body = ll[ll.index("@grad(") :]
    body = body[: body.index("\n}\n")]
    assert "fdiv" in body
    assert not re.search(r"fdiv [a-z ]*<\d+ x double>", body), "a division per element in the gradient"
