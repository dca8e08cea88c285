"""Structured ops down to loops, and loops down to branches.

Runs before the llvm lowering (and before differentiation, which works on
branches): affine ops and parallel loops become sequential scf (``transforms/lower_affine``),
each ``linalg.generic`` on memrefs and each ``memref.copy`` becomes a
nest of ``scf.for`` loops of ``memref.load``/``memref.store``, then xDSL's
convert-scf-to-cf turns every ``scf`` op into ``cf`` branches.

``linalg.generic``: one loop per iteration dimension, outermost first, bounds
taken from the operand dimensions that the indexing maps name directly (so
reductions are loops that read, update and write the output element, which is
what the op means on memrefs). ``linalg.index`` gives the induction variable,
``linalg.yield`` stores into the outputs.
"""

from __future__ import annotations

from collections.abc import Sequence

from zymase.errors import ZymaseError
from zymase.ir import (
    AffineDimExpr,
    AffineExpr,
    Block,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    Operation,
    Region,
    SSAValue,
    arith,
    convert_scf_to_cf,
    linalg,
    location_of,
    memref,
    scf,
)
from zymase.ir import memref_ext

__all__ = ["lower_structured", "lower_to_loops", "prepare_for_differentiation", "emit_loop_nest", "loop_bounds"]


def lower_structured(module: ModuleOp) -> ModuleOp:
    """linalg.generic / memref.copy -> scf loops -> cf branches, in place."""
    lower_to_loops(module)
    scf_to_cf(module)
    return module


def scf_to_cf(module: ModuleOp) -> None:
    """Every scf op -> cf branches: xDSL's convert-scf-to-cf for scf.for/if, ours for
    scf.while (which xDSL 0.74 does not lower), alternating until none is left
    (a while nested in a for is reached once the for is gone, and the other way
    round)."""
    while any(op.dialect_name() == "scf" for op in module.walk()):
        convert_scf_to_cf(module)
        whiles = [op for op in module.walk() if isinstance(op, scf.WhileOp)]
        outer = [w for w in whiles if w.parent_op() is not None and w.parent_op().dialect_name() != "scf"]
        for w in outer:
            _lower_while(w)


def _lower_while(op: scf.WhileOp) -> None:
    """``scf.while`` -> ``br ^before(init)``; ``^before``: ... ``cond_br %c,
    ^after(args), ^continue(args)``; ``^after``: ... ``br ^before(yielded)``."""
    from zymase.ir import cf

    block = op.parent_block()
    region = block.parent
    cont = block.split_before(op)
    for r in op.results:
        r.replace_all_uses_with(cont.insert_arg(r.type, len(cont.args)))
    before = list(op.before_region.blocks)
    after = list(op.after_region.blocks)
    for b in before:
        op.before_region.detach_block(b)
    for b in after:
        op.after_region.detach_block(b)
    region.insert_block_before([*before, *after], cont)
    block.add_op(cf.BranchOp(before[0], *op.arguments))
    for b in before:
        term = b.last_op
        if isinstance(term, scf.ConditionOp):
            new = cf.ConditionalBranchOp(term.condition, after[0], list(term.args), cont, list(term.args))
            b.insert_op_before(new, term)
            b.erase_op(term)
    for b in after:
        term = b.last_op
        if isinstance(term, scf.YieldOp):
            b.insert_op_before(cf.BranchOp(before[0], *term.operands), term)
            b.erase_op(term)
    cont.erase_op(op)


def prepare_for_differentiation(module: ModuleOp, *, structured: bool = False) -> ModuleOp:
    """Before AD: linalg.generic -> scf loops, then, unless ``structured``, scf -> cf
    (the CFG path: AD differentiates branches). ``structured`` keeps scf for the
    region rules (autodiff/rules/scf.py) — except when a function mixes cf blocks
    with scf ops, which the structured generator does not take: then the whole
    module falls back to branches. ``memref.copy`` stays: it has its own rule."""
    lower_to_loops(module, copies=False)
    if structured and not _mixes_cf_and_scf(module):
        return module
    scf_to_cf(module)
    return module


