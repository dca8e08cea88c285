"""Issue 28 item 5, affine and parallel loops: ``affine.for`` (constant and symbol
bounds, step, iter_args), ``affine.if`` (with and without results), ``load``/``store``
(with ``symbol(%n)`` subscripts), ``apply``/``min``/``max``, ``affine.parallel`` with an
``addf`` reduction, and ``scf.parallel`` with two ``scf.reduce`` reductions (a sum and a
product), differentiated through ``zymase.mlir.compile`` in forward and reverse mode
with Enzyme-MLIR's activities. Each function writes its second memref (every
iteration its own element) and returns a reduction, so the reverse derivative with
seed 1 and output shadow ``w`` is the gradient of ``f(x) + w . y(x)``, checked against
central finite differences, and the forward one against directional differences."""

from __future__ import annotations

import numpy as np
import pytest

import zymase.mlir
from zymase.errors import ZymaseError

CONST, ACTIVE, DUP, DUPNONEED = (f"#enzyme<activity enzyme_{a}>" for a in ("const", "active", "dup", "dupnoneed"))
M = "memref<?xf64>"

FUNCS = r'''
#even = affine_set<(d0) : (d0 mod 2 == 0)>
#inner = affine_set<(d0)[s0] : (d0 - 1 >= 0, s0 - d0 - 2 >= 0)>
func.func @aff(%x: memref<?xf64>, %y: memref<?xf64>, %n: index, %a: f64) -> f64 {
  %z = arith.constant 0.0 : f64
  %s = affine.for %i = 0 to %n iter_args(%acc = %z) -> (f64) {
    %j = affine.min affine_map<(d0)[s0] -> (d0 + 1, s0 - 1)>(%i)[%n]
    %k = affine.max affine_map<(d0) -> (d0 - 1, 0)>(%i)
    %xi = affine.load %x[%i] : memref<?xf64>
    %xj = affine.load %x[%j] : memref<?xf64>
    %xk = affine.load %x[%k] : memref<?xf64>
    %p = arith.mulf %xi, %xj : f64
    %q = affine.if #even(%i) -> f64 {
      %t = arith.mulf %p, %a : f64
      affine.yield %t : f64
    } else {
      %t = arith.mulf %p, %xk : f64
      affine.yield %t : f64
    }
    %acc2 = arith.addf %acc, %q : f64
    affine.yield %acc2 : f64
  }
  affine.for %i = 0 to %n step 2 {
    %h = affine.apply affine_map<(d0) -> (d0 floordiv 2)>(%i)
    %xh = affine.load %x[%h] : memref<?xf64>
    %e = math.sin %xh : f64
    affine.store %e, %y[%i] : memref<?xf64>
    affine.if #inner(%i)[%n] {
      %xi = affine.load %x[%i + 1] : memref<?xf64>
      %c = arith.mulf %xi, %a : f64
      affine.store %c, %y[%i + 1] : memref<?xf64>
    }
  }
  affine.for %i = 0 to 3 {
    %v = affine.load %y[%i + symbol(%n) - 3] : memref<?xf64>
    %w = arith.mulf %v, %v : f64
    affine.store %w, %y[%i + symbol(%n) - 3] : memref<?xf64>
  }
  return %s : f64
}
func.func @aff_par(%x: memref<?xf64>, %y: memref<?xf64>, %n: index, %a: f64) -> f64 {
  %r = affine.parallel (%i) = (0) to (symbol(%n)) reduce ("addf") -> (f64) {
    %v = affine.load %x[%i] : memref<?xf64>
    %v2 = arith.mulf %v, %v : f64
    %v3 = arith.mulf %v2, %a : f64
    affine.store %v3, %y[%i] : memref<?xf64>
    %s = math.sin %v : f64
    %t = arith.mulf %s, %v : f64
    affine.yield %t : f64
  }
  return %r : f64
}
func.func @scf_par(%x: memref<?xf64>, %y: memref<?xf64>, %n: index, %a: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %z = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %half = arith.divui %n, %c2 : index
  %r:2 = scf.parallel (%i, %j) = (%c0, %c0) to (%half, %c2) step (%c1, %c1) init (%z, %one) -> (f64, f64) {
    %i2 = arith.muli %i, %c2 : index
    %k = arith.addi %i2, %j : index
    %v = memref.load %x[%k] : memref<?xf64>
    %e = math.exp %v : f64
    %ea = arith.mulf %e, %a : f64
    memref.store %ea, %y[%k] : memref<?xf64>
    %c = math.cos %v : f64
    %h = arith.constant 0.5 : f64
    %m = arith.addf %c, %h : f64
    scf.reduce(%v, %m : f64, f64) {
    ^bb0(%l: f64, %rr: f64):
      %s = arith.addf %l, %rr : f64
      scf.reduce.return %s : f64
    }, {
    ^bb0(%l: f64, %rr: f64):
      %p = arith.mulf %l, %rr : f64
      scf.reduce.return %p : f64
    }
  }
  %o = arith.mulf %r#0, %r#1 : f64
  return %o : f64
}
'''


