"""The ``enzyme`` pass: replace every ``enzyme.autodiff`` / ``enzyme.fwddiff`` op by a
call to a generated derivative function (func/arith/math/cf or llvm flavor)."""

from __future__ import annotations

from zymase.autodiff.common import fwd_signature, rev_signature
from zymase.autodiff.driver import Driver
from zymase.autodiff.flavor import Emitter, flavor_of
from zymase.errors import ZymaseError
from zymase.ir import ModuleOp, location_of
from zymase.ir import enzyme as ez
from zymase.transforms.nested_requests import differentiable_derivatives, enclosing_function, request_rounds


def _enclosing_function(op) -> str | None:
    parent = enclosing_function(op)
    return parent.sym_name.data if parent is not None else None


def run_enzyme_pass(module: ModuleOp) -> ModuleOp:
    """Every request, in rounds when requests are nested (an inner derivative exists,
    made differentiable, before a request that reaches it is lowered:
    transforms/nested_requests.py)."""
    driver = Driver(module)
    for k, requests in enumerate(request_rounds(module)):
        if k:
            differentiable_derivatives(module, _symbols(module) - before)
        before = _symbols(module)
        for op in requests:
            _lower_request(op, driver, module)
    return module


def _symbols(module: ModuleOp) -> set[str]:
    return {op.sym_name.data for op in module.body.block.ops if getattr(op, "sym_name", None) is not None}


def _lower_request(op, driver: Driver, module: ModuleOp) -> None:
    if isinstance(op, ez.SplitDiffOp):
        from zymase.transforms.split_mode import lower_split_op

        lower_split_op(op, driver, module)
        return
    fname = op.fn.root_reference.data
    where = dict(construct=f"{op.name} @{fname}", function=_enclosing_function(op), location=location_of(op))
    fop = driver.lookup_function(fname)
    if fop is None:
        raise ZymaseError(f"no function named '{fname}'", **where, hint="check the symbol name")
    fop = driver.function(fname)
    flavor = flavor_of(fop)
    inputs, outputs = flavor.signature(fop)
    arg_acts, ret_acts = op.arg_activities, op.ret_activities
    if len(arg_acts) != len(inputs) or len(ret_acts) != len(outputs):
        raise ZymaseError(
            f"'{fname}' has {len(inputs)} arguments and {len(outputs)} results, but "
            f"{len(arg_acts)} activities and {len(ret_acts)} return activities were given",
            **where,
            hint="give one activity per argument and one ret_activity per result",
        )
    is_rev = isinstance(op, ez.AutoDiffOp)
    width = op.lanes
    ins, outs = (rev_signature if is_rev else fwd_signature)(inputs, outputs, arg_acts, ret_acts, width)
    got_in = [o.type for o in op.operands]
    got_out = [r.type for r in op.results]
    if got_in != ins or got_out != outs:
        def sig(a, b):
            return f"({', '.join(map(str, a))}) -> ({', '.join(map(str, b))})"

        raise ZymaseError(
            f"operand/result types {sig(got_in, got_out)} do not match the derivative signature "
            f"{sig(ins, outs)}",
            **where,
            hint="dup arguments are followed by their shadow (width shadows in vector mode); "
            "active results take a seed operand",
        )
    generate = driver.reverse if is_rev else driver.forward
    name = generate(fop, arg_acts, ret_acts, entry=True, **({"width": width} if width > 1 else {}))
    E = Emitter(flavor, module).before(op)
    results = E.call(name, list(op.operands), outs)
    for old, new in zip(op.results, results):
        old.replace_all_uses_with(new)
    op.parent_block().erase_op(op)
