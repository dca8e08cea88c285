"""Peel a loop's first and last iterations when that makes the compares of its
induction variables constant in the iterations between.

Boundary conditions are compares of the index: a stencil's ``u[i - 1] if i > 0 else
u[i]`` becomes a load through ``select(i == 0, &u[0], &u[i - 1])``. Such a load is
not consecutive, so the derivative's forward sweep does not vectorize, and the reverse
sweep accumulates its adjoint into a select-chosen shadow address, with the compares
and selects rebuilt in every reverse iteration. Between the first and the last few
iterations each compare has one known value: with those iterations peeled off, the
middle loop's selects fold away and its addresses are affine. (LLVM peels the first
iterations for this, not the last ones, and only when unrolling is on, which the
pre-AD pipeline leaves off.)

What is peeled, so that the copies stay exact:

* a loop of one block (its own latch) entered by one edge, leaving by one exit edge,
  with an exact trip count ``N`` (analysis/trip_count);
* values of the loop used after it reach their uses through a new exit block that
  takes them as arguments, so that each copy can pass its own;
* a compare is decided when one side is an induction variable stepping by one without
  wrapping (the no-wrap flag of the trip count's signedness) and the other is
  loop-invariant, and their difference at the first (last) middle iteration is a
  constant that the monotone induction variable only moves away from;
* at most two iterations at each end.

When it pays: only for a compare that chooses an address (a select on it reaches a
``getelementptr`` or the pointer of a load or store, through integer arithmetic or a
select of pointers). That is the stencil's boundary read, whose middle loop gets affine
loads and shadow adds the reverse sweep can gather (bench/ode: 2.9x fewer instructions in
the gradient). A compare that only selects values (``posed[i] = i == 15 ? 1.0 : 0.0``,
``x = i == n - 1 ? a : b``) leaves the loads and stores affine as they are: peeling it
copies the body (each copy differentiated, taped and compiled apart) for no run-time gain
(bench/hand: 0.2% more instructions peeled), so it does not decide the peeling; it is
folded in the copies when the peeling an address needs decides it too.

Shape after the transform: guard (the trip count) -> first copies, each leaving by the
loop's own exit test -> dispatch: with at least ``last + 1`` iterations left, the
middle loop (a new counter runs its ``N - first - last`` iterations; the decided
compares are constants and the selects on them are folded), else straight to the last
copy (or copies) that many -> last copies -> the loop's exit. The original loop is not
kept: short runs take the copies too. Each copy's compares are folded where its
iteration decides them. It runs on the copy
of a function body that AD differentiates (:func:`zymase.autodiff.common.prepare`),
not on the primal function itself. ``ZYMASE_NO_PEEL=1`` turns it off (for A/B
measurements).
"""

from __future__ import annotations

import itertools
import os

from zymase.analysis.cfg import CFG
from zymase.analysis.op_classes import is_a
from zymase.analysis.trip_count import (
    EQ, NE, SGE, SGT, SLE, SLT, SWAPPED, UGE, UGT, ULE, ULT, UNSIGNED, TripCount, constant_int, emit_trip_count, trip_count,
)
from zymase.ir import Block, BlockArgument, IntegerAttr, IntegerType, Operation, Region, SSAValue, i64, llvm
from zymase.ir import llvm_ext
from zymase.ir.llvm_ext import NSW, NUW, overflow_bits
from zymase.llvm.noalias_scopes import freshen_scopes

_copies = itertools.count()

MAX_PEEL = 2
"""Iterations peeled at most at each end."""

MAX_BODY_OPS = 400
"""Larger loop bodies are left alone: each peeled iteration copies the body."""

_AS_SIGNED = {ULT: SLT, ULE: SLE, UGT: SGT, UGE: SGE}

# A linear form: constant + sum(coefficient * leaf) over SSA values.
Linear = tuple[int, dict]


def peel_boundary_iterations(region: Region, flavor, module: Operation) -> int:
    """Peel the loops of ``region`` described in the module docstring; returns how
    many were peeled."""
    if os.environ.get("ZYMASE_NO_PEEL"):
        return 0
    done = 0
    seen: set[Block] = set()  # loops already tried, and the loops peeling made
    changed = True
    while changed:
        changed = False
        cfg = CFG.build(region)
        for header, body in cfg.natural_loops():
            if body != {header} or header in seen:
                continue
            seen.add(header)
            middle = _peel(cfg, region, header, flavor, module)
            if middle is not None:
                seen.add(middle)
                done += 1
                changed = True
                break  # the CFG changed
    return done


