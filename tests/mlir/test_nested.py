"""Nested differentiation in MLIR (issue 25 item 1): ``enzyme.fwddiff`` of a function
holding ``enzyme.autodiff`` and the other combinations (reverse over forward, forward over
forward, reverse over reverse, three deep), through ``zymase.mlir.compile`` and
``zymase-opt``, against the closed-form Hessian of Rosenbrock and closed-form scalar
derivatives. Inner requests are lowered first whatever the order of the text; what stays
unsupported (a derivative keeping a LIFO tape, a request reaching itself) is refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

import zymase.mlir
from forking_cli import run_cli
from zymase.errors import ZymaseError

CONST, DUP = "#enzyme<activity enzyme_const>", "#enzyme<activity enzyme_dup>"
ACTIVE, ACTIVENONEED = "#enzyme<activity enzyme_active>", "#enzyme<activity enzyme_activenoneed>"
DUPNONEED = "#enzyme<activity enzyme_dupnoneed>"
M = "memref<?xf64>"


def rosenbrock(loop: str) -> str:
    """f(x) = sum_i 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2 over an scf.for (``loop="scf"``)
    or a cf loop (``loop="cf"``)."""
    body = f"""
    %i1 = arith.addi %i, %c1 : index
    %a = memref.load %x[%i] : {M}
    %b = memref.load %x[%i1] : {M}
    %aa = arith.mulf %a, %a : f64
    %d = arith.subf %b, %aa : f64
    %e = arith.subf %one, %a : f64
    %dd = arith.mulf %d, %d : f64
    %t = arith.mulf %hundred, %dd : f64
    %ee = arith.mulf %e, %e : f64
    %u = arith.addf %t, %ee : f64
    %acc2 = arith.addf %acc, %u : f64"""
    head = f"""
func.func @f(%x: {M}) -> f64 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %one = arith.constant 1.0 : f64
  %hundred = arith.constant 100.0 : f64
  %n = memref.dim %x, %c0 : {M}
  %m = arith.subi %n, %c1 : index"""
    if loop == "scf":
        return head + f"""
  %s = scf.for %i = %c0 to %m step %c1 iter_args(%acc = %z) -> (f64) {{{body}
    scf.yield %acc2 : f64
  }}
  func.return %s : f64
}}
"""
    return head + f"""
  cf.br ^head(%c0, %z : index, f64)
^head(%i: index, %acc: f64):
  %more = arith.cmpi slt, %i, %m : index
  cf.cond_br %more, ^body, ^done
^body:{body}
  cf.br ^head(%i1, %acc2 : index, f64)