def _drivers(name: str) -> str:
    return f"""
func.func @rev_{name}(%x: {M}, %dx: {M}, %y: {M}, %dy: {M}, %n: index, %a: f64, %seed: f64) -> (f64, f64) {{
  %r, %da = enzyme.autodiff @{name}(%x, %dx, %y, %dy, %n, %a, %seed) {{activity = [{DUP}, {DUP}, {CONST}, {ACTIVE}], ret_activity = [{ACTIVE}]}} : ({M}, {M}, {M}, {M}, index, f64, f64) -> (f64, f64)
  return %r, %da : f64, f64
}}
func.func @fwd_{name}(%x: {M}, %dx: {M}, %y: {M}, %dy: {M}, %n: index, %a: f64, %ta: f64) -> f64 {{
  %dr = enzyme.fwddiff @{name}(%x, %dx, %y, %dy, %n, %a, %ta) {{activity = [{DUP}, {DUP}, {CONST}, {ACTIVE}], ret_activity = [{DUPNONEED}]}} : ({M}, {M}, {M}, {M}, index, f64, f64) -> f64
  return %dr : f64
}}"""


NAMES = ["aff", "aff_par", "scf_par"]
_MODULES: dict = {}


def _module(opt_level: int):
    if opt_level not in _MODULES:
        _MODULES[opt_level] = zymase.mlir.compile(FUNCS + "".join(_drivers(n) for n in NAMES), opt_level=opt_level)
    return _MODULES[opt_level]


@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("name", NAMES)
def test_affine_and_parallel_derivatives_match_finite_differences(name, opt_level):
    m = _module(opt_level)
    f = getattr(m, name)
    n = 8 if name == "scf_par" else 7  # scf_par runs n/2 x 2 iterations
    rng = np.random.default_rng(3)
    x, a, w = rng.uniform(0.2, 1.0, n), 0.7, rng.uniform(-1, 1, n)

    def run(x, a):
        y = np.zeros(n)
        return f(x.copy(), y, n, a), y

    def objective(x, a):
        r, y = run(x, a)
        return r + w @ y

    h = 1e-6
    dx, y, dy = np.zeros(n), np.zeros(n), w.copy()
    r, da = getattr(m, "rev_" + name)(x.copy(), dx, y, dy, n, a, 1.0)
    assert r == pytest.approx(run(x, a)[0], rel=1e-12)
    fd = [(objective(x + h * e, a) - objective(x - h * e, a)) / (2 * h) for e in np.eye(n)]
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-7)
    assert da == pytest.approx((objective(x, a + h) - objective(x, a - h)) / (2 * h), rel=1e-6, abs=1e-7)

    tx, ta = rng.uniform(-1, 1, n), 0.3
    ty, y = np.zeros(n), np.zeros(n)
    dr = getattr(m, "fwd_" + name)(x.copy(), tx, y, ty, n, a, ta)
    (rp, yp), (rm, ym) = run(x + h * tx, a + h * ta), run(x - h * tx, a - h * ta)
    assert dr == pytest.approx((rp - rm) / (2 * h), rel=1e-6, abs=1e-7)
    np.testing.assert_allclose(ty, (yp - ym) / (2 * h), rtol=1e-6, atol=1e-7)


def test_affine_parallel_reduction_closed_form():
    """sum(sin(x) * x) and its gradient sin(x) + x cos(x), with y = a x^2 seeded by 0."""
    m = _module(2)
    x = np.linspace(0.1, 1.3, 5)
    dx, y, dy = np.zeros(5), np.zeros(5), np.zeros(5)
    r, da = m.rev_aff_par(x.copy(), dx, y, dy, 5, 2.0, 1.0)
    assert r == pytest.approx(np.sum(np.sin(x) * x), rel=1e-13)
    np.testing.assert_allclose(dx, np.sin(x) + x * np.cos(x), rtol=1e-13)
    np.testing.assert_allclose(y, 2.0 * x * x, rtol=1e-13)
    assert da == 0.0


def test_unsupported_affine_reduction_is_refused():
    text = """
func.func @g(%x: memref<?xi64>, %n: index) -> i64 {
  %r = affine.parallel (%i) = (0) to (%n) reduce ("andi") -> (i64) {
    %v = affine.load %x[%i] : memref<?xi64>
    affine.yield %v : i64
  }
  return %r : i64
}"""
    with pytest.raises(ZymaseError) as err:
        zymase.mlir.compile(text)
    message = str(err.value)
    assert message.startswith("zymase: error:")
    assert "andi" in message and "affine.parallel" in message and "'g'" in message
    assert "hint" in message


def test_unsupported_affine_op_is_refused_by_name():
    text = """
func.func @v(%m: memref<?xf64>, %i: index) -> vector<4xf64> {
  %v = affine.vector_load %m[%i] : memref<?xf64>, vector<4xf64>
  return %v : vector<4xf64>
}"""
    with pytest.raises(ZymaseError) as err:
        zymase.mlir.compile(text)
    message = str(err.value)
    assert message.startswith("zymase: error:") and "'affine.vector_load'" in message and "'v'" in message
