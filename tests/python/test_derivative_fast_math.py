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
