"""Enzyme-MLIR's ``enzyme.batch @f(...) {batch_shape = array<i64: N>}`` (issue 25 item 2,
MLIR): f of scalars evaluated on N lanes given as ``tensor<Nxf64>`` operands, checked
lane by lane against N calls of f and a closed form through ``zymase.mlir.compile``,
over a cf loop and a callee, over an scf.for, and of a gradient; a tensor whose lanes are one value (``tensor.from_elements
%a, %a, ...`` or ``tensor.splat``) is shared by the lanes, so a loop bound given that
way is one loop. Malformed requests and branches on lane values are refused by name."""

from __future__ import annotations

import math

import pytest

import zymase.mlir
from zymase.errors import ZymaseError
from zymase.ir import parse_mlir, print_mlir

# f(x, a, n) = sum_{i<n} g(x * a^i), g(p) = sin(p) + p * p, over a cf loop
F = """
func.func private @g(%p: f64) -> f64 {
  %s = math.sin %p : f64
  %q = arith.mulf %p, %p : f64
  %r = arith.addf %s, %q : f64
  func.return %r : f64
}
func.func @f(%x: f64, %a: f64, %n: i64) -> f64 {
  %z = arith.constant 0.0 : f64
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  cf.br ^loop(%c0, %z, %x : i64, f64, f64)
^loop(%i: i64, %s: f64, %p: f64):
  %more = arith.cmpi slt, %i, %n : i64
  cf.cond_br %more, ^body, ^done
^body:
  %t = func.call @g(%p) : (f64) -> f64
  %s2 = arith.addf %s, %t : f64
  %p2 = arith.mulf %p, %a : f64
  %i2 = arith.addi %i, %c1 : i64
  cf.br ^loop(%i2, %s2, %p2 : i64, f64, f64)
^done:
  func.return %s : f64
}
"""

MODULE = F + """
func.func @batch4(%x0: f64, %x1: f64, %x2: f64, %x3: f64, %a: f64, %n: i64) -> (f64, f64, f64, f64) {
  %xs = tensor.from_elements %x0, %x1, %x2, %x3 : tensor<4xf64>
  %as = tensor.from_elements %a, %a, %a, %a : tensor<4xf64>
  %ns = tensor.splat %n : tensor<4xi64>
  %r = enzyme.batch @f(%xs, %as, %ns) {batch_shape = array<i64: 4>}
    : (tensor<4xf64>, tensor<4xf64>, tensor<4xi64>) -> tensor<4xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %r0 = tensor.extract %r[%c0] : tensor<4xf64>
  %r1 = tensor.extract %r[%c1] : tensor<4xf64>
  %r2 = tensor.extract %r[%c2] : tensor<4xf64>
  %r3 = tensor.extract %r[%c3] : tensor<4xf64>
  func.return %r0, %r1, %r2, %r3 : f64, f64, f64, f64
}
func.func @batch3_vector_a(%x: f64, %a0: f64, %a1: f64, %a2: f64, %n: i64) -> (f64, f64, f64) {
  %xs = tensor.splat %x : tensor<3xf64>
  %as = tensor.from_elements %a0, %a1, %a2 : tensor<3xf64>
  %ns = tensor.from_elements %n, %n, %n : tensor<3xi64>
  %r = enzyme.batch @f(%xs, %as, %ns) {batch_shape = array<i64: 3>}
    : (tensor<3xf64>, tensor<3xf64>, tensor<3xi64>) -> tensor<3xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r0 = tensor.extract %r[%c0] : tensor<3xf64>
  %r1 = tensor.extract %r[%c1] : tensor<3xf64>
  %r2 = tensor.extract %r[%c2] : tensor<3xf64>
  func.return %r0, %r1, %r2 : f64, f64, f64
}
"""


def closed_form(x, a, n):
    return sum(math.sin(x * a**i) + (x * a**i) ** 2 for i in range(n))


@pytest.fixture(scope="module")
def mod():
    return zymase.mlir.compile(MODULE)


def test_batch_of_four_lanes_equals_four_calls(mod):
    xs, a, n = (0.3, -1.2, 2.5, 0.75), 0.9, 5
    got = mod.batch4(*xs, a, n)
    for k in range(4):
        assert got[k] == pytest.approx(mod.f(xs[k], a, n), rel=1e-15, abs=1e-15)
        assert got[k] == pytest.approx(closed_form(xs[k], a, n), rel=1e-12)


def test_batch_with_a_shared_x_and_per_lane_a(mod):
    x, as_, n = 0.4, (1.1, -0.5, 0.25), 4
    got = mod.batch3_vector_a(x, *as_, n)
    for k in range(3):
        assert got[k] == pytest.approx(mod.f(x, as_[k], n), rel=1e-15, abs=1e-15)
        assert got[k] == pytest.approx(closed_form(x, as_[k], n), rel=1e-12)