def _defined_in(v: SSAValue, block: Block) -> bool:
    return (v.block if isinstance(v, BlockArgument) else v.owner.parent_block()) is block


def _invariant(v: SSAValue, block: Block) -> bool:
    """A constant (the reader may place it in the loop) or a value from outside."""
    return constant_int(v) is not None or not _defined_in(v, block)


def _linear(v: SSAValue, flag: int, block: Block, depth: int = 0) -> Linear:
    """``v``'s math value as a linear form over loop-invariant leaves: looks through
    adds and subtracts that carry the no-wrap ``flag`` and through extensions that
    keep the value (``sext`` and ``zext nneg`` for signed values, ``zext`` for
    unsigned ones), so that ``zext(n - 1)`` and ``zext(n) - 1`` are the same form."""
    c = constant_int(v)
    if c is not None and abs(c) < 1 << 31 and (flag == NSW or c >= 0):
        return c, {}  # (larger constants stay opaque: their sign depends on the width)
    op = None if isinstance(v, BlockArgument) else v.owner
    if depth < 8 and not _defined_in(v, block):
        if isinstance(op, (llvm.AddOp, llvm.SubOp)) and overflow_bits(op) & flag:
            a = _linear(op.operands[0], flag, block, depth + 1)
            b = _linear(op.operands[1], flag, block, depth + 1)
            return _combine(a, b, 1 if isinstance(op, llvm.AddOp) else -1)
        if _keeps_value(op, flag):
            return _linear(op.operands[0], flag, block, depth + 1)
    return 0, {v: 1}


def _keeps_value(op: Operation | None, flag: int) -> bool:
    """An extension whose result has its operand's math value (signed for NSW)."""
    if isinstance(op, llvm.ZExtOp):
        return flag == NUW or "nonNeg" in op.properties
    return isinstance(op, llvm.SExtOp) and flag == NSW


def _nonnegative(loop: "_Loop", v: SSAValue, depth: int = 0) -> bool:
    """``v`` is at least zero in every iteration: a constant, a ``zext``, or an
    induction variable counting up from a non-negative start."""
    c = constant_int(v)
    if c is not None:
        return c >= 0
    op = None if isinstance(v, BlockArgument) else v.owner
    if isinstance(op, llvm.ZExtOp):
        return True
    found = _induction(loop, v, raw=True)
    return found is not None and found[1] > 0 and depth < 4 and _nonnegative(loop, found[0], depth + 1)


def _combine(a: Linear, b: Linear, sign: int = 1) -> Linear:
    terms = dict(a[1])
    for k, c in b[1].items():
        terms[k] = terms.get(k, 0) + sign * c
    return a[0] + sign * b[0], {k: c for k, c in terms.items() if c}


def _shift(a: Linear, by: int) -> Linear:
    return a[0] + by, a[1]


def _scaled(a: Linear, by: int) -> Linear:
    return a[0] * by, {k: c * by for k, c in a[1].items()}


def _value_on_half_line(pred: int, d: int, upward: bool) -> bool | None:
    """The value of ``x PRED 0`` for every integer x in [d, inf) (``upward``) or
    (-inf, d], or None when it is not the same for all of them."""
    if pred in (EQ, NE):
        if (upward and d >= 1) or (not upward and d <= -1):
            return pred == NE
        return None
    strict = pred in (SLT, SGT, ULT, UGT)
    below = pred in (SLT, SLE, ULT, ULE)  # true for x below the threshold

    def holds(x: int) -> bool:
        if below:
            return x < 0 if strict else x <= 0
        return x > 0 if strict else x >= 0

    far = d + (1 << 40) if upward else d - (1 << 40)  # monotone predicate: the ends decide
    return holds(d) if holds(d) == holds(far) else None


