"""The StableHLO rewrites compute what the programs they rewrite compute (issue 28
item 3). Every function of the FileCheck tests tests/mlir/filecheck/stablehlo_simplify.mlir
and stablehlo_rewrites_*.mlir (one per registered pattern, named after it) is run by XLA
before and after ``stablehlo-simplify`` on the same random inputs: all the functions of
one file, both versions, in one XLA program (one compilation per pattern family)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from zymase.frontends import jax as front  # noqa: E402
from zymase.ir import FunctionType, ModuleOp, StringAttr, func, parse_mlir, print_mlir  # noqa: E402
from zymase.transforms.hlo_rewrites import REWRITES, simplify  # noqa: E402

FILECHECK = Path(__file__).parents[1] / "mlir" / "filecheck"
FAMILIES = ["stablehlo_simplify", "stablehlo_rewrites_algebra", "stablehlo_rewrites_movement",
            "stablehlo_rewrites_reduce"]
_DTYPES = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32,
           "i1": np.bool_}


def _dtype(t):
    e = t.element_type
    return _DTYPES[e.name if e.name in _DTYPES else f"i{e.width.data}"]


def _random(t, rng):
    shape, dtype = tuple(t.get_shape()), _dtype(t)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == np.int64:
        return rng.integers(0, 3, shape).astype(np.int64)
    return rng.normal(size=shape).astype(dtype)


def _functions(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp)]


def _both_versions(family: str) -> tuple[ModuleOp, list[str]]:
    """One module: every function of the file as it is (``b_<name>``) and simplified
    (``a_<name>``), and a ``@main`` calling all of them on its arguments."""
    text = (FILECHECK / f"{family}.mlir").read_text()
    before, after = parse_mlir(text), parse_mlir(text)
    simplify(after)
    names = [f.sym_name.data for f in _functions(before)]
    changed = [n for f, g, n in zip(_functions(before), _functions(after), names)
               if print_mlir(ModuleOp([f.clone()])) != print_mlir(ModuleOp([g.clone()]))]
    combined = ModuleOp([])
    inputs, outputs = [], []
    for prefix, module in (("b_", before), ("a_", after)):
        for f in _functions(module):
            f.detach()
            f.sym_name = StringAttr(prefix + f.sym_name.data)
            f.sym_visibility = StringAttr("private")
            combined.body.blocks[0].add_op(f)
            if prefix == "b_":
                inputs += list(f.function_type.inputs.data)
            outputs += list(f.function_type.outputs.data)
    main = func.FuncOp("main", FunctionType.from_lists(inputs, outputs))
    block = main.body.blocks[0]
    results = []
    for prefix in ("b_", "a_"):
        k = 0
        for f in _functions(combined):
            if not f.sym_name.data.startswith(prefix):
                continue
            n = len(f.function_type.inputs.data)
            call = func.CallOp(f.sym_name.data, list(block.args[k:k + n]), list(f.function_type.outputs.data))
            block.add_op(call)
            results += list(call.results)
            k += n
    block.add_op(func.ReturnOp(*results))
    combined.body.blocks[0].add_op(main)
    return combined, names, changed


@pytest.mark.parametrize("family", FAMILIES)
def test_rewritten_functions_compute_the_same(family):
    module, names, changed = _both_versions(family)
    assert changed == names, f"no rewrite fired in {sorted(set(names) - set(changed))}"
    (main,) = [f for f in _functions(module) if f.sym_name.data == "main"]
    rng = np.random.default_rng(0)
    args = [_random(t, rng) for t in main.function_type.inputs.data]
    avals = [jax.core.ShapedArray(tuple(t.get_shape()), _dtype(t)) for t in main.function_type.outputs.data]
    outs = [np.asarray(o) for o in front.run(print_mlir(module), args, avals)]
    half = len(outs) // 2
    reorders = {r.name for r in REWRITES if r.reorders_sum}
    per_function = [len(f.function_type.outputs.data) for f in _functions(module) if f.sym_name.data.startswith("b_")]
    k = 0
    for name, n in zip(names, per_function):
        for want, got in zip(outs[k:k + n], outs[half + k:half + k + n]):
            if name in reorders:  # XLA orders a sum's additions as it likes
                np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
            else:
                np.testing.assert_array_equal(got, want, err_msg=name)
        k += n


def test_every_registered_rewrite_has_its_test_function():
    defined = set()
    for family in FAMILIES[1:]:
        defined |= {f.sym_name.data for f in _functions(parse_mlir((FILECHECK / f"{family}.mlir").read_text()))}
    assert len(REWRITES) >= 60
    missing = sorted(r.name for r in REWRITES if r.name not in defined)
    assert not missing, f"rewrites without a FileCheck/numeric test function: {missing}"


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


def test_zymase_opt_lists_the_rewrites(capsys):
    from zymase.cli import opt_main

    assert opt_main(["--list-rewrites"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(REWRITES)
    assert any(line.startswith("slice_elementwise") and "stablehlo.slice" in line for line in lines)
    assert any(line.startswith("multiply_zero ") and "derivative code only" in line for line in lines)
