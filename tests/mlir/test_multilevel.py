"""One computation written at three levels of MLIR — scf + memref, cf + memref
(after scf lowering), and the llvm dialect (pointers, GEPs, llvm branches) — is
differentiated at each level with ``enzyme.autodiff`` through
``zymase.mlir.compile``; the gradients agree to rounding with each other, with the
closed form and with central finite differences. The scf form is differentiated
twice: at the structured level (region rules, the default: level "scf") and
after lowering scf to cf (``structured_ad=False``: level "scf->cf").

The computation is a loop nest with a nonlinear reduction,
``f(A) = sum_ij sin(A_ij) * A_ij^2``, so ``df/dA_ij = cos(a) a^2 + 2 a sin(a)``.
"""

from __future__ import annotations

import numpy as np
import pytest

import zymase.mlir

DUP, CONST, OUT = (f"#enzyme<activity enzyme_{a}>" for a in ("dup", "const", "activenoneed"))

MEMREF_GRAD = f"""
func.func @grad(%A: memref<?x?xf64>, %dA: memref<?x?xf64>) {{
  %one = arith.constant 1.0 : f64
  enzyme.autodiff @f(%A, %dA, %one) {{activity = [{DUP}], ret_activity = [{OUT}]}} : (memref<?x?xf64>, memref<?x?xf64>, f64) -> ()
  func.return
}}
func.func @value(%A: memref<?x?xf64>) -> f64 {{
  %r = func.call @f(%A) : (memref<?x?xf64>) -> f64
  func.return %r : f64
}}
"""

SCF = """
func.func private @f(%a: memref<?x?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?x?xf64>
  %m = memref.dim %a, %c1 : memref<?x?xf64>
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %r2 = scf.for %j = %c0 to %m step %c1 iter_args(%acc2 = %acc) -> (f64) {
      %x = memref.load %a[%i, %j] : memref<?x?xf64>
      %s = math.sin %x : f64
      %xx = arith.mulf %x, %x : f64
      %t = arith.mulf %s, %xx : f64
      %u = arith.addf %acc2, %t : f64
      scf.yield %u : f64
    }
    scf.yield %r2 : f64
  }
  func.return %r : f64
}
""" + MEMREF_GRAD

CF = """
func.func private @f(%a: memref<?x?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?x?xf64>
  %m = memref.dim %a, %c1 : memref<?x?xf64>
  %z = arith.constant 0.0 : f64
  cf.br ^outer(%c0, %z : index, f64)
^outer(%i: index, %acc: f64):
  %more_i = arith.cmpi slt, %i, %n : index
  cf.cond_br %more_i, ^inner_entry, ^done
^inner_entry:
  cf.br ^inner(%c0, %acc : index, f64)
^inner(%j: index, %acc2: f64):
  %more_j = arith.cmpi slt, %j, %m : index
  cf.cond_br %more_j, ^body, ^inner_exit
^body:
  %x = memref.load %a[%i, %j] : memref<?x?xf64>
  %s = math.sin %x : f64
  %xx = arith.mulf %x, %x : f64
  %t = arith.mulf %s, %xx : f64
  %u = arith.addf %acc2, %t : f64
  %j1 = arith.addi %j, %c1 : index
  cf.br ^inner(%j1, %u : index, f64)
^inner_exit:
  %i1 = arith.addi %i, %c1 : index
  cf.br ^outer(%i1, %acc2 : index, f64)
^done:
  func.return %acc : f64
}
""" + MEMREF_GRAD