def _mixes_cf_and_scf(module: ModuleOp) -> bool:
    """A function body of several blocks that also holds scf ops."""
    for fop in module.body.block.ops:
        body = getattr(fop, "body", None)
        if isinstance(body, Region) and len(body.blocks) > 1:
            if any(op.dialect_name() == "scf" for op in fop.walk()):
                return True
    return False


def lower_to_loops(module: ModuleOp, *, copies: bool = True) -> ModuleOp:
    """Only the first step: affine and parallel loops (transforms/lower_affine),
    linalg.generic (and memref.copy) -> sequential scf loops; and the other
    rewrites every MLIR input gets before AD and lowering: complex values -> pairs
    of floats (transforms/lower_complex), llvm.intr.* ops -> llvm.call_intrinsic
    (transforms/llvm_intrinsic_calls)."""
    ops = list(module.walk())
    # one look at the op names decides which rewrites run (on the C path none does,
    # and each would walk the whole module again)
    names = {op.name for op in ops}
    dialects = {n.partition(".")[0] for n in names}
    rewritten = False
    if "affine" in dialects or "scf.parallel" in names:
        from zymase.transforms.lower_affine import lower_affine

        lower_affine(module)
        rewritten = True
    if "complex" in dialects or "func" in dialects:
        from zymase.transforms.lower_complex import lower_complex

        rewritten |= lower_complex(module)
    if any(n.startswith("llvm.intr.") for n in names):
        from zymase.transforms.llvm_intrinsic_calls import intrinsic_ops_to_calls

        intrinsic_ops_to_calls(module)
        rewritten = True
    if rewritten:
        ops = list(module.walk())
    for op in ops:
        if isinstance(op, linalg.GenericOp):
            _lower_generic(op)
        elif isinstance(op, memref_ext.CopyOp) and copies:
            _lower_copy(op)
        elif op.dialect_name() == "linalg" and not isinstance(op, (linalg.YieldOp, linalg.IndexOp)):
            raise _error(op, f"'{op.name}' cannot be lowered yet",
                         "write it as a linalg.generic (elementwise maps and reductions are supported)")
    return module


# ----------------------------------------------------------------------------- loops


class _Builder:
    """Appends ops before an anchor op (the structured op being replaced)."""

    def __init__(self, anchor: Operation):
        self.block = anchor.parent_block()
        self.anchor: Operation | None = anchor

    def add(self, op: Operation) -> Operation:
        assert self.block is not None
        if self.anchor is None:
            self.block.add_op(op)
        else:
            self.block.insert_op_before(op, self.anchor)
        return op

    def v(self, op: Operation) -> SSAValue:
        return self.add(op).results[0]

    def index(self, value: int) -> SSAValue:
        return self.v(arith.ConstantOp(IntegerAttr(value, IndexType()), IndexType()))

    def dim(self, m: SSAValue, i: int) -> SSAValue:
        size = m.type.get_shape()[i]  # type: ignore[attr-defined]
        if size >= 0:
            return self.index(size)
        return self.v(memref.DimOp(m, self.index(i)))


def _builder_at(anchor_or_block) -> _Builder:
    if isinstance(anchor_or_block, Block):
        b = _Builder.__new__(_Builder)
        b.block, b.anchor = anchor_or_block, None
        return b
    return _Builder(anchor_or_block)


def loop_bounds(anchor_or_block, m: SSAValue) -> list[SSAValue]:
    """The sizes of memref ``m``, computed before ``anchor`` (an op) or at the end
    of a block: the bounds of a loop nest over all its elements."""
    b = _builder_at(anchor_or_block)
    return [b.dim(m, i) for i in range(m.type.get_num_dims())]  # type: ignore[attr-defined]


def emit_loop_nest(anchor_or_block, bounds: Sequence[SSAValue], body) -> None:
    """``for i0 in [0, b0): for i1 ...: body(builder, [i0, i1, ...])`` as scf.for ops
    inserted before ``anchor`` (an op), or at the end of a block."""
    _nest(_builder_at(anchor_or_block), list(bounds), [], body)


