"""The ``enzyme`` pass: replace every ``enzyme.autodiff`` / ``enzyme.fwddiff`` op by a
call to a generated derivative function (func/arith/math/cf or llvm flavor), and every
``enzyme.batch`` by a call to a batched copy (zymase.transforms.batch)."""

from __future__ import annotations

from zymase.analysis.op_classes import is_a
from zymase.autodiff.common import fwd_signature, rev_signature
from zymase.autodiff.driver import Driver
from zymase.autodiff.flavor import Emitter, flavor_of
from zymase.errors import ZymaseError
from zymase.ir import ModuleOp, location_of
from zymase.ir import enzyme as ez
from zymase.ir.walk import walk_ops
from zymase.transforms.global_shadow_reset import zero_shadows
from zymase.transforms.nested_requests import differentiable_derivatives, enclosing_function, request_rounds


def _enclosing_function(op) -> str | None:
    parent = enclosing_function(op)
    return parent.sym_name.data if parent is not None else None


def run_enzyme_pass(module: ModuleOp) -> ModuleOp:
    """Every request, in rounds when requests are nested (an inner derivative exists,
    made differentiable, before a request that reaches it is lowered:
    transforms/nested_requests.py)."""
    # one walk for both (the C path calls this once per marker site, on big modules)
    batches, regions = [], []
    for op in walk_ops(module):
        if is_a(op, ez.BatchOp):
            batches.append(op)
        elif is_a(op, (ez.AutoDiffRegionOp, ez.FwdDiffRegionOp)):
            regions.append(op)
    # batching first: a batched function's copies of enzyme ops are requests too
    for op in batches:
        from zymase.transforms.batch import lower_batch_op

        lower_batch_op(op, module, _enclosing_function(op))
    if regions:
        from zymase.transforms.diff_regions import outline_diff_regions

        outline_diff_regions(module, regions)  # -> functions + enzyme.autodiff/fwddiff
    driver = Driver(module)
    before: set[str] = set()  # the module's symbols before the round just lowered
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
    signature = rev_signature if is_rev else fwd_signature
    ins, outs = signature(inputs, outputs, arg_acts, ret_acts, width)
    got_in = [o.type for o in op.operands]
    got_out = [r.type for r in op.results]
    tensors = signature(inputs, outputs, arg_acts, ret_acts, width, tensor_lanes=True)
    as_tensors = width > 1 and (got_in, got_out) == tensors
    if (got_in != ins or got_out != outs) and not as_tensors:
        def sig(a, b):
            return f"({', '.join(map(str, a))}) -> ({', '.join(map(str, b))})"

        batched = f" (or, with the lanes as tensors, {sig(*tensors)})" if width > 1 else ""
        raise ZymaseError(
            f"operand/result types {sig(got_in, got_out)} do not match the derivative signature "
            f"{sig(ins, outs)}{batched}",
            **where,
            hint="dup arguments are followed by their shadow (width shadows in vector mode); "
            "active results take a seed operand",
        )
    generate = driver.reverse if is_rev else driver.forward
    if not is_rev and getattr(op, "laplacian", None) is not None:
        generate = driver.laplacian
    name = generate(fop, arg_acts, ret_acts, entry=True, **({"width": width} if width > 1 else {}))
    E = Emitter(flavor, module).before(op)
    if flavor.name == "llvm":
        zero_shadows(driver, [name], lambda new: E.v(new) if new.results else E.insert(new))
    if as_tensors:
        from zymase.transforms.batch import deliver_lanes, erase_unused_tensors, tensor_lanes

        # a tensor where the flattened signature has a lane is that lane group
        in_groups, out_groups = _lane_groups(tensors[0], ins), _lane_groups(tensors[1], outs)
        operands = [x for v, group in zip(op.operands, in_groups)
                    for x in (tensor_lanes(v, width, E) if group else [v])]
        results = iter(E.call(name, operands, outs))
        for old, group in zip(list(op.results), out_groups):
            lanes = [next(results) for _ in range(width if group else 1)]
            if group:
                deliver_lanes(old, lanes, E)
            else:
                old.replace_all_uses_with(lanes[0])
        given = list(op.operands)
        op.parent_block().erase_op(op)
        erase_unused_tensors(given)
        return
    results = E.call(name, list(op.operands), outs)
    for old, new in zip(op.results, results):
        old.replace_all_uses_with(new)
    op.parent_block().erase_op(op)


def _lane_groups(batched: list, flat: list) -> list[bool]:
    """Per type of the tensor-lanes signature: whether it stands for a group of lanes
    of the flattened one (where the two differ) rather than one value."""
    groups, j = [], 0
    for t in batched:
        group = t != flat[j]
        groups.append(group)
        j += t.get_shape()[0] if group else 1
    return groups
