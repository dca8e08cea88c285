"""``affine`` and parallel loops down to sequential ``scf``/``arith``/``memref``, before AD.

zymase differentiates affine code by lowering it first (Enzyme-MLIR has rules on
affine ops directly; the derivatives are the same, the structure differs): every
affine op becomes the scf/arith/memref ops it means, and the enzyme pass then
differentiates those with the scf region rules. xDSL's own ``lower-affine`` handles
only part of the dialect (no if/parallel/min/max, no symbols), hence this module.

* ``affine.for`` -> ``scf.for``: lower bound the largest result of its map, upper
  bound the smallest, the constant step, the iter_args kept.
* ``affine.if`` -> ``scf.if`` on the conjunction of the set's constraints
  (``e >= 0`` as ``arith.cmpi sge``, ``e == 0`` as ``eq``).
* ``affine.load``/``store`` -> ``memref.load``/``store`` at the map's results;
  ``affine.apply``/``min``/``max`` -> index arithmetic (``mod`` and ``floordiv``
  round towards minus infinity, as affine maps mean).
* ``affine.parallel`` and ``scf.parallel`` -> a nest of ``scf.for`` loops run one
  iteration after the other. Their reductions (``reduce ("addf")`` or ``scf.reduce``
  regions) become iter_args combined in the innermost loop. **The MLIR path has no
  parallel runtime**, so the primal and both derivatives run sequentially: reverse
  mode then needs no atomics for iterations that write disjoint shadow locations,
  and a reduction into a shared value is an ordinary loop-carried sum whose adjoint
  the scf.for rule hands to every iteration.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from zymase.errors import ZymaseError
from zymase.ir import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    Attribute,
    Block,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    Operation,
    Region,
    SSAValue,
    affine,
    affine_ext,
    arith,
    location_of,
    memref,
    scf,
)

__all__ = ["lower_affine", "lower_parallel_loops", "affine_value"]


def lower_affine(module: Operation) -> None:
    """Every affine op -> scf/arith/memref, then every parallel loop -> scf.for nests."""
    for op in list(module.walk()):
        if op.dialect_name() != "affine" or isinstance(op, affine.YieldOp):
            continue
        lower = _LOWERINGS.get(type(op))
        if lower is None:
            raise _error(op, f"'{op.name}' is not supported",
                         "use affine.for/if/load/store/apply/min/max/parallel, or write it with scf and memref")
        lower(op)
    lower_parallel_loops(module)


def lower_parallel_loops(module: Operation) -> None:
    """Every ``scf.parallel`` -> a sequential ``scf.for`` nest (outermost first)."""
    for op in list(module.walk()):
        if isinstance(op, scf.ParallelOp):
            _lower_scf_parallel(op)


# ----------------------------------------------------------------------------- index arithmetic


class _At:
    """Emits ops right before an anchor op."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def v(self, op: Operation) -> SSAValue:
        self.anchor.parent_block().insert_op_before(op, self.anchor)
        return op.results[0]

    def index(self, value: int) -> SSAValue:
        return self.v(arith.ConstantOp(IntegerAttr(value, IndexType()), IndexType()))


def affine_value(at, e: AffineExpr, dims: Sequence[SSAValue], syms: Sequence[SSAValue] = ()) -> SSAValue:
    """An index value computing ``e`` of ``dims`` and ``syms``, emitted by ``at``
    (anything with ``v(op)`` and ``index(n)``). ``mod`` is never negative and
    ``floordiv`` rounds down, as in affine maps."""
    from xdsl.ir.affine import AffineSymExpr

    if isinstance(e, AffineDimExpr):
        return dims[e.position]
    if isinstance(e, AffineSymExpr):
        return syms[e.position]
    if isinstance(e, AffineConstantExpr):
        return at.index(e.value)
    if isinstance(e, AffineBinaryOpExpr):
        lhs, rhs = affine_value(at, e.lhs, dims, syms), affine_value(at, e.rhs, dims, syms)
        if e.kind == AffineBinaryOpKind.Mod:
            # remsi takes the sign of the dividend; affine's mod is in [0, rhs)
            rem = at.v(arith.RemSIOp(lhs, rhs))
            negative = at.v(arith.CmpiOp(rem, at.index(0), "slt"))
            return at.v(arith.SelectOp(negative, at.v(arith.AddiOp(rem, rhs)), rem))
        cls = {
            AffineBinaryOpKind.Add: arith.AddiOp,
            AffineBinaryOpKind.Mul: arith.MuliOp,
            AffineBinaryOpKind.FloorDiv: arith.FloorDivSIOp,
            AffineBinaryOpKind.CeilDiv: arith.CeilDivSIOp,
        }[e.kind]
        return at.v(cls(lhs, rhs))
    raise ZymaseError(f"unsupported affine expression {e}", hint="use +, *, mod, floordiv, ceildiv")


