"""Partials that are rounded sums, met in an adjoint sum, in arith code (``zymase.mlir.compile``):
the std flavor's accumulations carry ``fastmath<reassoc,nsz>``, which the lowering to LLVM keeps,
and LLVM took it as leave to reassociate into the partials' own adds (``w*(x - y) + w*y``: the
weight ``(x - y) + y`` became ``x``, 1 for 0 at x = 1, y = 1e17; silently, at -O1..-O3, before
session 35). Such partials are read behind ``llvm.arithmetic.fence`` in the std flavor too
(autodiff/rounded_partials). Every expected value is the derivative of the program as written,
rounded as written (Python floats round like f64), compared exactly: an error term of TwoSum
(about 1e-17 next to 1) used as a weight must come back bit for bit. tests/c/reassociated_partials.c
checks the C path."""

from __future__ import annotations

import numpy as np
import pytest

import zymase.mlir

ACTIVE, CONST = "#enzyme<activity enzyme_active>", "#enzyme<activity enzyme_const>"
DUP, ACTIVENONEED, DUPNONEED = ("#enzyme<activity enzyme_dup>", "#enzyme<activity enzyme_activenoneed>",
                                "#enzyme<activity enzyme_dupnoneed>")
M = "memref<?xf64>"
BIG = 1e17


def _rev(name: str, args: str, types: str, acts: list[str], seed: str = "%one") -> str:
    """``@rev_<name>``: the reverse-mode derivatives of ``@name`` (seed 1 unless given)."""
    n_active = sum(a == ACTIVE for a in acts)
    results = ", ".join(["f64"] * n_active)
    outs = ", ".join(f"%r#{i}" for i in range(n_active)) if n_active > 1 else "%r"
    shape = f"%r:{n_active}" if n_active > 1 else "%r"
    seed_param = ", %dr: f64" if seed == "%dr" else ""
    return f"""
func.func @rev_{name}({args}{seed_param}) -> ({results}) {{
  %one = arith.constant 1.0 : f64
  {shape} = enzyme.autodiff @{name}({", ".join(a.split(":")[0] for a in args.split(", "))}, {seed}) {{activity = [{", ".join(acts)}], ret_activity = [{ACTIVENONEED}]}} : ({types}, f64) -> ({results})
  func.return {outs} : {results}
}}"""


