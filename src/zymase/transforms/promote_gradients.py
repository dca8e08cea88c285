"""``remove-unnecessary-enzyme-ops``: adjoint accumulators of structured code -> SSA values.

Why. The structured reverse generator (autodiff/structured.py) keeps the adjoint
of a value that is used in another block than its own in an ``!enzyme.Gradient``
cell: each contribution is a ``get``/``add``/``set`` wherever the use is reversed,
and the adjoint is taken (``get``) where the value is defined. That is the
simplest thing to emit, but a cell is memory: xDSL's canonicalize and cse cannot
see through it, the output is not the value-carrying form Enzyme-MLIR produces,
and until LLVM's mem2reg runs every access is a load and a store. Over the
structured ops the cell's value can be carried explicitly, the way SSA
construction over ``scf`` works in MLIR (mem2reg for region ops).

What. A cell is promoted when it is created in the function's entry block and
every use is an ``enzyme.get``/``enzyme.set`` in that block or nested (at any
depth) in ``scf.for`` / ``scf.if`` / ``scf.while`` regions of it, and a zero of
its element type can be built (the cell starts at zero). One walk in program
order keeps each cell's current value -- an SSA value, or "zero" not yet built:

* ``set`` makes its operand the current value; ``get`` is replaced by the current
  value (when that is zero, ``0 + x`` uses fold to ``x``, otherwise a zero is
  built next to the ``enzyme.init``, where it dominates every use);
* an ``scf.for`` whose body sets a cell gets an extra ``iter_arg`` (the value on
  entry), body argument, yielded value and result (the value after the loop);
* an ``scf.if`` whose branches set a cell gets an extra result, each branch
  yielding its value (an ``scf.if`` without ``else`` gets one that yields the
  value on entry);
* an ``scf.while`` whose regions set a cell carries it as an extra argument of
  both regions, passed on by ``scf.condition`` and ``scf.yield``, and an extra
  result;
* a region that only reads a cell reads the value from outside.

A cell that enters a construct as zero and is zero again whenever the construct
ends (the generator resets the adjoint of a value defined in a loop after taking
it) is not carried: the value stays "zero" and the adds fold.

Cells with other uses (the CFG generator's cells used across branches, cells in
other region ops) are left as they are; the LLVM lowering keeps them in memory.
"""

from __future__ import annotations

from zymase.autodiff.flavor import Emitter, flavor_of
from zymase.ir import (
    Block,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    Operation,
    SSAValue,
    scf,
)
from zymase.ir import enzyme as ez

_STRUCTURED = (scf.ForOp, scf.IfOp, scf.WhileOp)
ZERO = None  # the current value of a cell that holds zero (not built yet)


def promote_gradients(fop: Operation, module: Operation) -> None:
    """Promote the promotable ``!enzyme.Gradient`` cells of function ``fop`` (see the
    module docstring)."""
    if not fop.regions or not fop.regions[0].blocks:
        return
    entry = fop.regions[0].blocks[0]
    inits = [op for op in entry.ops if isinstance(op, ez.InitOp) and _promotable(op, entry)]
    if inits:
        _Promoter(inits, Emitter(flavor_of(fop), module)).run(entry)


def _promotable(init: Operation, entry: Block) -> bool:
    if not isinstance(init.result.type, ez.GradientType) or not _has_zero(init.result.type.elem):
        return False
    for use in init.result.uses:
        user = use.operation
        if not (isinstance(user, ez.GetOp) or (isinstance(user, ez.SetOp) and use.index == 0)):
            return False
        op = user
        while op.parent_block() is not entry:
            op = op.parent_op()
            if not isinstance(op, _STRUCTURED):
                return False
    return True


def _has_zero(t) -> bool:
    from zymase.autodiff.type_rules import TYPES

    return TYPES.lookup(t) is not None or isinstance(t, (IntegerType, IndexType))