SCF = """
func.func @poly(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one) -> (f64) {
    %t = arith.mulf %acc, %x : f64
    %u = math.cos %t : f64
    %v = arith.addf %u, %x : f64
    scf.yield %v : f64
  }
  func.return %r : f64
}
func.func @batch2(%x0: f64, %x1: f64, %n: index) -> (f64, f64) {
  %xs = tensor.from_elements %x0, %x1 : tensor<2xf64>
  %ns = tensor.splat %n : tensor<2xindex>
  %r = enzyme.batch @poly(%xs, %ns) {batch_shape = array<i64: 2>} : (tensor<2xf64>, tensor<2xindex>) -> tensor<2xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r0 = tensor.extract %r[%c0] : tensor<2xf64>
  %r1 = tensor.extract %r[%c1] : tensor<2xf64>
  func.return %r0, %r1 : f64, f64
}
"""


def test_batch_of_structured_control_flow():
    # scf.for with lane values in its body: the batched copy is made from the
    # function with its scf lowered to branches, the loop shared by the lanes
    def poly(x, n):
        acc = 1.0
        for _ in range(n):
            acc = math.cos(acc * x) + x
        return acc

    for structured in (True, False):
        m = zymase.mlir.compile(SCF, structured_ad=structured)
        got = m.batch2(0.3, -0.8, 6)
        assert got == pytest.approx((m.poly(0.3, 6), m.poly(-0.8, 6)), rel=1e-15)
        assert got == pytest.approx((poly(0.3, 6), poly(-0.8, 6)), rel=1e-13)


GRADIENT = """
func.func @h(%x: f64) -> f64 {
  %s = math.sin %x : f64
  %y = arith.mulf %s, %x : f64
  func.return %y : f64
}
func.func private @dh(%x: f64) -> f64 {
  %one = arith.constant 1.0 : f64
  %d = enzyme.autodiff @h(%x, %one) {activity = [#enzyme<activity enzyme_active>],
    ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64) -> f64
  func.return %d : f64
}
func.func @gradients(%x0: f64, %x1: f64, %x2: f64) -> (f64, f64, f64) {
  %xs = tensor.from_elements %x0, %x1, %x2 : tensor<3xf64>
  %r = enzyme.batch @dh(%xs) {batch_shape = array<i64: 3>} : (tensor<3xf64>) -> tensor<3xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r0 = tensor.extract %r[%c0] : tensor<3xf64>
  %r1 = tensor.extract %r[%c1] : tensor<3xf64>
  %r2 = tensor.extract %r[%c2] : tensor<3xf64>
  func.return %r0, %r1, %r2 : f64, f64, f64
}
"""


def test_batched_gradient():
    # a batched function holding enzyme.autodiff: its lanes' requests are differentiated
    xs = (0.3, 1.2, -2.0)
    got = zymase.mlir.compile(GRADIENT).gradients(*xs)
    assert got == pytest.approx([math.cos(x) * x + math.sin(x) for x in xs], rel=1e-14)


def test_batch_op_round_trips_in_enzyme_spelling():
    text = print_mlir(parse_mlir(MODULE))
    assert "enzyme.batch @f(" in text and "batch_shape = array<i64: 4>" in text


def test_branch_on_a_lane_value_is_refused():
    text = F + """
    func.func @bad(%x: f64, %a: f64, %n0: i64, %n1: i64) -> tensor<2xf64> {
      %xs = tensor.splat %x : tensor<2xf64>
      %as = tensor.splat %a : tensor<2xf64>
      %ns = tensor.from_elements %n0, %n1 : tensor<2xi64>
      %r = enzyme.batch @f(%xs, %as, %ns) {batch_shape = array<i64: 2>}
        : (tensor<2xf64>, tensor<2xf64>, tensor<2xi64>) -> tensor<2xf64>
      func.return %r : tensor<2xf64>
    }
    """
    with pytest.raises(ZymaseError, match="a branch on a value that differs between lanes"):
        zymase.mlir.compile(text)


@pytest.mark.parametrize("operand, shape, message", [
    ("tensor<3xf64>", "4", r"operand 1 of enzyme.batch @h is tensor<3xf64>, but batch_shape \[4\] and parameter 1 "
                           r"\(f64\) of @h make it tensor<4xf64>"),
    ("tensor<2x2xf64>", "2, 2", r"batch_shape \[2, 2\]: zymase batches over one dimension"),
])
def test_malformed_batch_is_refused(operand, shape, message):
    text = """
    func.func @h(%x: f64) -> f64 {
      %y = arith.mulf %x, %x : f64
      func.return %y : f64
    }
    func.func @bad(%xs: OPERAND) -> OPERAND {
      %r = enzyme.batch @h(%xs) {batch_shape = array<i64: SHAPE>} : (OPERAND) -> OPERAND
      func.return %r : OPERAND
    }
    """.replace("OPERAND", operand).replace("SHAPE", shape)
    with pytest.raises(ZymaseError, match=message):
        zymase.mlir.compile(text)
