"""``remove-unnecessary-enzyme-ops`` for the caches of structured reverse mode.

The structured reverse generator (autodiff/structured.py) tapes a value with one
``enzyme.push`` right after its definition in the forward copy and one
``enzyme.pop`` at the head of the reverse block that mirrors the value's block.
A cache with exactly that one push and one pop becomes, innermost construct
first, until nothing changes:

* an **SSA value**, when the push's block encloses the pop (no loop between:
  the value is still in scope where it is popped);
* an **extra result of the forward ``scf.if``** holding the push (a zero of the
  type from the other branch), the push moving after the ``scf.if`` — this lifts
  a value out of a branch so one of the other two rules applies;
* a **buffer indexed by the iteration**, when the push sits in a nest of
  ``scf.for`` loops whose trip counts are computable before the outermost one
  (bounds defined outside it): ``memref.alloc(n1, ..., nk)`` before the nest,
  ``memref.store`` at the iteration numbers ``(iv - lb) / step`` in the forward
  loops, ``memref.load`` at ``n - 1 - k`` in the reverse loops (which run
  ``k = 0 .. n`` backwards), ``memref.dealloc`` after the outermost reverse loop.

A push inside an ``scf.while`` (unknown trip count until it has run) keeps its
growing LIFO cache, as does anything of another shape.
"""

from __future__ import annotations

from zymase.ir import (
    DYNAMIC_INDEX,
    Block,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Operation,
    SSAValue,
    arith,
    is_float_type,
    memref,
    scf,
)
from zymase.ir import enzyme as ez


def structured_caches(fop: Operation) -> None:
    """Rewrite the push/pop caches of one function (see the module docstring)."""
    changed = True
    while changed:
        changed = False
        for init in [op for op in fop.walk() if isinstance(op, ez.InitOp) and isinstance(op.result.type, ez.CacheType)]:
            pair = _single_pair(init)
            if pair is None:
                continue
            push, pop = pair
            if _to_ssa(init, push, pop) or _lift_out_of_if(push, pop) or _to_buffer(init, push, pop):
                changed = True


def _single_pair(init: Operation):
    users = [u.operation for u in init.result.uses]
    pushes = [u for u in users if isinstance(u, ez.PushOp)]
    pops = [u for u in users if isinstance(u, ez.PopOp)]
    if len(pushes) != 1 or len(pops) != 1 or len(users) != 2:
        return None
    return pushes[0], pops[0]


def _ancestor_in(block: Block, op: Operation) -> Operation | None:
    """The op of ``block`` that is or contains ``op`` (None: ``op`` is elsewhere)."""
    return block.find_ancestor_op_in_block(op)


def _to_ssa(init, push, pop) -> bool:
    block = push.parent_block()
    anchor = _ancestor_in(block, pop)
    if anchor is None or anchor is push or not push.is_before_in_block(anchor):
        return False
    pop.result.replace_all_uses_with(push.value)
    for op in (pop, push, init):
        op.parent_block().erase_op(op)
    return True


def _placeholder(t) -> Operation | None:
    """A value of type ``t`` for the branch that does not compute the pushed value."""
    if is_float_type(t):
        return arith.ConstantOp(FloatAttr(0.0, t), t)
    if isinstance(t, (IntegerType, IndexType)):
        return arith.ConstantOp(IntegerAttr(0, t), t)
    return None


def _lift_out_of_if(push, pop) -> bool:
    """Push in a branch of an scf.if that does not enclose the pop: the if yields the
    value (a placeholder from the other branch) and the push follows the if."""
    old = push.parent_op()
    if not isinstance(old, scf.IfOp) or old.is_ancestor(pop):
        return False
    value = push.value
    placeholder = _placeholder(value.type)
    if placeholder is None:
        return False
    mine = push.parent_block()
    true_region, false_region = old.true_region, old.false_region
    old.detach_region(true_region)
    old.detach_region(false_region)
    if not false_region.blocks:
        false_region.add_block(Block([scf.YieldOp()]))
    for region in (true_region, false_region):
        blk = region.block
        term = blk.last_op
        extra = value
        if blk is not mine:
            blk.insert_op_before(placeholder, term)
            extra = placeholder.results[0]
        blk.insert_op_before(scf.YieldOp(*term.operands, extra), term)
        blk.erase_op(term)
    new = scf.IfOp(old.cond, [*(r.type for r in old.results), value.type], true_region, false_region)
    old.parent_block().insert_op_after(new, old)
    for r, nr in zip(old.results, new.results):
        r.replace_all_uses_with(nr)
    old.parent_block().erase_op(old)
    push.detach()
    new.parent_block().insert_op_after(push, new)
    push.operands = [push.cache, new.results[-1]]
    return True


