"""StableHLO rewrites on programs they must leave alone (issue 28 item 3); the patterns'
own FileCheck and XLA tests are tests/mlir/filecheck/stablehlo_rewrites_*.mlir and
tests/jax/test_hlo_rewrites.py."""

from zymase.ir import parse_mlir, print_mlir
from zymase.transforms.hlo_rewrites import simplify

INTEGER_SUM_OF_BROADCAST = """
func.func @count(%v: tensor<3xi32>) -> tensor<3xi32> {
  %z = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
  %b = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 1>}> : (tensor<3xi32>) -> tensor<5x3xi32>
  %r = "stablehlo.reduce"(%b, %z) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<i32>, %c: tensor<i32>):
    %s = "stablehlo.add"(%a, %c) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    "stablehlo.return"(%s) : (tensor<i32>) -> ()
  }) : (tensor<5x3xi32>, tensor<i32>) -> tensor<3xi32>
  func.return %r : tensor<3xi32>
}
"""


def test_reduce_of_broadcast_leaves_integer_sums_alone():
    # reduce_broadcast scales by a float splat: an integer sum once crashed simplify
    module = parse_mlir(INTEGER_SUM_OF_BROADCAST)
    simplify(module)
    assert '"stablehlo.reduce"' in print_mlir(module)


# sum(g * d) * s with p = d * broadcast(s) in the program, but d also read by a
# dot_general (ADBench GMM's x - m): reading p instead would keep both in memory
SCALED_SUM_OF_A_SHARED_DIFFERENCE = """
func.func @shared(%d: tensor<4x3xf64>, %s: tensor<3xf64>, %g: tensor<4x3xf64>) -> (tensor<4x3xf64>, tensor<3xf64>, tensor<3x3xf64>) {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f64>}> : () -> tensor<f64>
  %sb = "stablehlo.broadcast_in_dim"(%s) <{broadcast_dimensions = array<i64: 1>}> : (tensor<3xf64>) -> tensor<4x3xf64>
  %p = "stablehlo.multiply"(%d, %sb) : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %q = "stablehlo.multiply"(%g, %d) : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = "stablehlo.reduce"(%q, %z) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f64>, %c: tensor<f64>):
    %t = "stablehlo.add"(%a, %c) : (tensor<f64>, tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%t) : (tensor<f64>) -> ()
  }) : (tensor<4x3xf64>, tensor<f64>) -> tensor<3xf64>
  %w = "stablehlo.multiply"(%r, %s) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %dd = "stablehlo.dot_general"(%d, %d) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>}> : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<3x3xf64>
  func.return %p, %w, %dd : tensor<4x3xf64>, tensor<3xf64>, tensor<3x3xf64>
}
"""


def test_scaled_sum_keeps_reading_a_difference_something_else_reads():
    module = parse_mlir(SCALED_SUM_OF_A_SHARED_DIFFERENCE)
    simplify(module)
    text = print_mlir(module)
    assert '"stablehlo.multiply"(%g, %d)' in text and '"stablehlo.multiply"(%r, %s)' in text


# session 32: slice_slice composed an empty slice of a strided slice (what
# lax.associative_scan's odd halves lower to) into start 2, limit 1, which jaxlib rejects
EMPTY_SLICE_OF_A_STRIDED_SLICE = """
func.func @halves(%x: tensor<5xf64>) -> tensor<0xf64> {
  %e = "stablehlo.slice"(%x) <{start_indices = array<i64: 1>, limit_indices = array<i64: 5>, strides = array<i64: 2>}> : (tensor<5xf64>) -> tensor<2xf64>
  %n = "stablehlo.slice"(%e) <{start_indices = array<i64: 2>, limit_indices = array<i64: 2>, strides = array<i64: 2>}> : (tensor<2xf64>) -> tensor<0xf64>
  func.return %n : tensor<0xf64>
}
"""


def test_slice_of_slice_leaves_empty_slices_valid():
    import re

    module = parse_mlir(EMPTY_SLICE_OF_A_STRIDED_SLICE)
    simplify(module)
    for start, limit in re.findall(r"start_indices = array<i64: (\d+)>, limit_indices = array<i64: (\d+)>",
                                   print_mlir(module)):
        assert int(start) <= int(limit)