TEXT = f"""
// d/dw = (x - y) + y
func.func @weight(%w: f64, %x: f64, %y: f64) -> f64 {{
  %d = arith.subf %x, %y : f64
  %a = arith.mulf %w, %d : f64
  %b = arith.mulf %w, %y : f64
  %s = arith.addf %a, %b : f64
  func.return %s : f64
}}
{_rev("weight", "%w: f64, %x: f64, %y: f64", "f64, f64, f64", [ACTIVE, CONST, CONST])}
func.func @rev_weight_seed(%w: f64, %x: f64, %y: f64, %dr: f64) -> f64 {{
  %r = enzyme.autodiff @weight(%w, %x, %y, %dr) {{activity = [{ACTIVE}, {CONST}, {CONST}], ret_activity = [{ACTIVENONEED}]}} : (f64, f64, f64, f64) -> f64
  func.return %r : f64
}}
func.func @fwd_weight(%w: f64, %dw: f64, %x: f64, %y: f64) -> f64 {{
  %r = enzyme.fwddiff @weight(%w, %dw, %x, %y) {{activity = [{DUP}, {CONST}, {CONST}], ret_activity = [{DUPNONEED}]}} : (f64, f64, f64, f64) -> f64
  func.return %r : f64
}}
// d/dw = (x - y) + y in f32
func.func @weight_f(%w: f32, %x: f32, %y: f32) -> f32 {{
  %d = arith.subf %x, %y : f32
  %a = arith.mulf %w, %d : f32
  %b = arith.mulf %w, %y : f32
  %s = arith.addf %a, %b : f32
  func.return %s : f32
}}
func.func @rev_weight_f(%w: f32, %x: f32, %y: f32) -> f32 {{
  %one = arith.constant 1.0 : f32
  %r = enzyme.autodiff @weight_f(%w, %x, %y, %one) {{activity = [{ACTIVE}, {CONST}, {CONST}], ret_activity = [{ACTIVENONEED}]}} : (f32, f32, f32, f32) -> f32
  func.return %r : f32
}}
// d/dw = (a - C) + (b + C): LLVM factors p*d + q*d into (p + q)*d, whatever d
func.func @factored(%w: f64, %a: f64, %b: f64) -> f64 {{
  %c = arith.constant {BIG:e} : f64
  %p = arith.subf %a, %c : f64
  %q = arith.addf %b, %c : f64
  %wp = arith.mulf %w, %p : f64
  %wq = arith.mulf %w, %q : f64
  %s = arith.addf %wp, %wq : f64
  func.return %s : f64
}}
func.func @rev_factored(%w: f64, %a: f64, %b: f64, %dr: f64) -> f64 {{
  %r = enzyme.autodiff @factored(%w, %a, %b, %dr) {{activity = [{ACTIVE}, {CONST}, {CONST}], ret_activity = [{ACTIVENONEED}]}} : (f64, f64, f64, f64) -> f64
  func.return %r : f64
}}
// TwoSum: s + e = a + b exactly; d/dw = e (about 1e-17 next to s = 1), d/dv = s, the error
// term as the partial of an active x next to the sum: d/dx = e + s, and d/du = s + bb (bb = s - a)
func.func @two_sum(%w: f64, %v: f64, %x: f64, %u: f64, %a: f64, %b: f64) -> f64 {{
  %s = arith.addf %a, %b : f64
  %bb = arith.subf %s, %a : f64
  %t = arith.subf %s, %bb : f64
  %ea = arith.subf %a, %t : f64
  %eb = arith.subf %b, %bb : f64
  %e = arith.addf %ea, %eb : f64
  %we = arith.mulf %w, %e : f64
  %vs = arith.mulf %v, %s : f64
  %xe = arith.mulf %e, %x : f64
  %xs = arith.mulf %s, %x : f64
  %r1 = arith.addf %we, %vs : f64
  %r2 = arith.addf %xe, %xs : f64
  %us = arith.mulf %u, %s : f64
  %ub = arith.mulf %u, %bb : f64
  %r3 = arith.addf %us, %ub : f64
  %r12 = arith.addf %r1, %r2 : f64
  %r = arith.addf %r12, %r3 : f64
  func.return %r : f64
}}
{_rev("two_sum", "%w: f64, %v: f64, %x: f64, %u: f64, %a: f64, %b: f64", "f64, f64, f64, f64, f64, f64",
      [ACTIVE, ACTIVE, ACTIVE, ACTIVE, CONST, CONST])}
// TwoProduct by a fused multiply-add: e = fma(a, b, -a*b); d/dw = e + p
func.func @two_prod(%w: f64, %a: f64, %b: f64) -> f64 {{
  %p = arith.mulf %a, %b : f64
  %np = arith.negf %p : f64
  %e = math.fma %a, %b, %np : f64
  %we = arith.mulf %w, %e : f64
  %wp = arith.mulf %w, %p : f64
  %r = arith.addf %we, %wp : f64
  func.return %r : f64
}}
{_rev("two_prod", "%w: f64, %a: f64, %b: f64", "f64, f64, f64", [ACTIVE, CONST, CONST])}
// d/dw = sum_i (x_i - y_i) + y_i
func.func @weight_sum(%w: f64, %x: {M}, %y: {M}) -> f64 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %n = memref.dim %x, %c0 : {M}
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {{
    %xi = memref.load %x[%i] : {M}
    %yi = memref.load %y[%i] : {M}
    %d = arith.subf %xi, %yi : f64
    %a = arith.mulf %w, %d : f64
    %b = arith.mulf %w, %yi : f64
    %t = arith.addf %a, %b : f64
    %acc2 = arith.addf %acc, %t : f64
    scf.yield %acc2 : f64
  }}
  func.return %s : f64
}}
func.func @rev_weight_sum(%w: f64, %x: {M}, %y: {M}) -> f64 {{
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @weight_sum(%w, %x, %y, %one) {{activity = [{ACTIVE}, {CONST}, {CONST}], ret_activity = [{ACTIVENONEED}]}} : (f64, {M}, {M}, f64) -> f64
  func.return %r : f64
}}
// the weight's derivative differentiated again: d/dx ((x - y) + y) = 1 - 0 (the fence is the identity)
func.func @dweight(%w: f64, %x: f64, %y: f64) -> f64 {{
  %r = func.call @rev_weight(%w, %x, %y) : (f64, f64, f64) -> f64
  func.return %r : f64
}}
func.func @fwd_dweight(%w: f64, %x: f64, %dx: f64, %y: f64) -> f64 {{
  %r = enzyme.fwddiff @dweight(%w, %x, %dx, %y) {{activity = [{CONST}, {DUP}, {CONST}], ret_activity = [{DUPNONEED}]}} : (f64, f64, f64, f64) -> f64
  func.return %r : f64
}}
"""

