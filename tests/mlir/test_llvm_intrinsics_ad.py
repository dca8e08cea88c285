"""Issue 28 item 5, ``llvm.intr.*`` math intrinsics (sqrt, exp, log, sin, cos, pow,
fabs, fma, maxnum, minnum, powi, log10, fmuladd, exp2, log2) and ``llvm.intr.memcpy``
in llvm-dialect functions, differentiated through ``zymase.mlir.compile`` in both
modes: the math against central finite differences, the memcpy against its closed
form (the copy's adjoint flows back to the source's shadow)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import zymase.mlir


def A(name: str) -> str:
    return f"#enzyme<activity enzyme_{name}>"


TEXT = f"""
llvm.func @m(%x: f64, %y: f64) -> f64 {{
  %s = llvm.intr.sqrt(%x) : (f64) -> f64
  %e = llvm.intr.exp(%y) : (f64) -> f64
  %l = llvm.intr.log(%x) : (f64) -> f64
  %sn = llvm.intr.sin(%y) : (f64) -> f64
  %cs = llvm.intr.cos(%x) : (f64) -> f64
  %p = llvm.intr.pow(%x, %y) : (f64, f64) -> f64
  %ny = llvm.fneg %y : f64
  %ab = llvm.intr.fabs(%ny) : (f64) -> f64
  %f = llvm.intr.fma(%s, %e, %l) : (f64, f64, f64) -> f64
  %mx = llvm.intr.maxnum(%sn, %cs) : (f64, f64) -> f64
  %mn = llvm.intr.minnum(%p, %ab) : (f64, f64) -> f64
  %three = llvm.mlir.constant(3 : i32) : i32
  %pi = llvm.intr.powi(%x, %three) : (f64, i32) -> f64
  %lt = llvm.intr.log10(%y) : (f64) -> f64
  %fm = llvm.intr.fmuladd(%pi, %lt, %mx) : (f64, f64, f64) -> f64
  %e2 = llvm.intr.exp2(%x) {{fastmathFlags = #llvm.fastmath<contract>}} : (f64) -> f64
  %l2 = llvm.intr.log2(%y) : (f64) -> f64
  %a1 = llvm.fadd %f, %mn : f64
  %a2 = llvm.fadd %a1, %fm : f64
  %a3 = llvm.fmul %e2, %l2 : f64
  %a4 = llvm.fadd %a2, %a3 : f64
  llvm.return %a4 : f64
}}
llvm.func @cp(%src: !llvm.ptr, %dst: !llvm.ptr, %n: i64) -> f64 {{
  %eight = llvm.mlir.constant(8 : i64) : i64
  %bytes = llvm.mul %n, %eight : i64
  "llvm.intr.memcpy"(%dst, %src, %bytes) <{{isVolatile = false}}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
  %one = llvm.mlir.constant(1 : i64) : i64
  %p1 = llvm.getelementptr %dst[%one] : (!llvm.ptr, i64) -> !llvm.ptr, f64
  %a = llvm.load %dst : !llvm.ptr -> f64
  %b = llvm.load %p1 : !llvm.ptr -> f64
  %ab = llvm.fmul %a, %b : f64
  %s = llvm.intr.sin(%ab) : (f64) -> f64
  llvm.store %s, %p1 : f64, !llvm.ptr
  llvm.return %ab : f64
}}
func.func @pm(%x: f64, %y: f64) -> f64 {{
  %r = llvm.call @m(%x, %y) : (f64, f64) -> f64
  return %r : f64
}}
func.func @rev_m(%x: f64, %y: f64) -> (f64, f64) {{
  %one = arith.constant 1.0 : f64
  %r:2 = enzyme.autodiff @m(%x, %y, %one) {{activity = [{A('active')}, {A('active')}], ret_activity = [{A('activenoneed')}]}} : (f64, f64, f64) -> (f64, f64)
  return %r#0, %r#1 : f64, f64
}}
func.func @fwd_m(%x: f64, %dx: f64, %y: f64, %dy: f64) -> f64 {{
  %r = enzyme.fwddiff @m(%x, %dx, %y, %dy) {{activity = [{A('dup')}, {A('dup')}], ret_activity = [{A('dupnoneed')}]}} : (f64, f64, f64, f64) -> f64
  return %r : f64
}}
func.func @rev_cp(%s: !llvm.ptr, %ds: !llvm.ptr, %d: !llvm.ptr, %dd: !llvm.ptr, %n: i64) -> f64 {{
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @cp(%s, %ds, %d, %dd, %n, %one) {{activity = [{A('dup')}, {A('dup')}, {A('const')}], ret_activity = [{A('active')}]}} : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, f64) -> f64
  return %r : f64
}}
func.func @fwd_cp(%s: !llvm.ptr, %ds: !llvm.ptr, %d: !llvm.ptr, %dd: !llvm.ptr, %n: i64) -> f64 {{
  %r = enzyme.fwddiff @cp(%s, %ds, %d, %dd, %n) {{activity = [{A('dup')}, {A('dup')}, {A('const')}], ret_activity = [{A('dupnoneed')}]}} : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> f64
  return %r : f64
}}
"""


def M(x, y):
    f = math.sqrt(x) * math.exp(y) + math.log(x)
    mx = max(math.sin(y), math.cos(x))
    mn = min(x ** y, abs(-y))
    fm = x ** 3 * math.log10(y) + mx
    return f + mn + fm + 2 ** x * math.log2(y)


_MODULES: dict = {}


def _module(opt_level):
    if opt_level not in _MODULES:
        _MODULES[opt_level] = zymase.mlir.compile(TEXT, opt_level=opt_level)
    return _MODULES[opt_level]


@pytest.mark.parametrize("opt_level", [0, 2])
def test_llvm_math_intrinsics_match_finite_differences(opt_level):
    m = _module(opt_level)
    h = 1e-6
    for x, y in [(0.7, 1.3), (2.1, 0.4)]:
        assert m.pm(x, y) == pytest.approx(M(x, y), rel=1e-13)
        fd = ((M(x + h, y) - M(x - h, y)) / (2 * h), (M(x, y + h) - M(x, y - h)) / (2 * h))
        assert m.rev_m(x, y) == pytest.approx(fd, rel=1e-6)
        tx, ty = 0.3, -0.8
        assert m.fwd_m(x, tx, y, ty) == pytest.approx((M(x + tx * h, y + ty * h) - M(x - tx * h, y - ty * h)) / (2 * h), rel=1e-6)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_llvm_memcpy_closed_form(opt_level):
    """cp copies src to dst, returns ab = dst[0] dst[1] and stores sin(ab) into dst[1]."""
    m = _module(opt_level)
    src = np.array([0.5, 1.5, 2.0])
    ab = src[0] * src[1]
    # reverse, seed 1 for the result and 2 on dst[1]: L = ab + 2 sin(ab)
    ds, d, dd = np.zeros(3), np.zeros(3), np.array([0.0, 2.0, 0.0])
    assert m.rev_cp(src, ds, d, dd, 3) == ab
    np.testing.assert_allclose(d, [0.5, math.sin(ab), 2.0], rtol=1e-15)
    scale = 1 + 2 * math.cos(ab)
    np.testing.assert_allclose(ds, [src[1] * scale, src[0] * scale, 0.0], rtol=1e-14)
    np.testing.assert_array_equal(dd, 0.0)  # the copy's destination adjoint was consumed
    # forward along ds = (1, -1, 3)
    ds, d, dd = np.array([1.0, -1.0, 3.0]), np.zeros(3), np.zeros(3)
    dab = src[1] * 1.0 + src[0] * -1.0
    assert m.fwd_cp(src, ds, d, dd, 3) == pytest.approx(dab, rel=1e-15)
    np.testing.assert_allclose(dd, [1.0, math.cos(ab) * dab, 3.0], rtol=1e-14)