def _nest(b: _Builder, bounds: list[SSAValue], ivs: list[SSAValue], body) -> None:
    if not bounds:
        body(b, ivs)
        return
    zero, one = b.index(0), b.index(1)
    loop_body = Block(arg_types=[IndexType()])
    loop = scf.ForOp(zero, bounds[0], one, [], loop_body)
    b.add(loop)
    inner = _Builder.__new__(_Builder)
    inner.block, inner.anchor = loop_body, None
    _nest(inner, bounds[1:], [*ivs, loop_body.args[0]], body)
    loop_body.add_op(scf.YieldOp())


# ----------------------------------------------------------------------------- copy


def _lower_copy(op: Operation) -> None:
    src, dst = op.operands
    rank = src.type.get_num_dims()  # type: ignore[attr-defined]
    b = _Builder(op)
    bounds = [b.dim(src, i) for i in range(rank)]

    def body(inner: _Builder, ivs: list[SSAValue]) -> None:
        value = inner.v(memref.LoadOp.get(src, ivs))
        inner.add(memref.StoreOp.get(value, dst, ivs))

    emit_loop_nest(op, bounds, body)
    op.parent_block().erase_op(op)


# ----------------------------------------------------------------------------- linalg


def _lower_generic(op: linalg.GenericOp) -> None:
    operands = [*op.inputs, *op.outputs]
    if op.results or not all(isinstance(v.type, MemRefType) for v in op.outputs):
        raise _error(op, "linalg.generic on tensors cannot be lowered",
                     "bufferize first: use memref operands (outs(%m : memref<...>))")
    maps = [m.data for m in op.indexing_maps.data]
    n_loops = maps[0].num_dims if maps else 0
    if any(m.num_symbols for m in maps):
        raise _error(op, "indexing maps with symbols are not supported", "use maps of the loop dimensions only")
    b = _Builder(op)
    bounds: list[SSAValue | None] = [None] * n_loops
    for v, m in zip(operands, maps):
        if not isinstance(v.type, MemRefType):
            continue
        for pos, e in enumerate(m.results):
            if isinstance(e, AffineDimExpr) and bounds[e.position] is None:
                bounds[e.position] = b.dim(v, pos)
    if any(x is None for x in bounds):
        raise _error(op, "cannot infer the loop bounds of this linalg.generic",
                     "each loop dimension must index some operand dimension directly")
    body_block = op.body.blocks[0]
    n_in = len(op.inputs)

    def body(inner: _Builder, ivs: list[SSAValue]) -> None:
        mapping: dict[SSAValue, SSAValue] = {}
        indices = [[_affine(inner, e, ivs) for e in m.results] for m in maps]
        for arg, v, idx in zip(body_block.args, operands, indices):
            if isinstance(v.type, MemRefType):
                mapping[arg] = inner.v(memref.LoadOp.get(v, idx))
            else:
                mapping[arg] = v  # a scalar input
        for inner_op in body_block.ops:
            if isinstance(inner_op, linalg.YieldOp):
                for value, out, idx in zip(inner_op.operands, op.outputs, indices[n_in:]):
                    inner.add(memref.StoreOp.get(mapping.get(value, value), out, idx))
            elif isinstance(inner_op, linalg.IndexOp):
                mapping[inner_op.result] = ivs[inner_op.dim.value.data]
            else:
                clone = inner_op.clone(mapping)
                inner.add(clone)
                for old, new in zip(inner_op.results, clone.results):
                    mapping[old] = new

    emit_loop_nest(op, bounds, body)  # type: ignore[arg-type]
    op.parent_block().erase_op(op)


def _affine(b: _Builder, e: AffineExpr, ivs: list[SSAValue]) -> SSAValue:
    """An index value computing affine expression ``e`` of the loop variables."""
    from zymase.transforms.lower_affine import affine_value

    return affine_value(b, e, ivs)


def _error(op: Operation, message: str, hint: str) -> ZymaseError:
    parent = op.parent_op()
    while parent is not None and not hasattr(parent, "sym_name"):
        parent = parent.parent_op()
    return ZymaseError(
        message,
        construct=op.name,
        function=parent.sym_name.data if parent is not None else None,  # type: ignore[union-attr]
        location=location_of(op),
        hint=hint,
    )