LEVELS = [0, 1, 2, 3]
POINTS = [(1.0, BIG), (3.0, 2.0**60), (0.375, 4 * BIG)]


@pytest.fixture(scope="module", params=[(o, s) for o in LEVELS for s in (True, False)],
                ids=[f"O{o}-{'scf' if s else 'cfg'}" for o in LEVELS for s in (True, False)])
def module(request):
    opt_level, structured = request.param
    return zymase.mlir.compile(TEXT, opt_level=opt_level, structured_ad=structured)


@pytest.mark.parametrize("x,y", POINTS)
def test_weight_keeps_the_rounding_of_its_difference(module, x, y):
    want = (x - y) + y  # 0.0 here: x - y rounds to -y
    assert module.rev_weight(2.0, x, y) == want
    assert module.rev_weight_seed(2.0, x, y, 1.0) == want
    assert module.fwd_weight(2.0, 1.0, x, y) == want


def test_weight_in_f32(module):
    x, y = np.float32(1.0), np.float32(1e8)
    assert module.rev_weight_f(2.0, float(x), float(y)) == float((x - y) + y)


@pytest.mark.parametrize("a", [1.0, 3.0, 0.375])
def test_factored_partials(module, a):
    b = 2.0 * a
    assert module.rev_factored(2.0, a, b, 1.0) == (a - BIG) + (b + BIG)


def _two_sum(a: float, b: float) -> tuple[float, float]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@pytest.mark.parametrize("a,b", [(1.0, 1e-17), (1 / 3, 0.1), (-2.5, 0.3)])
def test_two_sum_error_term_is_an_exact_weight(module, a, b):
    s, e = _two_sum(a, b)
    assert e != 0.0
    assert tuple(module.rev_two_sum(2.0, 3.0, 5.0, 7.0, a, b)) == (e, s, e + s, s + (s - a))


@pytest.mark.parametrize("a,b", [(0.1, 1 / 3), (1.0 + 2.0**-30, 1.0 - 2.0**-30)])
def test_two_product_error_term_is_an_exact_weight(module, a, b):
    p = a * b
    e = _fma_error(a, b, p)
    assert e != 0.0
    assert module.rev_two_prod(2.0, a, b) == e + p


def _fma_error(a: float, b: float, p: float) -> float:
    """a*b - p exactly (a*b has at most 106 bits: Python's integers hold it)."""
    from fractions import Fraction

    return float(Fraction(a) * Fraction(b) - Fraction(p))


def test_weight_summed_over_a_loop(module):
    n = 23
    x = np.array([1.0 * (i + 1) for i in range(n)])
    y = np.array([2.0**60 * (1 << (i % 3)) for i in range(n)])
    # each (x_i - y_i) + y_i is 0 (x_i - y_i rounds to -y_i): the sum is 0 in any order
    want = sum((xi - yi) + yi for xi, yi in zip(x, y))
    assert module.rev_weight_sum(2.0, x, y) == want == 0.0


def test_second_derivative_through_the_fence(module):
    assert module.fwd_dweight(2.0, 1.0, 1.0, BIG) == 1.0


