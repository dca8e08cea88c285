"""``enzyme.autodiff_region`` / ``enzyme.fwddiff_region`` -> a function and a request.

Run at the start of the enzyme pass. The body of each region request becomes a
private ``func.func`` (its block arguments first, then every value the body uses
from outside, in order of first use; ``enzyme.yield`` becomes ``func.return``), and
the op becomes ``enzyme.autodiff`` / ``enzyme.fwddiff`` of that function with the
same operands and activities, the captured values added as ``enzyme_const``
arguments (Enzyme-MLIR treats them as constants of the region too). The
function is named after the enclosing one (``<f>_region<k>``, made unique).
"""

from __future__ import annotations

from zymase.errors import ZymaseError
from zymase.ir import Block, FunctionType, ModuleOp, Region, SSAValue, func, location_of
from zymase.ir import enzyme as ez

__all__ = ["outline_diff_regions"]


def outline_diff_regions(module: ModuleOp, regions: list | None = None) -> None:
    """Outline ``regions`` (by default every region request of the module, in
    walk order)."""
    if regions is None:
        regions = [op for op in module.walk() if isinstance(op, (ez.AutoDiffRegionOp, ez.FwdDiffRegionOp))]
    if not regions:
        return
    taken = {op.sym_name.data for op in module.body.block.ops if getattr(op, "sym_name", None) is not None}
    # innermost first: an outlined body may hold another region request
    for op in reversed(regions):
        _outline(module, op, taken)


def _enclosing(op) -> str:
    parent = op.parent_op()
    while parent is not None and not hasattr(parent, "sym_name"):
        parent = parent.parent_op()
    return parent.sym_name.data if parent is not None else "region"


def _outline(module: ModuleOp, op, taken: set[str]) -> None:
    owner = _enclosing(op)
    where = dict(construct=op.name, function=owner, location=location_of(op))
    if op.width is not None and op.width.value.data != 1:
        raise ZymaseError("a region request with a width is not supported", **where,
                          hint="differentiate the region with width 1, or outline it into a function "
                          "and use enzyme.autodiff/fwddiff")
    block = op.body.block
    if not isinstance(block.last_op, ez.YieldOp):
        raise ZymaseError("the region must end with enzyme.yield", **where, hint="yield the region's results")
    inside = {o for o in op.body.walk()}
    captured: list[SSAValue] = []
    for inner in op.body.walk():
        for v in inner.operands:
            owner_op = v.owner if not isinstance(v.owner, Block) else v.owner.parent_op()
            defined_inside = (v.owner in inside) if not isinstance(v.owner, Block) else (
                owner_op in inside or v.owner is block)
            if not defined_inside and v not in captured:
                captured.append(v)
    k = 0
    name = f"{owner}_region{k}"
    while name in taken:
        k += 1
        name = f"{owner}_region{k}"
    taken.add(name)

    body = Region()
    op.body.move_blocks(body)
    extra = [block.insert_arg(v.type, len(block.args)) for v in captured]
    for v, arg in zip(captured, extra):
        for use in list(v.uses):
            if use.operation in inside:
                use.operation.operands[use.index] = arg
    term = block.last_op
    results = list(term.values)
    block.insert_op_before(func.ReturnOp(*results), term)
    block.erase_op(term)
    fop = func.FuncOp(name, FunctionType.from_lists([a.type for a in block.args], [v.type for v in results]),
                      body, visibility="private")
    module.body.block.add_op(fop)

    acts = op.arg_activities + [ez.Activity.CONST] * len(captured)
    rets = op.ret_activities
    n_primal = sum(2 if a.is_dup else 1 for a in op.arg_activities)
    operands = list(op.inputs)
    if n_primal > len(operands):
        raise ZymaseError(f"{len(operands)} operands for {len(op.arg_activities)} activities", **where,
                          hint="give each argument (and each dup argument's shadow) and each active result's seed")
    new_operands = operands[:n_primal] + captured + operands[n_primal:]
    cls = ez.AutoDiffOp if isinstance(op, ez.AutoDiffRegionOp) else ez.FwdDiffOp
    request = cls(name, new_operands, list(op.result_types), acts, rets)
    op.parent_block().insert_op_before(request, op)
    for old, new in zip(op.results, request.results):
        old.replace_all_uses_with(new)
    op.parent_block().erase_op(op)