def _map_results(at: _At, amap, operands: Sequence[SSAValue]) -> list[SSAValue]:
    dims, syms = list(operands[: amap.num_dims]), list(operands[amap.num_dims:])
    return [affine_value(at, e, dims, syms) for e in amap.results]


def _fold(at: _At, values: list[SSAValue], cls) -> SSAValue:
    out = values[0]
    for v in values[1:]:
        out = at.v(cls(out, v))
    return out


def _replace(op: Operation, values: Sequence[SSAValue]) -> None:
    for old, new in zip(op.results, values):
        old.replace_all_uses_with(new)
    op.parent_block().erase_op(op)


def _yields_to_scf(region: Region) -> None:
    for block in region.blocks:
        term = block.last_op
        if isinstance(term, affine.YieldOp):
            block.insert_op_before(scf.YieldOp(*term.operands), term)
            block.erase_op(term)


def _take_region(region: Region) -> Region:
    blocks = list(region.blocks)
    for b in blocks:
        region.detach_block(b)
    return Region(blocks)


# ----------------------------------------------------------------------------- affine ops


def _lower_apply(op: affine.ApplyOp) -> None:
    at = _At(op)
    _replace(op, _map_results(at, op.map.data, list(op.mapOperands)))


def _lower_min(op: Operation) -> None:
    at = _At(op)
    _replace(op, [_fold(at, _map_results(at, op.map.data, list(op.operands)), arith.MinSIOp)])


def _lower_max(op: Operation) -> None:
    at = _At(op)
    _replace(op, [_fold(at, _map_results(at, op.map.data, list(op.operands)), arith.MaxSIOp)])


def _lower_load(op: affine.LoadOp) -> None:
    at = _At(op)
    idx = _map_results(at, op.map.data, list(op.indices))
    _replace(op, [at.v(memref.LoadOp.get(op.memref, idx))])


def _lower_store(op: affine.StoreOp) -> None:
    at = _At(op)
    idx = _map_results(at, op.map.data, list(op.indices))
    op.parent_block().insert_op_before(memref.StoreOp.get(op.value, op.memref, idx), op)
    op.parent_block().erase_op(op)


def _lower_for(op: affine.ForOp) -> None:
    at = _At(op)
    lb = _fold(at, _map_results(at, op.lowerBoundMap.data, list(op.lowerBoundOperands)), arith.MaxSIOp)
    ub = _fold(at, _map_results(at, op.upperBoundMap.data, list(op.upperBoundOperands)), arith.MinSIOp)
    step = at.index(op.step.value.data)
    body = _take_region(op.body)
    _yields_to_scf(body)
    loop = scf.ForOp(lb, ub, step, list(op.inits), body)
    op.parent_block().insert_op_before(loop, op)
    _replace(op, loop.results)


def _lower_if(op: affine_ext.IfOp) -> None:
    at = _At(op)
    s = op.condition.data
    args = list(op.args)
    dims, syms = args[: s.num_dims], args[s.num_dims:]
    zero = at.index(0)
    predicate = {">=": "sge", "<=": "sle", "==": "eq"}
    cond = None
    for c in s.constraints:
        lhs = affine_value(at, c.lhs - c.rhs, dims, syms)
        test = at.v(arith.CmpiOp(lhs, zero, predicate[c.kind.value]))
        cond = test if cond is None else at.v(arith.AndIOp(cond, test))
    if cond is None:
        cond = at.v(arith.ConstantOp(IntegerAttr(1, IntegerType(1)), IntegerType(1)))
    then, other = _take_region(op.then_region), _take_region(op.else_region)
    _yields_to_scf(then)
    _yields_to_scf(other)
    new = scf.IfOp(cond, list(op.result_types), then, other if other.blocks else None)
    op.parent_block().insert_op_before(new, op)
    _replace(op, new.results)


def _lower_affine_parallel(op: affine_ext.ParallelOp) -> None:
    at = _At(op)
    lb_ops, ub_ops = op.bound_operands
    lbs = _map_results(at, op.lowerBoundsMap.data, lb_ops)
    ubs = _map_results(at, op.upperBoundsMap.data, ub_ops)
    steps = [at.index(s.value.data) for s in op.steps.data]
    kinds = [k.data for k in op.reductions.data]
    inits = [_identity(at, op, k, t) for k, t in zip(kinds, op.result_types)]
    block = op.body.block
    term = block.last_op

    def combine(emit: _At, accs: list[SSAValue], values: list[SSAValue]) -> list[SSAValue]:
        return [emit.v(_COMBINE[k](a, v)) for k, a, v in zip(kinds, accs, values)]

    _sequential_nest(op, lbs, ubs, steps, inits, block, list(term.operands), term, combine)