def _per_element(loop: str, factored: bool) -> str:
    """``o[i] = w[i] (x[i] - y[i])`` (``factored``: ``+ w[i] (x[i] + y[i])``) over an scf.for or a
    CFG loop, and ``@g`` its reverse-mode derivative (dw from do)."""
    second = """
    %e = arith.addf %xi, %yi : f64
    %q = arith.mulf %wi, %e : f64
    %r = arith.addf %p, %q : f64""" if factored else """
    %r = arith.addf %p, %z : f64"""
    body = f"""
    %wi = memref.load %w[%i] : {M}
    %xi = memref.load %x[%i] : {M}
    %yi = memref.load %y[%i] : {M}
    %d = arith.subf %xi, %yi : f64
    %p = arith.mulf %wi, %d : f64{second}
    memref.store %r, %o[%i] : {M}"""
    if loop == "scf":
        code = f"""scf.for %i = %c0 to %n step %c1 {{{body}
  }}"""
    else:
        code = f"""cf.br ^head(%c0 : index)
^head(%i: index):
  %more = arith.cmpi slt, %i, %n : index
  cf.cond_br %more, ^body, ^done
^body:{body}
  %i1 = arith.addi %i, %c1 : index
  cf.br ^head(%i1 : index)
^done:"""
    return f"""
func.func @f(%w: {M}, %x: {M}, %y: {M}, %o: {M}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant -0.0 : f64
  %n = memref.dim %w, %c0 : {M}
  {code}
  func.return
}}
func.func @g(%w: {M}, %dw: {M}, %x: {M}, %y: {M}, %o: {M}, %do: {M}) {{
  enzyme.autodiff @f(%w, %dw, %x, %y, %o, %do) {{activity = [{DUP}, {CONST}, {CONST}, {DUP}], ret_activity = []}} : ({M}, {M}, {M}, {M}, {M}, {M}) -> ()
  func.return
}}"""


@pytest.mark.parametrize("loop", ["scf", "cfg"])
def test_rounded_partials_are_read_behind_canonicalize(loop):
    from zymase.autodiff.rounded_partials import vectorizable_barriers
    from zymase.transforms.pipeline import run_passes

    def count(text: str, intrinsic: str) -> int:
        with vectorizable_barriers():  # (as zymase.mlir.compile differentiates)
            out = run_passes(text, "<input>", ["enzyme"])
        return out.count(f'llvm.call_intrinsic "llvm.{intrinsic}')

    # every partial that is x[i] - y[i] (and x[i] + y[i]) is read behind canonicalize, which
    # the vectorizer widens, whatever adjoint it multiplies: do[i] folds where LLVM unrolls
    # the loop fully (test_seed_of_ones_through_a_fully_unrolled_loop)
    assert count(_per_element(loop, factored=False), "arithmetic.fence") == 0
    assert count(_per_element(loop, factored=False), "canonicalize") == 1
    assert count(_per_element(loop, factored=True), "canonicalize") == 2
    # the seed of a returned sum folds to 1: the weight's difference too
    assert count(TEXT, "canonicalize") >= 1


@pytest.mark.parametrize("loop", ["scf", "cfg"])
def test_mlir_output_keeps_its_fences(loop):
    # zymase-opt's MLIR is compiled by whatever LLVM the user has (clang-19 cannot generate
    # code for llvm.canonicalize on x86): every fence stays, and no canonicalize is there
    from zymase.transforms.pipeline import run_passes

    out = run_passes(_per_element(loop, factored=False), "<input>", ["enzyme"])
    assert out.count('llvm.call_intrinsic "llvm.arithmetic.fence') == 1
    assert "canonicalize" not in out


@pytest.mark.parametrize("loop", ["scf", "cfg"])
@pytest.mark.parametrize("opt_level", [0, 2])
def test_factored_per_element(loop, opt_level):
    # (the values LLVM did not factor here before the fences either: this checks that the
    # derivative of the loop whose fences stay is the program's, exactly)
    m = zymase.mlir.compile(_per_element(loop, factored=True), opt_level=opt_level, structured_ad=loop == "scf")
    n = 19
    x = np.array([1.0 + i for i in range(n)])
    y = np.array([BIG * (1 + i % 3) for i in range(n)])
    w, dw, o, do = np.full(n, 2.0), np.zeros(n), np.zeros(n), np.ones(n)
    m.g(w, dw, x, y, o, do)
    # d o[i] / d w[i] = (x - y) + (x + y) as rounded: x - y and x + y round to -y and y
    assert list(dw) == [(xi - yi) + (xi + yi) for xi, yi in zip(x, y)]