class _Loop:
    """A single-block loop ``h`` and what _peel needs to know about it."""

    def __init__(self, cfg: CFG, h: Block, flavor):
        self.h = h
        term = h.last_op
        self.ok = isinstance(term, llvm.CondBrOp) and h in term.successors and len(set(term.successors)) == 2
        if not self.ok:
            return
        preds = cfg.preds[h]
        entry = [e for e in preds if e.src is not h]
        latch = [e for e in preds if e.src is h]
        self.ok = len(entry) == 1 and len(latch) == 1 and len(preds) == 2
        if not self.ok:
            return
        self.entry, self.latch = entry[0], latch[0]
        self.cont_slot = latch[0].slot
        self.exit_slot = 1 - self.cont_slot
        self.exit = [e for e in cfg.succs[h] if e.dst is not h]
        ops = flavor.successor_operands
        self.tc: TripCount | None = trip_count(cfg, h, {h}, self.entry, self.latch, ops)
        # the count forms below are for unit steps
        self.ok = (self.tc is not None and self.tc.exact(self.exit) and abs(self.tc.step) == 1
                   and len(h.ops) <= MAX_BODY_OPS)
        if not self.ok:
            return
        self.init_ops = ops(self.entry.src.last_op)[self.entry.slot]
        self.next_ops = ops(term)[self.cont_slot]
        self.flag = NUW if self.tc.unsigned else NSW


def _induction(loop: _Loop, v: SSAValue, raw: bool = False):
    """(linear form of the value at iteration k = 0, step) when ``v`` is a header
    argument (or its next value) moving by +-1 without wrapping, else None. With
    ``raw``: (the header argument's start value, step)."""
    h = loop.h
    for arg in h.args:
        nxt = loop.next_ops[arg.index]
        op = None if isinstance(nxt, BlockArgument) else nxt.owner
        if not isinstance(arg.type, IntegerType) or not isinstance(op, (llvm.AddOp, llvm.SubOp)):
            continue
        if op.operands[0] is not arg or not overflow_bits(op) & loop.flag:
            continue
        step = constant_int(op.operands[1])
        if step not in (1, -1):
            continue
        step = step if isinstance(op, llvm.AddOp) else -step
        start = loop.init_ops[arg.index]
        if _defined_in(start, h):
            continue
        if raw and (v is arg or v is nxt):
            return start, step
        if v is arg:
            return _linear(start, loop.flag, h), step
        if v is nxt:
            return _shift(_linear(start, loop.flag, h), step), step
    return None


def _compare_form(loop: _Loop, cmp: Operation):
    """(predicate, induction start form, step, bound form) of a compare of an induction
    variable stepping by one against a loop-invariant value, or None."""
    pred = cmp.predicate.value.data
    lhs, rhs = cmp.operands
    if pred in UNSIGNED and not loop.tc.unsigned:
        # an unsigned compare of two values that are never negative is the signed one
        if not (_nonnegative(loop, lhs) and _nonnegative(loop, rhs)):
            return None
        pred = _AS_SIGNED[pred]
    elif (pred in UNSIGNED) != loop.tc.unsigned and pred not in (EQ, NE):
        return None
    if not _invariant(rhs, loop.h):
        lhs, rhs, pred = rhs, lhs, SWAPPED[pred]
    if not _invariant(rhs, loop.h):
        return None
    found = _induction(loop, lhs)
    if found is None:
        return None
    start, step = found
    return pred, start, step, _linear(rhs, loop.flag, loop.h)


def _decide(loop: _Loop, cmp: Operation, count: Linear):
    """For a compare in the loop: the cheapest (first, last) peel counts that make it
    constant in the middle iterations, and that constant; None if no such."""
    form = _compare_form(loop, cmp)
    if form is None:
        return None
    pred, start, step, bound = form
    options = []
    for n in range(1, MAX_PEEL + 1):
        options.append(((n, 0), _shift(start, step * n), step > 0))  # first middle iteration
        last = _combine(start, _scaled(_shift(count, -1 - n), step))  # last middle iteration
        options.append(((0, n), last, step < 0))
    for peel, at, upward in options:
        diff = _combine(at, bound, -1)
        if diff[1]:
            continue  # not a constant
        value = _value_on_half_line(pred, diff[0], upward)
        if value is not None:
            return peel, value
    return None


_HOLDS = {EQ: lambda x: x == 0, NE: lambda x: x != 0, SLT: lambda x: x < 0, SLE: lambda x: x <= 0,
          SGT: lambda x: x > 0, SGE: lambda x: x >= 0, ULT: lambda x: x < 0, ULE: lambda x: x <= 0,
          UGT: lambda x: x > 0, UGE: lambda x: x >= 0}


def _value_at(loop: _Loop, cmp: Operation, k: Linear) -> bool | None:
    """The value of compare ``cmp`` in iteration ``k`` (a linear form: a constant, or
    one built from the trip count), when the difference of its sides is a constant
    there. (Unsigned predicates reach here only as signed ones or in unsigned loops,
    whose values are never negative: the sign of the difference decides either way.)"""
    form = _compare_form(loop, cmp)
    if form is None:
        return None
    pred, start, step, bound = form
    diff = _combine(_combine(start, _scaled(k, step)), bound, -1)
    return None if diff[1] else _HOLDS[pred](diff[0])


