"""The StableHLO rewrites compute what the programs they rewrite compute (issue 28
item 3): every function of the FileCheck test tests/mlir/filecheck/stablehlo_simplify.mlir
is run by XLA before and after ``stablehlo-simplify`` on the same random inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from zymase.frontends import jax as front  # noqa: E402
from zymase.ir import ModuleOp, StringAttr, func, parse_mlir, print_mlir  # noqa: E402
from zymase.transforms.hlo_rewrites import simplify  # noqa: E402

SOURCE = Path(__file__).parents[1] / "mlir" / "filecheck" / "stablehlo_simplify.mlir"
FUNCTIONS = [op.sym_name.data for op in parse_mlir(SOURCE.read_text()).ops]


def _as_main(name: str, simplified: bool) -> ModuleOp:
    module = parse_mlir(SOURCE.read_text())
    if simplified:
        simplify(module)
    for op in list(module.ops):
        if op.sym_name.data != name:
            op.detach()
    (fop,) = module.ops
    fop.sym_name = StringAttr("main")
    return module


_DTYPES = {"f64": np.float64, "f32": np.float32, "integer_type": np.bool_}


def _random(t, rng):
    shape = tuple(t.get_shape())
    if t.element_type.name == "integer_type":  # predicates
        return rng.integers(0, 2, shape).astype(bool)
    return rng.normal(size=shape).astype(_DTYPES[t.element_type.name])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_rewritten_function_computes_the_same(name):
    before, after = _as_main(name, False), _as_main(name, True)
    (fop,) = before.ops
    assert isinstance(fop, func.FuncOp)
    rng = np.random.default_rng(0)
    args = [_random(t, rng) for t in fop.function_type.inputs.data]
    avals = [jax.core.ShapedArray(tuple(t.get_shape()), _DTYPES[t.element_type.name])
             for t in fop.function_type.outputs.data]
    want = front.run(print_mlir(before), args, avals)
    got = front.run(print_mlir(after), args, avals)
    assert print_mlir(before) != print_mlir(after)  # the pattern fired
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_liberties_leave_the_users_computation_alone():
    # pad(x, 0) * y -> pad(x * slice(y), 0) is a strong zero: right for an adjoint, wrong
    # for the primal, where 0 * inf is NaN. Only derivative code gets it.
    import jax.numpy as jnp
    from jax import lax

    import zymase.jax as zj

    def f(x, y):
        return jnp.sum(lax.pad(x, 0.0, [(1, 1, 0)]) * y)

    x, y = jnp.asarray([1.0, 2.0]), jnp.asarray([np.inf, 3.0, 4.0, np.inf])
    value, grad = zj.value_and_grad(f)(x, y)
    assert np.isnan(value) and np.isnan(f(x, y))
    np.testing.assert_array_equal(grad, [3.0, 4.0])