def _unrolled() -> str:
    """``o[2i] = w[i] (x - y)``, ``o[2i+1] = w[i] y`` for i < 4, and ``@g`` its reverse-mode
    derivative called with a seed of ones that ``@g`` stores itself."""
    seeds = "\n".join(f"  %k{k} = arith.constant {k} : index\n  memref.store %one, %do[%k{k}] : memref<8xf64>"
                      for k in range(8))
    return f"""
func.func @f(%w: memref<4xf64>, %o: memref<8xf64>, %x: f64, %y: f64) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {{
    %wi = memref.load %w[%i] : memref<4xf64>
    %d = arith.subf %x, %y : f64
    %p = arith.mulf %wi, %d : f64
    %q = arith.mulf %wi, %y : f64
    %j = arith.muli %i, %c2 : index
    %j1 = arith.addi %j, %c1 : index
    memref.store %p, %o[%j] : memref<8xf64>
    memref.store %q, %o[%j1] : memref<8xf64>
  }}
  func.return
}}
func.func @g(%w: memref<4xf64>, %dw: memref<4xf64>, %x: f64, %y: f64) {{
  %o = memref.alloca() : memref<8xf64>
  %do = memref.alloca() : memref<8xf64>
  %one = arith.constant 1.0 : f64
{seeds}
  enzyme.autodiff @f(%w, %dw, %o, %do, %x, %y) {{activity = [{DUP}, {DUP}, {CONST}, {CONST}], ret_activity = []}} : (memref<4xf64>, memref<4xf64>, memref<8xf64>, memref<8xf64>, f64, f64) -> ()
  func.return
}}"""


@pytest.mark.parametrize("structured", [True, False])
@pytest.mark.parametrize("opt_level", [0, 2, 3])
def test_seed_of_ones_through_a_fully_unrolled_loop(structured, opt_level):
    # do[2i] and do[2i+1] differ from element to element in the loop as written; LLVM unrolls
    # the 4 iterations, forwards @g's ones, and the adjoint sum met (x - y) and y bare: dw[i]
    # was (x - y) + y reassociated into x, 1 instead of 0, at -O2 and -O3 before session 36
    m = zymase.mlir.compile(_unrolled(), opt_level=opt_level, structured_ad=structured)
    w, dw = np.arange(1.0, 5.0), np.zeros(4)
    x, y = 1.0, 2.0 ** 60
    m.g(w, dw, x, y)
    assert list(dw) == [(x - y) + y] * 4


LOOP_CARRIED = f"""
// d/dw = d + y, d = x - y - ... - y carried by the loop (n = 1 at the call: LLVM unrolls it
// and d becomes x - y)
func.func @f(%w: f64, %x: f64, %y: f64, %n: index) -> f64 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (f64) {{
    %s = arith.subf %acc, %y : f64
    scf.yield %s : f64
  }}
  %a = arith.mulf %w, %d : f64
  %b = arith.mulf %w, %y : f64
  %r = arith.addf %a, %b : f64
  func.return %r : f64
}}
func.func @g(%w: f64, %x: f64, %y: f64) -> f64 {{
  %one = arith.constant 1.0 : f64
  %c1 = arith.constant 1 : index
  %r = enzyme.autodiff @f(%w, %x, %y, %c1, %one) {{activity = [{ACTIVE}, {CONST}, {CONST}, {CONST}], ret_activity = [{ACTIVENONEED}]}} : (f64, f64, f64, index, f64) -> f64
  func.return %r : f64
}}"""


@pytest.mark.parametrize("structured", [True, False])
@pytest.mark.parametrize("opt_level", [0, 2, 3])
def test_loop_carried_rounded_value(structured, opt_level):
    # the partial is the loop's result (scf.for) or its block argument (cf): not fenced, dw
    # was (x - y) + y reassociated into x, 1 instead of 0, at -O2 and -O3 before session 36
    m = zymase.mlir.compile(LOOP_CARRIED, opt_level=opt_level, structured_ad=structured)
    x, y = 1.0, 2.0 ** 60
    assert m.g(2.0, x, y) == (x - y) + y