def _count_form(loop: _Loop) -> Linear:
    tc = loop.tc
    init, bound = _linear(tc.init, loop.flag, loop.h), _linear(tc.bound, loop.flag, loop.h)
    d = _combine(bound, init, -1) if tc.step > 0 else _combine(init, bound, -1)
    d = _shift(d, -tc.bias if tc.step > 0 else tc.bias)
    passes = _shift(d, (1 if tc.inclusive else 0) - tc.offset)
    return _shift(passes, 1)


def _peel(cfg: CFG, region: Region, h: Block, flavor, module) -> Block | None:
    """Peel loop ``h`` if that decides some of its compares; returns the middle loop."""
    loop = _Loop(cfg, h, flavor)
    if not loop.ok:
        return None
    count = _count_form(loop)
    found: dict[Operation, tuple[tuple[int, int], bool]] = {}
    for op in h.ops:
        if is_a(op, llvm.ICmpOp) and not all(u.operation is h.last_op for u in op.results[0].uses):
            answer = _decide(loop, op, count)
            if answer is not None:
                found[op] = answer
    # the compares that choose addresses set how many iterations are peeled; the others
    # are folded where those iterations decide them too
    first = max((p for op, ((p, _), _) in found.items() if _chooses_an_address(op, h)), default=0)
    last = max((q for op, ((_, q), _) in found.items() if _chooses_an_address(op, h)), default=0)
    if not first and not last:
        return None
    decided: dict[Operation, bool] = {}
    from_first: set[Operation] = set()  # decided by peeling first iterations: so in every later one
    for op, ((p, q), value) in found.items():
        if p <= first and q <= last:
            decided[op] = value
            if not q:
                from_first.add(op)
    used_after = _used_after(h)
    if used_after:
        _route_exit_through_join(region, loop, used_after, flavor)
    return _rewrite(region, loop, decided, from_first, count, first, last, flavor, module)


# what an address is computed with: integer arithmetic, selects, the casts between them
_ADDRESS_ARITHMETIC = (
    llvm.AddOp, llvm.SubOp, llvm.MulOp, llvm.ShlOp, llvm.AShrOp, llvm.LShrOp, llvm.AndOp, llvm.OrOp, llvm.XOrOp,
    llvm.ZExtOp, llvm.SExtOp, llvm.TruncOp, llvm.SelectOp, llvm.IntToPtrOp, llvm.PtrToIntOp,
)


def _chooses_an_address(cmp: Operation, h: Block) -> bool:
    """A value computed from compare ``cmp`` in loop ``h`` is (part of) an address: the
    operand of a ``getelementptr``, or the pointer of a load or store, reached through
    integer and pointer arithmetic and selects (not through floats, calls or stores of
    values)."""
    seen: set[SSAValue] = set()
    work = [cmp.results[0]]
    while work:
        v = work.pop()
        for use in v.uses:
            user = use.operation
            if user.parent_block() is not h:
                continue
            if isinstance(user, llvm.GEPOp) or isinstance(user, llvm.LoadOp):
                return True
            if isinstance(user, llvm.StoreOp):
                if use.index == 1:
                    return True
                continue
            if isinstance(user, _ADDRESS_ARITHMETIC):
                r = user.results[0]
                if r not in seen and (isinstance(r.type, IntegerType) or isinstance(r.type, llvm.LLVMPointerType)):
                    seen.add(r)
                    work.append(r)
    return False


def _used_after(h: Block) -> list[SSAValue]:
    """The values of ``h`` used in other blocks (after the loop: ``h`` is the only
    block of the loop)."""
    out = []
    for v in [*h.args, *(r for op in h.ops for r in op.results)]:
        if any(u.operation.parent_block() is not h for u in v.uses):
            out.append(v)
    return out