^done:
  func.return %acc : f64
}}
"""


# the inner requests: the gradient into g (reverse), the derivative along v (forward)
GRAD = f"""
func.func @grad(%x: {M}, %g: {M}) {{
  %one = arith.constant 1.0 : f64
  enzyme.autodiff @f(%x, %g, %one) {{activity = [{DUP}], ret_activity = [{ACTIVENONEED}]}} : ({M}, {M}, f64) -> ()
  func.return
}}
// <grad f(x), v>
func.func @grad_dot(%x: {M}, %v: {M}) -> f64 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %seed = arith.constant 1.0 : f64
  %n = memref.dim %x, %c0 : {M}
  %g = memref.alloc(%n) : {M}
  scf.for %i = %c0 to %n step %c1 {{
    memref.store %z, %g[%i] : {M}
  }}
  enzyme.autodiff @f(%x, %g, %seed) {{activity = [{DUP}], ret_activity = [{ACTIVENONEED}]}} : ({M}, {M}, f64) -> ()
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {{
    %a = memref.load %g[%i] : {M}
    %b = memref.load %v[%i] : {M}
    %p = arith.mulf %a, %b : f64
    %acc2 = arith.addf %acc, %p : f64
    scf.yield %acc2 : f64
  }}
  memref.dealloc %g : {M}
  func.return %s : f64
}}
"""
JVP = f"""
func.func @jvp(%x: {M}, %v: {M}) -> f64 {{
  %t = enzyme.fwddiff @f(%x, %v) {{activity = [{DUP}], ret_activity = [{DUPNONEED}]}} : ({M}, {M}) -> f64
  func.return %t : f64
}}
"""
# the outer requests: H v three ways, w^T H v by forward over forward
OVER_REVERSE = f"""
func.func @hvp_fwd_rev(%x: {M}, %v: {M}, %g: {M}, %hv: {M}) {{
  enzyme.fwddiff @grad(%x, %v, %g, %hv) {{activity = [{DUP}, {DUP}], ret_activity = []}} : ({M}, {M}, {M}, {M}) -> ()
  func.return
}}
func.func @hvp_rev_rev(%x: {M}, %hv: {M}, %v: {M}) {{
  %one = arith.constant 1.0 : f64
  enzyme.autodiff @grad_dot(%x, %hv, %v, %one) {{activity = [{DUP}, {CONST}], ret_activity = [{ACTIVENONEED}]}} : ({M}, {M}, {M}, f64) -> ()
  func.return
}}
"""
OVER_FORWARD = f"""
func.func @hvp_rev_fwd(%x: {M}, %hv: {M}, %v: {M}) {{
  %one = arith.constant 1.0 : f64
  enzyme.autodiff @jvp(%x, %hv, %v, %one) {{activity = [{DUP}, {CONST}], ret_activity = [{ACTIVENONEED}]}} : ({M}, {M}, {M}, f64) -> ()
  func.return
}}
func.func @whv_fwd_fwd(%x: {M}, %w: {M}, %v: {M}) -> f64 {{
  %t = enzyme.fwddiff @jvp(%x, %w, %v) {{activity = [{DUP}, {CONST}], ret_activity = [{DUPNONEED}]}} : ({M}, {M}, {M}) -> f64
  func.return %t : f64
}}
"""


def hessian(x: np.ndarray) -> np.ndarray:
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i, i + 1] -= 400 * x[i]
        h[i + 1, i] -= 400 * x[i]
        h[i + 1, i + 1] += 200
    return h


RNG = np.random.default_rng(25)
X, V, W = (RNG.uniform(-1, 1, 9) for _ in range(3))  # 9 elements: no vector width divides 8 of them


def _check(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("opt", [0, 2], ids=["O0", "O2"])
def test_every_mode_combination_on_the_structured_path(opt):
    # the outer requests come first in the text: inner ones are still lowered first
    m = zymase.mlir.compile(OVER_REVERSE + OVER_FORWARD + rosenbrock("scf") + GRAD + JVP, opt_level=opt)
    want = hessian(X) @ V
    g, hv = np.zeros_like(X), np.zeros_like(X)
    m.hvp_fwd_rev(X, V, g, hv)
    _check(hv, want)
    h = np.zeros_like(X)
    m.hvp_rev_fwd(X, h, V)
    _check(h, want)
    h = np.zeros_like(X)
    m.hvp_rev_rev(X, h, V)
    _check(h, want)
    assert m.whv_fwd_fwd(X, W, V) == pytest.approx(W @ hessian(X) @ V, rel=1e-12)


def test_over_forward_on_the_cfg_path():
    # a forward derivative keeps no tape: it is differentiated again on the CFG path too
    m = zymase.mlir.compile(rosenbrock("cf") + JVP + OVER_FORWARD, structured_ad=False)
    h = np.zeros_like(X)
    m.hvp_rev_fwd(X, h, V)
    _check(h, hessian(X) @ V)
    assert m.whv_fwd_fwd(X, W, V) == pytest.approx(W @ hessian(X) @ V, rel=1e-12)


def test_over_a_taped_cfg_reverse_is_refused():
    # the CFG generator tapes the loop's values on a LIFO cache, which no rule differentiates
    with pytest.raises(ZymaseError, match=r"tape of a derivative reversed on the CFG path.*function 'grad'.*"
                                          r"structured path"):
        zymase.mlir.compile(rosenbrock("cf") + GRAD + OVER_REVERSE, structured_ad=False)


SCALAR = f"""
func.func @d3(%x: f64, %dx: f64, %tx: f64) -> f64 {{
  %r = enzyme.fwddiff @d2(%x, %tx, %dx) {{activity = [{DUP}, {CONST}], ret_activity = [{DUPNONEED}]}}
    : (f64, f64, f64) -> f64
  func.return %r : f64
}}
func.func @d2(%x: f64, %dx: f64) -> f64 {{
  %r = enzyme.fwddiff @d1(%x, %dx) {{activity = [{DUP}], ret_activity = [{DUPNONEED}]}} : (f64, f64) -> f64
  func.return %r : f64
}}
func.func @d1(%x: f64) -> f64 {{
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @g(%x, %one) {{activity = [{ACTIVE}], ret_activity = [{ACTIVENONEED}]}} : (f64, f64) -> f64
  func.return %r : f64
}}
func.func @rr(%x: f64) -> f64 {{
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @d1(%x, %one) {{activity = [{ACTIVE}], ret_activity = [{ACTIVENONEED}]}} : (f64, f64) -> f64
  func.return %r : f64
}}
func.func @g(%x: f64) -> f64 {{
  %s = math.sin %x : f64
  %y = arith.mulf %s, %x : f64
  func.return %y : f64
}}
"""


def test_third_derivative_and_reverse_over_reverse_of_a_scalar():
    m = zymase.mlir.compile(SCALAR)
    x = 0.7
    # g = x sin x: g' = sin x + x cos x, g'' = 2 cos x - x sin x, g''' = -3 sin x - x cos x
    assert m.d1(x) == pytest.approx(math.sin(x) + x * math.cos(x), rel=1e-14)
    assert m.rr(x) == pytest.approx(2 * math.cos(x) - x * math.sin(x), rel=1e-14)
    assert m.d2(x, 1.0) == pytest.approx(2 * math.cos(x) - x * math.sin(x), rel=1e-14)
    assert m.d3(x, 1.0, 1.0) == pytest.approx(-3 * math.sin(x) - x * math.cos(x), rel=1e-14)


def test_zymase_opt_lowers_nested_requests(tmp_path):
    src = tmp_path / "nested.mlir"
    src.write_text(SCALAR)
    proc = run_cli([str(src), "-p", "enzyme,remove-unnecessary-enzyme-ops,lower-to-llvm"], program="zymase-opt")
    assert proc.returncode == 0, proc.stderr
    assert "enzyme." not in proc.stdout and "llvm.func @d3" in proc.stdout


def test_a_request_reaching_itself_is_refused():
    text = f"""
func.func @h(%x: f64) -> f64 {{
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @h(%x, %one) {{activity = [{ACTIVE}], ret_activity = [{ACTIVENONEED}]}} : (f64, f64) -> f64
  func.return %r : f64
}}
"""
    with pytest.raises(ZymaseError, match=r"'h' reaches the request that differentiates it.*function 'h'"):
        zymase.mlir.compile(text)