def _identity(at: _At, op: Operation, kind: str, t: Attribute) -> SSAValue:
    """The value a reduction starts from (affine.parallel's results are the reduction
    over the iterations alone)."""
    values = {"addf": 0.0, "mulf": 1.0, "maximumf": float("-inf"), "minimumf": float("inf"),
              "maxnumf": float("-inf"), "minnumf": float("inf"), "addi": 0, "muli": 1}
    if kind not in values or kind not in _COMBINE:
        raise _error(op, f"reduction \"{kind}\" is not supported",
                     "use addf, mulf, maximumf, minimumf, maxnumf, minnumf, addi or muli")
    value = values[kind]
    attr = FloatAttr(value, t) if isinstance(value, float) else IntegerAttr(value, t)
    return at.v(arith.ConstantOp(attr, t))


_COMBINE: dict[str, Callable[[SSAValue, SSAValue], Operation]] = {
    "addf": arith.AddfOp, "mulf": arith.MulfOp, "maximumf": arith.MaximumfOp, "minimumf": arith.MinimumfOp,
    "maxnumf": arith.MaxnumfOp, "minnumf": arith.MinnumfOp, "addi": arith.AddiOp, "muli": arith.MuliOp,
}


# ----------------------------------------------------------------------------- scf.parallel


def _lower_scf_parallel(op: scf.ParallelOp) -> None:
    block = op.body.block
    term = block.last_op
    regions = list(term.reductions) if isinstance(term, scf.ReduceOp) else []

    def combine(emit: _At, accs: list[SSAValue], values: list[SSAValue]) -> list[SSAValue]:
        out = []
        for region, acc, value in zip(regions, accs, values):
            rblock = region.block
            mapping = {rblock.args[0]: acc, rblock.args[1]: value}
            result = None
            for rop in rblock.ops:
                if isinstance(rop, scf.ReduceReturnOp):
                    result = mapping.get(rop.result, rop.result)
                    continue
                clone = rop.clone(mapping)
                emit.anchor.parent_block().insert_op_before(clone, emit.anchor)
                for a, b in zip(rop.results, clone.results):
                    mapping[a] = b
            out.append(result)
        return out

    values = list(term.args) if isinstance(term, scf.ReduceOp) else []
    _sequential_nest(op, list(op.lowerBound), list(op.upperBound), list(op.step), list(op.initVals),
                     block, values, term, combine)


def _sequential_nest(op: Operation, lbs, ubs, steps, inits, block: Block, values: list[SSAValue],
                     term: Operation, combine) -> None:
    """Replace the parallel loop ``op`` (body ``block``, whose terminator ``term``
    hands ``values`` to its reductions) by ``for i0: for i1: ...`` carrying the
    reductions' accumulators, which ``combine(emit, accs, values)`` updates."""
    acc_types = [v.type for v in inits]
    loops: list[scf.ForOp] = []
    outer_block = op.parent_block()
    anchor: Operation = op
    carried = list(inits)
    for k, (lb, ub, step) in enumerate(zip(lbs, ubs, steps)):
        body = Block(arg_types=[IndexType(), *acc_types])
        loop = scf.ForOp(lb, ub, step, carried, body)
        if k == 0:
            outer_block.insert_op_before(loop, anchor)
        else:
            loops[-1].body.block.add_op(loop)
        loops.append(loop)
        carried = list(body.args[1:])
    inner = loops[-1].body.block
    for arg, loop in zip(block.args, loops):
        arg.replace_all_uses_with(loop.body.block.args[0])
    for body_op in list(block.ops):
        if body_op is term:
            continue
        body_op.detach()
        inner.add_op(body_op)
    yield_inner = scf.YieldOp()
    inner.add_op(yield_inner)
    new_accs = combine(_At(yield_inner), carried, values)
    inner.erase_op(yield_inner)
    inner.add_op(scf.YieldOp(*new_accs))
    for outer, nested in zip(loops[:-1], loops[1:]):
        outer.body.block.add_op(scf.YieldOp(*nested.results))
    _replace(op, loops[0].results)


def _error(op: Operation, message: str, hint: str) -> ZymaseError:
    parent = op.parent_op()
    while parent is not None and not hasattr(parent, "sym_name"):
        parent = parent.parent_op()
    return ZymaseError(message, construct=op.name,
                       function=parent.sym_name.data if parent is not None else None,  # type: ignore[union-attr]
                       location=location_of(op), hint=hint)


_LOWERINGS: dict[type, Callable[[Operation], None]] = {
    affine.ApplyOp: _lower_apply,
    affine.MinOp: _lower_min,
    affine_ext.MaxOp: _lower_max,
    affine.LoadOp: _lower_load,
    affine_ext.LoadOp: _lower_load,
    affine.StoreOp: _lower_store,
    affine_ext.StoreOp: _lower_store,
    affine.ForOp: _lower_for,
    affine_ext.IfOp: _lower_if,
    affine_ext.ParallelOp: _lower_affine_parallel,
}