def _route_exit_through_join(region: Region, loop: _Loop, used_after: list[SSAValue], flavor) -> None:
    """Give the loop one exit block that receives the values used after it as
    arguments (their uses now read those): the peeled copies then pass their own."""
    h, term = loop.h, loop.h.last_op
    exit_block = term.successors[loop.exit_slot]
    ops = flavor.successor_operands(term)
    join = Block(arg_types=[v.type for v in ops[loop.exit_slot]] + [v.type for v in used_after])
    n = len(ops[loop.exit_slot])
    for v, arg in zip(used_after, join.args[n:]):
        for use in list(v.uses):
            if use.operation.parent_block() is not h:
                use.operation.operands = [arg if o is v else o for o in use.operation.operands]
    br = llvm.BrOp(exit_block, *join.args[:n])
    br.location = term.location
    join.add_op(br)
    ops[loop.exit_slot] = ops[loop.exit_slot] + used_after
    new = flavor.rebuild_terminator(term, ops)
    new.successors = [join if j == loop.exit_slot else b for j, b in enumerate(term.successors)]
    h.insert_op_before(new, term)
    h.erase_op(term)
    region.insert_block_after(join, h)


def _copy(h: Block, incoming: list[SSAValue] | None = None) -> tuple[Block, dict]:
    """A copy of ``h`` without its terminator, and the value map (old -> new). With
    ``incoming`` (a copy with one predecessor) the header's arguments are those values
    and the copy takes none: an induction variable that is a constant there stays one,
    for the folds below and for AD (a block argument is taped, a constant is not)."""
    new = Block(arg_types=[] if incoming is not None else [a.type for a in h.args])
    vmap: dict[SSAValue, SSAValue] = dict(zip(h.args, new.args if incoming is None else incoming))
    for op in h.ops:
        if op is h.last_op:
            break
        new.add_op(op.clone(value_mapper=vmap))
    # a peeled iteration is another run of the body: restrict scopes it declares are its own
    freshen_scopes(new.ops, f"peel{next(_copies)}", declared_only=True)
    return new, vmap


def _fold_compares(block: Block, vmap: dict, values: dict[Operation, bool]) -> None:
    """In ``block`` (a copy of the loop with value map ``vmap``), the compares of
    ``values`` are those constants: selects on them are folded."""
    for cmp, value in values.items():
        new_cmp = vmap[cmp.results[0]]
        owner = new_cmp.owner
        if owner.parent is None:
            continue
        const = llvm.ConstantOp(IntegerAttr(1 if value else 0, IntegerType(1)), IntegerType(1))
        block.insert_op_before(const, block.first_op)
        for use in list(new_cmp.uses):
            user = use.operation
            if user.parent is None:
                continue  # a select already folded (the compare was more than one operand)
            if isinstance(user, llvm.SelectOp) and use.index == 0:
                user.results[0].replace_all_uses_with(user.operands[1] if value else user.operands[2])
                block.erase_op(user)
            else:
                user.operands = [const.results[0] if o is new_cmp else o for o in user.operands]
        if not owner.results[0].uses:
            block.erase_op(owner)