def _is_zero(v: SSAValue) -> bool:
    """``v`` is a constant zero (a reset of an adjoint)."""
    owner = v.owner if isinstance(v.owner, Operation) else None
    value = getattr(owner, "value", None) if owner is not None and owner.name.endswith(".constant") else None
    if isinstance(value, FloatAttr):
        return value.value.data == 0.0
    if isinstance(value, IntegerAttr):
        return value.value.data == 0
    return False


class _Promoter:
    def __init__(self, inits: list[Operation], E: Emitter):
        self.inits = {op.result: op for op in inits}
        self.order = {op.result: k for k, op in enumerate(inits)}
        self.E = E
        self.zeros: dict[SSAValue, SSAValue] = {}

    def run(self, entry: Block) -> None:
        self.block(entry, dict.fromkeys(self.inits, ZERO))
        for cell, init in self.inits.items():
            assert not cell.uses, "zymase bug: a promoted cell is still used"
            init.parent_block().erase_op(init)

    # ------------------------------------------------------------------ values
    def value(self, cell: SSAValue, current: SSAValue | None) -> SSAValue:
        """``current`` as an SSA value (zero: built once, after the cell's init)."""
        if current is not ZERO:
            return current
        if cell not in self.zeros:
            init = self.inits[cell]
            t = cell.type.elem
            self.E.before(init.next_op)
            self.zeros[cell] = self.E.iconst(0, t) if isinstance(t, (IntegerType, IndexType)) else self.E.zero(t)
        return self.zeros[cell]

    def written(self, op: Operation) -> list[SSAValue]:
        """The promoted cells set inside region op ``op``, in a fixed order."""
        cells = {inner.gradient for inner in op.walk() if isinstance(inner, ez.SetOp) and inner.gradient in self.inits}
        return sorted(cells, key=self.order.__getitem__)

    def ends_zero(self, block: Block, cell: SSAValue, zero: bool) -> bool:
        """Whether ``cell`` holds zero at the end of ``block`` on every path, given
        whether it holds zero at its start."""
        for op in block.ops:
            if isinstance(op, ez.SetOp) and op.gradient is cell:
                zero = _is_zero(op.value)
            elif isinstance(op, _STRUCTURED) and cell in self.written(op):
                if isinstance(op, scf.IfOp):
                    zero = all(self.ends_zero(r.block, cell, zero) if r.blocks else zero for r in op.regions)
                else:  # a loop: zero throughout iff zero on entry and each run keeps it
                    zero = zero and all(self.ends_zero(r.block, cell, True) for r in op.regions)
        return zero

    # ------------------------------------------------------------------ the walk
    def block(self, block: Block, state: dict) -> None:
        """Promote the cells in ``block`` (and nested regions); ``state`` maps each
        cell to its current value and is updated to the values at the end."""
        for op in list(block.ops):
            if op.parent_block() is not block:
                continue  # erased by a zero-add fold
            if isinstance(op, ez.GetOp) and op.gradient in state:
                current = state[op.gradient]
                if not (current is ZERO and fold_zero_adds(op)):
                    op.result.replace_all_uses_with(self.value(op.gradient, current))
                block.erase_op(op)
            elif isinstance(op, ez.SetOp) and op.gradient in state:
                state[op.gradient] = ZERO if _is_zero(op.value) else op.value
                block.erase_op(op)
            elif isinstance(op, scf.ForOp):
                self.for_op(op, state)
            elif isinstance(op, scf.IfOp):
                self.if_op(op, state)
            elif isinstance(op, scf.WhileOp):
                self.while_op(op, state)

    def carried(self, op: Operation, state: dict) -> list[SSAValue]:
        """Cells a loop must carry: set inside, and not zero throughout."""
        return [
            c for c in self.written(op)
            if not (state[c] is ZERO and all(self.ends_zero(r.block, c, True) for r in op.regions))
        ]

    def _add_args(self, blk: Block, cells: list[SSAValue], state: dict) -> dict:
        inner = dict(state)
        for c in cells:
            inner[c] = blk.insert_arg(c.type.elem, len(blk.args))
        return inner

    def _extend_terminator(self, blk: Block, cells: list[SSAValue], state: dict) -> None:
        term = blk.last_op
        extra = [self.value(c, state[c]) for c in cells]
        if isinstance(term, scf.ConditionOp):
            new = scf.ConditionOp(term.condition, *term.args, *extra)
        else:
            new = scf.YieldOp(*term.operands, *extra)
        blk.insert_op_before(new, term)
        blk.erase_op(term)

    def _replace(self, old: Operation, new: Operation, cells: list[SSAValue], state: dict) -> None:
        old.parent_block().insert_op_before(new, old)
        for r, nr in zip(old.results, new.results):
            r.replace_all_uses_with(nr)
        old.parent_block().erase_op(old)
        for c, r in zip(cells, new.results[len(old.results):]):
            state[c] = r

    def for_op(self, op: scf.ForOp, state: dict) -> None:
        carried = self.carried(op, state)
        body = op.body.block
        inner = self._add_args(body, carried, state)
        self.block(body, inner)
        if not carried:
            return
        self._extend_terminator(body, carried, inner)
        inits = [self.value(c, state[c]) for c in carried]
        region = op.detach_region(op.body)
        self._replace(op, scf.ForOp(op.lb, op.ub, op.step, [*op.iter_args, *inits], region), carried, state)

    def if_op(self, op: scf.IfOp, state: dict) -> None:
        written = self.written(op)
        ends = []
        for region in op.regions:
            branch = dict(state)
            if region.blocks:
                self.block(region.block, branch)
            ends.append(branch)
        carried = [c for c in written if not all(e[c] is ZERO for e in ends)]
        for c in written:
            state[c] = ZERO  # (the carried ones get the new results below)
        if not carried:
            return
        true_region, false_region = op.true_region, op.false_region
        op.detach_region(true_region)
        op.detach_region(false_region)
        if not false_region.blocks:
            false_region.add_block(Block([scf.YieldOp()]))
        for region, end in zip((true_region, false_region), ends):
            self._extend_terminator(region.block, carried, end)
        types = [*(r.type for r in op.results), *(c.type.elem for c in carried)]
        self._replace(op, scf.IfOp(op.cond, types, true_region, false_region), carried, state)

    def while_op(self, op: scf.WhileOp, state: dict) -> None:
        carried = self.carried(op, state)
        before, after = op.before_region.block, op.after_region.block
        in_before = self._add_args(before, carried, state)
        self.block(before, in_before)
        in_after = self._add_args(after, carried, in_before)
        self.block(after, in_after)
        if not carried:
            return
        self._extend_terminator(before, carried, in_before)
        self._extend_terminator(after, carried, in_after)
        inits = [self.value(c, state[c]) for c in carried]
        types = [*(r.type for r in op.results), *(c.type.elem for c in carried)]
        regions = [op.before_region, op.after_region]
        for r in regions:
            op.detach_region(r)
        self._replace(op, scf.WhileOp([*op.arguments, *inits], types, *regions), carried, state)


def fold_zero_adds(get: Operation) -> bool:
    """``0 + x`` -> ``x`` for every use of a get that reads a zero accumulator; only
    when every use is such an addition. (Adjoints are sums of contributions; the
    sign of a zero adjoint carries no information.)"""
    from zymase.ir import arith, llvm

    adds = (arith.AddfOp, llvm.FAddOp)
    users = [u.operation for u in get.result.uses]
    if not users or not all(isinstance(u, adds) for u in users):
        return False
    if any(u.operands[0] is u.operands[1] for u in users):
        return False
    for u in users:
        other = u.operands[1] if u.operands[0] is get.result else u.operands[0]
        u.results[0].replace_all_uses_with(other)
        u.parent_block().erase_op(u)
    return True