# The llvm dialect: a row-major n x m array behind a pointer, sizes as i64.
LLVM = f"""
llvm.func internal @f(%p: !llvm.ptr, %n: i64, %m: i64) -> f64 {{
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %z = llvm.mlir.constant(0.0 : f64) : f64
  llvm.br ^outer(%c0, %z : i64, f64)
^outer(%i: i64, %acc: f64):
  %more_i = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %more_i, ^inner_entry, ^done
^inner_entry:
  llvm.br ^inner(%c0, %acc : i64, f64)
^inner(%j: i64, %acc2: f64):
  %more_j = llvm.icmp "slt" %j, %m : i64
  llvm.cond_br %more_j, ^body, ^inner_exit
^body:
  %row = llvm.mul %i, %m : i64
  %k = llvm.add %row, %j : i64
  %q = llvm.getelementptr %p[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f64
  %x = llvm.load %q : !llvm.ptr -> f64
  %s = llvm.call_intrinsic "llvm.sin.f64"(%x) : (f64) -> f64
  %xx = llvm.fmul %x, %x : f64
  %t = llvm.fmul %s, %xx : f64
  %u = llvm.fadd %acc2, %t : f64
  %j1 = llvm.add %j, %c1 : i64
  llvm.br ^inner(%j1, %u : i64, f64)
^inner_exit:
  %i1 = llvm.add %i, %c1 : i64
  llvm.br ^outer(%i1, %acc2 : i64, f64)
^done:
  llvm.return %acc : f64
}}
func.func @grad(%p: !llvm.ptr, %dp: !llvm.ptr, %n: i64, %m: i64) {{
  %one = arith.constant 1.0 : f64
  enzyme.autodiff @f(%p, %dp, %n, %m, %one) {{activity = [{DUP}, {CONST}, {CONST}], ret_activity = [{OUT}]}} : (!llvm.ptr, !llvm.ptr, i64, i64, f64) -> ()
  func.return
}}
"""


def f_numpy(a: np.ndarray) -> float:
    return float(np.sum(np.sin(a) * a * a))


def df_closed(a: np.ndarray) -> np.ndarray:
    return np.cos(a) * a * a + 2 * a * np.sin(a)


def gradient(level: str, a: np.ndarray) -> np.ndarray:
    da = np.zeros_like(a)
    if level == "llvm":
        _compiled(level).grad(a, da, a.shape[0], a.shape[1])
    else:
        _compiled(level).grad(a, da)
    return da


LEVELS = ("scf", "scf->cf", "cf", "llvm")
_CACHE: dict[str, object] = {}


def _compiled(level: str):
    if level not in _CACHE:
        text = {"scf": SCF, "scf->cf": SCF, "cf": CF, "llvm": LLVM}[level]
        _CACHE[level] = zymase.mlir.compile(text, structured_ad=level != "scf->cf")
    return _CACHE[level]


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (7, 4)])
def test_three_levels_give_identical_gradients(shape):
    rng = np.random.default_rng(sum(shape))
    a = rng.uniform(-2.0, 2.0, size=shape)
    grads = {level: gradient(level, a) for level in LEVELS}
    want = df_closed(a)
    for level, g in grads.items():
        np.testing.assert_allclose(g, want, rtol=1e-13, atol=1e-14, err_msg=level)
    # the structured-level derivative equals the cf-level and llvm-level ones
    for level in ("scf->cf", "cf", "llvm"):
        np.testing.assert_allclose(grads[level], grads["scf"], rtol=1e-15, atol=0, err_msg=level)


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(7)
    a = rng.uniform(-2.0, 2.0, size=(3, 4))
    h = 1e-6
    fd = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[idx] += h
        down[idx] -= h
        fd[idx] = (f_numpy(up) - f_numpy(down)) / (2 * h)
    for level in LEVELS:
        np.testing.assert_allclose(gradient(level, a), fd, rtol=1e-6, atol=1e-8, err_msg=level)
    # the memref levels compute the primal too; it matches NumPy
    assert _compiled("scf").value(a) == pytest.approx(f_numpy(a), rel=1e-13)
    assert _compiled("cf").value(a) == pytest.approx(f_numpy(a), rel=1e-13)


def test_empty_array_has_empty_gradient_at_every_level():
    a = np.zeros((0, 3))
    for level in LEVELS:
        assert gradient(level, a).shape == (0, 3)