def _rewrite(region: Region, loop: _Loop, decided: dict, from_first: set, count: Linear, first: int, last: int,
             flavor, module) -> Block:
    from zymase.autodiff.flavor import Emitter

    h, term = loop.h, loop.h.last_op
    loc = term.location

    def mapped(vmap, values):
        return [vmap.get(v, v) for v in values]

    exit_block = term.successors[loop.exit_slot]
    exit_ops = flavor.successor_operands(term)[loop.exit_slot]

    def branch(block: Block, *targets) -> None:
        """``block`` ends in a branch to ``(dest, args)``, or with ``cond`` first, to
        one of two."""
        if len(targets) == 1:
            br = llvm.BrOp(targets[0][0], *targets[0][1])
        else:
            cond, (a, a_args), (b, b_args) = targets
            br = llvm.CondBrOp(cond, a, a_args, b, b_args)
        br.location = loc
        block.add_op(br)

    # entry: the trip count N and what the dispatch after the first copies asks of it
    guard = Block()
    E = Emitter(flavor, module).at_end(guard)

    def outside(v: SSAValue) -> SSAValue:
        # a constant bound may sit in the loop block, which the guard comes before
        return E.v(v.owner.clone()) if _defined_in(v, h) else v

    n = emit_trip_count(E, loop.tc, outside)
    enough = E.v(llvm_ext.ICmpOp(n, E.iconst(first + last + 1, i64), IntegerAttr(SGE, i64)))
    middle_count = E.v(llvm.SubOp(n, E.iconst(first + last, i64)))
    # (with two last copies and fewer than first + 3 iterations: one or two of them run)
    one_left = E.v(llvm_ext.ICmpOp(n, E.iconst(first + 1, i64), IntegerAttr(EQ, i64))) if last == 2 else None
    zero = E.iconst(0, i64)
    for op in guard.ops:
        op.location = loc

    # the first copies (one predecessor each: no block arguments) leave by the loop's own
    # exit test, so a run of fewer than ``first`` iterations ends there; each knows its
    # iteration number, and the compares that number decides are constants
    cond = term.cond
    incoming = list(loop.init_ops)
    prologue = []
    for i in range(first):
        blk, vmap = _copy(h, incoming)
        _fold_compares(blk, vmap, {c: v for c in decided if (v := _value_at(loop, c, (i, {}))) is not None})
        prologue.append((blk, vmap))
        incoming = mapped(vmap, loop.next_ops)
    # past them, the dispatch runs the middle loop when at least last + 1 iterations are
    # left, else the last copy (or copies) that many
    dispatch = Block() if first else guard
    here = incoming
    for i, (blk, vmap) in enumerate(prologue):
        onward = (prologue[i + 1][0] if i + 1 < first else dispatch, [])
        leave = (exit_block, mapped(vmap, exit_ops))
        branch(blk, vmap.get(cond, cond), *((onward, leave) if loop.cont_slot == 0 else (leave, onward)))
    if first:
        branch(guard, (prologue[0][0], []))

    middle, mmap = _copy(h)
    k = middle.insert_arg(i64, len(middle.args))
    # the last copies run iterations N - last .. N - 1, all past the first ones: what
    # peeling first iterations decided holds there, the rest is decided by the count
    epilogue = []
    for j in range(last):
        blk, vmap = _copy(h)
        at = _shift(count, j - last)
        _fold_compares(blk, vmap, {c: v for c in decided if (v := decided[c] if c in from_first
                                                               else _value_at(loop, c, at)) is not None})
        epilogue.append((blk, vmap))
    if last == 0:
        branch(dispatch, (middle, here + [zero]))
    elif last == 1:
        branch(dispatch, enough, (middle, here + [zero]), (epilogue[0][0], here))
    else:
        short = Block(arg_types=[a.type for a in h.args])
        branch(dispatch, enough, (middle, here + [zero]), (short, here))
        branch(short, one_left, (epilogue[1][0], list(short.args)), (epilogue[0][0], list(short.args)))

    # middle: the decided compares are constants, selects on them folded; a counter
    # runs it N - first - last times
    _fold_compares(middle, mmap, decided)
    Em = Emitter(flavor, module).at_end(middle)
    k1 = Em.v(llvm.AddOp(k, Em.iconst(1, i64), overflow=IntegerAttr(NSW, IntegerType(32))))
    again = Em.v(llvm_ext.ICmpOp(k1, middle_count, IntegerAttr(SLT, i64)))
    m_next = mapped(mmap, loop.next_ops)
    if last:
        after, after_args = epilogue[0][0], m_next
    else:
        after, after_args = exit_block, mapped(mmap, exit_ops)
    br = llvm.CondBrOp(again, middle, m_next + [k1], after, after_args)
    br.location = loc
    middle.add_op(br)
    old_test = mmap.get(term.cond)
    if (
        old_test is not None and not isinstance(old_test, BlockArgument) and not old_test.uses
        and old_test.owner.parent is not None  # (not a decided compare, erased above)
    ):
        middle.erase_op(old_test.owner)  # the counter decides instead

    # the last copies: the one before the exit always leaves
    for i, (blk, vmap) in enumerate(epilogue):
        if i + 1 < last:
            branch(blk, (epilogue[i + 1][0], mapped(vmap, loop.next_ops)))
        else:
            branch(blk, (exit_block, mapped(vmap, exit_ops)))

    # the entry edge now goes to the guard, and the original loop is gone
    src = loop.entry.src
    ops = flavor.successor_operands(src.last_op)
    ops[loop.entry.slot] = []
    old = src.last_op
    new_term = flavor.rebuild_terminator(old, ops)
    new_term.successors = [guard if s is h and j == loop.entry.slot else s for j, s in enumerate(old.successors)]
    src.insert_op_before(new_term, old)
    src.erase_op(old)

    blocks = [guard] + [b for b, _ in prologue] + ([dispatch] if first else []) + [middle]
    if last == 2:
        blocks.append(short)
    blocks += [b for b, _ in epilogue]
    region.insert_block_after(blocks, h)
    for op in h.ops:
        op.drop_all_references()
    region.erase_block(h, safe_erase=False)
    return middle