def _enclosing(op: Operation) -> list[Operation]:
    """The region ops around ``op`` inside its function, outermost first."""
    out = []
    parent = op.parent_op()
    while parent is not None and not hasattr(parent, "sym_name"):
        out.append(parent)
        parent = parent.parent_op()
    return out[::-1]


def _defined_before(v: SSAValue, op: Operation) -> bool:
    """``v`` is defined in a block enclosing ``op`` (so it is available before it)."""
    from zymase.ir import BlockArgument

    home = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
    return home is not None and _ancestor_in(home, op) is not None and not (
        not isinstance(v, BlockArgument) and v.owner.is_ancestor(op)
    )


def _to_buffer(init, push, pop) -> bool:
    if not isinstance(push.parent_op(), scf.ForOp):
        return False
    t = push.value.type
    if not (is_float_type(t) or isinstance(t, (IntegerType, IndexType))):
        return False
    fwd = _enclosing(push)
    if any(isinstance(o, scf.WhileOp) for o in fwd):
        return False  # trip count unknown before the loop: keep the growing cache
    floops = [o for o in fwd if isinstance(o, scf.ForOp)]
    rloops = [o for o in _enclosing(pop) if isinstance(o, scf.ForOp)]
    if len(floops) != len(rloops) or any(o.is_ancestor(pop) for o in floops):
        return False
    f1, r1 = floops[0], rloops[0]
    outer = f1.parent_block()
    r1_anchor = _ancestor_in(outer, r1)
    if r1_anchor is None or not f1.is_before_in_block(r1_anchor):
        return False
    if not all(_defined_before(b, f1) for f in floops for b in (f.lb, f.ub, f.step)):
        return False
    if any(not _is_reverse_loop(r) for r in rloops):
        return False

    def before(anchor: Operation):
        def insert(op: Operation) -> SSAValue:
            anchor.parent_block().insert_op_before(op, anchor)
            return op.results[0] if op.results else None

        return insert

    from zymase.autodiff.rules.scf import emit_trip_count

    at_f1 = before(f1)
    counts = [emit_trip_count(at_f1, f.lb, f.ub, f.step) for f in floops]
    counts = [c if isinstance(c.type, IndexType) else at_f1(arith.IndexCastOp(c, IndexType())) for c in counts]
    buf_type = MemRefType(t, [DYNAMIC_INDEX] * len(counts))
    buf = at_f1(_alloc(buf_type, counts))
    at_push = before(push)
    fidx = [_iteration(at_push, f) for f in floops]
    at_push(memref.StoreOp.get(push.value, buf, fidx))
    at_pop = before(pop)
    ridx = [_reverse_iteration(at_pop, r) for r in rloops]
    load = memref.LoadOp.get(buf, ridx)
    at_pop(load)
    pop.result.replace_all_uses_with(load.results[0])
    r1_anchor.parent_block().insert_op_after(memref.DeallocOp.get(buf), r1_anchor)
    for op in (pop, push, init):
        op.parent_block().erase_op(op)
    return True


def _alloc(buf_type: MemRefType, counts: list[SSAValue]) -> Operation:
    return memref.AllocOp(counts, [], buf_type)


def _as_index(insert, v: SSAValue) -> SSAValue:
    return v if isinstance(v.type, IndexType) else insert(arith.IndexCastOp(v, IndexType()))


def _const_value(v: SSAValue) -> int | None:
    op = getattr(v, "owner", None)
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _iteration(insert, loop) -> SSAValue:
    """``(iv - lb) / step`` of forward loop ``loop``, as an index."""
    iv = loop.body.block.args[0]
    k = iv
    if _const_value(loop.lb) != 0:
        k = insert(arith.SubiOp(k, loop.lb))
    if _const_value(loop.step) != 1:
        k = insert(arith.DivSIOp(k, loop.step))
    return _as_index(insert, k)


def _is_reverse_loop(loop) -> bool:
    """A loop as the generator emits reverses: ``scf.for %k = 0 to %n step 1``."""
    return _const_value(loop.lb) == 0 and _const_value(loop.step) == 1


def _reverse_iteration(insert, loop) -> SSAValue:
    """``n - 1 - k``: the forward iteration that reverse loop ``loop`` handles now."""
    k = loop.body.block.args[0]
    one = insert(arith.ConstantOp(IntegerAttr(1, k.type), k.type))
    return _as_index(insert, insert(arith.SubiOp(insert(arith.SubiOp(loop.ub, one)), k)))
