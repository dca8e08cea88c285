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
