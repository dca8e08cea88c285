"""Trip counts of loops in the llvm dialect, known before the loop runs.

A loop (one entry edge, one back edge) whose header carries an induction variable
``iv = init + step * k`` (``k`` counts header executions in one run of the loop;
``step`` a constant; ``init`` defined outside the loop) and that leaves when a
compare of ``iv`` (or of ``iv + step``) against a loop-invariant bound fails, in a
block executed by every iteration, runs its header at most ``N`` times, where ``N``
is computable from ``init`` and the bound alone. Reverse mode sizes a loop's caches
with ``N`` (one slot per header execution) instead of growing a stack.

:func:`trip_count` recognizes the pattern; :func:`emit_trip_count` builds the
arithmetic for ``N`` where a caller needs it.

clang's worksharing loops (OpenMP, after -O2) widen the induction variable to i64 from
the chunk's i32 lower bound and leave when ``trunc(iv + 1) == upper + 1``: a compare of
the low bits only, which is met at ``sext(upper + 1)`` only if that is reached before the
low bits wrap around. :func:`trip_count` counts such a loop when a guard on the way to
it proves ``lower + 1 <= upper + 1`` (``_truncated_exit_test``), and not otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from zymase.analysis.cfg import CFG, Edge
from zymase.analysis.op_classes import is_a
from zymase.ir import Block, BlockArgument, IntegerAttr, IntegerType, SSAValue, i64, llvm
from zymase.ir import fast_ops, llvm_ext
from zymase.ir.llvm_ext import NSW, NUW, overflow_bits

# llvm.icmp predicate numbers (MLIR's LLVM dialect).
EQ, NE, SLT, SLE, SGT, SGE, ULT, ULE, UGT, UGE = range(10)
SWAPPED = {EQ: EQ, NE: NE, SLT: SGT, SLE: SGE, SGT: SLT, SGE: SLE, ULT: UGT, ULE: UGE, UGT: ULT, UGE: ULE}
_NEGATED = {EQ: NE, NE: EQ, SLT: SGE, SLE: SGT, SGT: SLE, SGE: SLT, ULT: UGE, ULE: UGT, UGT: ULE, UGE: ULT}
UNSIGNED = {ULT, ULE, UGT, UGE}


@dataclass(frozen=True)
class TripCount:
    """At most ``N`` header executions per run, with ``d = bound - init`` (step > 0)
    or ``init - bound`` (step < 0), both widened to i64, and ``s = |step|``:

    * ``inclusive`` false (``<``, ``>``, ``!=``): ``passes = ceil(d / s) - offset``
    * ``inclusive`` true (``<=``, ``>=``): ``passes = floor(d / s) + 1 - offset``
    * ``N = max(passes, 0) + 1``

    ``offset`` is 1 when the exit test reads ``iv + step`` (rotated loops) rather
    than ``iv``. ``bias`` is a constant the test adds to that (``i + 1 < n`` in a loop
    counting by two), by an add that cannot wrap: ``d`` is then taken less ``bias``.
    Divisions may round the wrong way for negative ``d``; that only makes ``N``
    larger, and ``N`` is an upper bound anyway (early exits)."""

    init: SSAValue
    bound: SSAValue
    step: int
    inclusive: bool
    offset: int
    unsigned: bool
    #: the block whose branch makes the exit test
    test_block: Block | None = field(default=None, compare=False)
    #: the increment carries the no-wrap flag of the compare's signedness (either
    #: flag for ``!=``): the induction variable cannot wrap around before the test fails
    no_wrap: bool = False
    bias: int = 0
    #: the counts the loop's other exit tests (in blocks every iteration runs) give,
    #: those whose induction variable cannot wrap: each bounds the header executions
    #: too, and :func:`emit_trip_count` takes the least. (Numba's ``np.empty(m)`` in a
    #: loop counting ``m`` tests ``m == 2**60``, its size limit, before the loop's own
    #: test: a count from that test alone reserved 2**63 bytes of tape; :func:`trip_count`
    #: takes such a test as the count only when no other test is found.)
    others: tuple["TripCount", ...] = field(default=(), compare=False)

    def exact(self, exits: list[Edge]) -> bool:
        """Whether ``N`` is exactly the number of header executions of every run:
        the loop leaves only by this test and cannot wrap around, and the division is
        exact (a step of one) or rounds right (a strict test: ``ceil`` as computed is
        never above the true one, and both are <= 0 when ``d`` is; an inclusive test's
        ``floor`` is computed by a division that truncates, one too many for negative
        ``d`` when the step is larger than one)."""
        return (
            self.no_wrap and (abs(self.step) == 1 or not self.inclusive)
            and len(exits) == 1 and exits[0].src is self.test_block
        )

    def operands(self) -> tuple[SSAValue, ...]:
        """The values ``N`` is computed from (``init`` and ``bound`` first)."""
        return (self.init, self.bound, *(v for o in self.others for v in o.operands()))


def constant_int(v: SSAValue) -> int | None:
    if is_a(v, BlockArgument):
        return None
    op = v.owner
    if is_a(op, llvm.ConstantOp) and is_a(op.value, IntegerAttr):
        return op.value.value.data
    return None


def trip_count(cfg: CFG, header: Block, body: set[Block], entry: Edge, latch: Edge, successor_operands) -> TripCount | None:
    """The header-execution bound of loop ``header`` (see the module docstring), or
    None when the loop does not have that shape. ``successor_operands(term)`` gives
    the operands a terminator passes along each successor slot."""
    latch_ops = successor_operands(latch.src.last_op)[latch.slot]
    entry_ops = successor_operands(entry.src.last_op)[entry.slot]
    # Induction variables: header argument -> (init, step, next value).
    ivs: dict[SSAValue, tuple[SSAValue, int, SSAValue]] = {}
    for arg in header.args:
        if not isinstance(arg.type, IntegerType) or arg.index >= len(latch_ops):
            continue
        nxt = latch_ops[arg.index]
        if isinstance(nxt, BlockArgument) or not isinstance(nxt.owner, (llvm.AddOp, llvm.SubOp)):
            continue
        op = nxt.owner
        if op.operands[0] is not arg:
            continue
        step = constant_int(op.operands[1])
        if not step:
            continue
        if isinstance(op, llvm.SubOp):
            step = -step
        init = entry_ops[arg.index]
        if not _invariant(init, body):
            continue
        ivs[arg] = (init, step, nxt)
    if not ivs:
        return None
    found_all: list[TripCount] = []
    for x in cfg.in_order(body):  # the first exit test found is the count; the others bound it
        if x not in cfg.reachable or not cfg.dominates(x, latch.src):
            continue
        term = x.last_op
        if not isinstance(term, llvm.CondBrOp):
            continue
        inside = [s in body for s in term.successors]
        if inside[0] == inside[1]:
            continue
        found = _exit_test(term.cond, ivs, body, continue_if_true=inside[0])
        if found is None:
            found = _truncated_exit_test(cfg, entry, term.cond, ivs, body, continue_if_true=inside[0])
        if found is not None:
            found_all.append(replace(found, test_block=x))
    if not found_all:
        return None
    # the count is the first test's, unless that is a constant no tape could hold (a
    # size limit's, Numba's m == 2**60) and another test is not: the loop's own test
    # then counts, as sound as the first (each test ends the loop when it fails)
    first = next((tc for tc in found_all if not _beyond_any_tape(tc)), found_all[0])
    others = tuple(o for o in found_all if o is not first and o.no_wrap)
    return replace(first, others=others) if others else first


def _beyond_any_tape(tc: TripCount) -> bool:
    n = constant_trip_count(tc)
    return n is not None and n > 1 << 32


def _invariant(v: SSAValue, body: set[Block]) -> bool:
    if constant_int(v) is not None:
        return True
    home = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
    return home not in body


def _strip_ext(v: SSAValue) -> tuple[SSAValue, str | None]:
    if not isinstance(v, BlockArgument) and isinstance(v.owner, (llvm.SExtOp, llvm.ZExtOp)):
        return v.owner.operands[0], "zext" if isinstance(v.owner, llvm.ZExtOp) else "sext"
    return v, None


def _exit_test(cond: SSAValue, ivs, body: set[Block], *, continue_if_true: bool) -> TripCount | None:
    if isinstance(cond, BlockArgument) or not isinstance(cond.owner, llvm.ICmpOp):
        return None
    cmp = cond.owner
    pred = cmp.predicate.value.data
    lhs, rhs = cmp.operands
    if not continue_if_true:
        pred = _NEGATED[pred]
    for iv_side, other, p in ((lhs, rhs, pred), (rhs, lhs, SWAPPED[pred])):
        if not _invariant(other, body):
            continue
        inner, ext = _strip_ext(iv_side)
        if ext is not None and (ext == "zext") != (p in UNSIGNED) and p not in (EQ, NE):
            continue  # the extension and the compare disagree on signedness
        bias = 0
        if not any(inner is arg or inner is nxt for arg, (_, _, nxt) in ivs.items()):
            inner, bias = _biased(inner, p)  # the induction variable (or its next value) plus a constant
        for arg, (init, step, nxt) in ivs.items():
            if inner is arg:
                offset = 0
            elif inner is nxt:
                offset = 1
            else:
                continue
            shape = _shape(p, step)
            if shape is None:
                return None
            flags = overflow_bits(nxt.owner)
            if p in (EQ, NE):
                no_wrap = bool(flags)
            else:
                no_wrap = bool(flags & (NUW if p in UNSIGNED else NSW))
            return TripCount(init, other, step, shape, offset, p in UNSIGNED or ext == "zext", no_wrap=no_wrap,
                             bias=bias)
    return None


def _truncated_exit_test(cfg: CFG, entry: Edge, cond: SSAValue, ivs, body: set[Block], *,
                         continue_if_true: bool) -> TripCount | None:
    """``trunc(iv + 1) != B`` (or ``trunc(iv) != B``) continuing a loop whose unit-step
    induction variable starts at ``ext(L)``, ``L`` and ``B`` of the truncated type: the
    test first fails at ``iv + 1 == ext(B)``, exactly, when the loop is entered only with
    ``L + 1 <= B`` (``L <= B`` for ``trunc(iv)``) in the extension's signedness: the values
    from ``ext(L)`` to ``ext(B)`` are then distinct in the low bits. Proven from the guards
    on the way to the loop (``_entered_only_when``); otherwise None (the low bits could
    wrap around first, some 2^32 iterations later)."""
    if isinstance(cond, BlockArgument) or not isinstance(cond.owner, llvm.ICmpOp):
        return None
    pred = cond.owner.predicate.value.data
    if (pred == NE) != continue_if_true or pred not in (EQ, NE):
        return None
    for side, bound in (cond.owner.operands, reversed(cond.owner.operands)):
        if isinstance(side, BlockArgument) or not isinstance(side.owner, llvm.TruncOp) or not _invariant(bound, body):
            continue
        inner = side.owner.operands[0]
        for arg, (init, step, nxt) in ivs.items():
            offset = 1 if inner is nxt else 0 if inner is arg else None
            if offset is None:
                continue
            start, ext = _strip_ext(init)
            if step != 1 or ext is None or start.type != side.type:
                return None
            if not _entered_only_when(cfg, entry, start, bound, offset, unsigned=ext == "zext"):
                return None
            return TripCount(init, bound, 1, False, offset, ext == "zext", no_wrap=True)
    return None


def _entered_only_when(cfg: CFG, entry: Edge, low: SSAValue, high: SSAValue, gap: int, *, unsigned: bool) -> bool:
    """Whether the loop is entered (by edge ``entry``) only when ``low + gap <= high``: a
    compare ``low <= u + k`` (``<``: ``k - 1``) decides an edge on the single-predecessor
    path to ``entry``, and ``high`` is ``u + c`` (an add that cannot wrap in that
    signedness, or ``u`` itself) with ``k <= c - gap``."""
    high_base, c = high, 0
    if not isinstance(high, BlockArgument) and isinstance(high.owner, llvm.AddOp):
        step = constant_int(high.owner.operands[1])
        if step is not None and overflow_bits(high.owner) & (NUW if unsigned else NSW):
            high_base, c = high.owner.operands[0], step
    edge = entry
    for _ in range(8):
        term = edge.src.last_op
        if (isinstance(term, llvm.CondBrOp) and term.successors[0] is not term.successors[1]
                and not isinstance(term.cond, BlockArgument) and isinstance(term.cond.owner, llvm.ICmpOp)):
            pred = term.cond.owner.predicate.value.data
            if edge.slot == 1:
                pred = _NEGATED[pred]
            a, b = term.cond.owner.operands
            if pred in (SGE, SGT, UGE, UGT):
                a, b, pred = b, a, SWAPPED[pred]
            if pred in ((ULE, ULT) if unsigned else (SLE, SLT)) and a is low:
                k = -1 if pred in (SLT, ULT) else 0
                if (b is high_base and k <= c - gap) or (b is high and k <= -gap):
                    return True
        preds = cfg.preds.get(edge.src, [])
        if len(preds) != 1:
            return False
        edge = preds[0]
    return False


def _biased(v: SSAValue, pred: int) -> tuple[SSAValue, int]:
    """``(x, c)`` when ``v`` is ``x + c`` for a constant ``c``, computed without wrapping
    in the compare's signedness (an ``add`` with the matching no-wrap flag, or an ``or
    disjoint``, which is an add without carries); else ``(v, 0)``."""
    if isinstance(v, BlockArgument):
        return v, 0
    op = v.owner
    c = constant_int(op.operands[1]) if isinstance(op, (llvm.AddOp, llvm.OrOp)) else None
    if c is None:
        return v, 0
    if isinstance(op, llvm.OrOp):
        exact = op.properties.get("isDisjoint") is not None
    else:
        flags = overflow_bits(op)
        exact = bool(flags & (NUW if pred in UNSIGNED else NSW)) if pred not in (EQ, NE) else False
    return (op.operands[0], c) if exact else (v, 0)


def _shape(pred: int, step: int) -> bool | None:
    """Whether the continue-test ``iv PRED bound`` is inclusive, or None when it
    does not bound an induction variable moving by ``step``."""
    if pred == NE:
        return False if abs(step) == 1 else None
    if step > 0:
        return {SLT: False, ULT: False, SLE: True, ULE: True}.get(pred)
    return {SGT: False, UGT: False, SGE: True, UGE: True}.get(pred)


def constant_trip_count(tc: TripCount) -> int | None:
    """``N`` of ``tc`` when its start and bound are constants (the same arithmetic
    as emit_trip_count), else None."""
    init, bound = constant_int(tc.init), constant_int(tc.bound)
    if init is None or bound is None or (tc.unsigned and min(init, bound) < 0):
        return None
    d = bound - init if tc.step > 0 else init - bound
    d -= tc.bias if tc.step > 0 else -tc.bias
    s = abs(tc.step)

    def sdiv(a: int, b: int) -> int:  # truncating, as llvm.sdiv
        q = abs(a) // b
        return q if a >= 0 else -q

    if tc.inclusive:
        passes = sdiv(d, s) + 1 - tc.offset
    else:
        passes = sdiv(d + s - 1, s) - tc.offset
    return max(passes, 0) + 1


def emit_trip_count(E, tc: TripCount, value) -> SSAValue:
    """Emit ``N`` of ``tc`` as an i64 with emitter ``E`` (a flavor.Emitter), from the
    values ``value(v)`` gives for its operands: the least of its own count and those
    of ``tc.others``."""
    n = _emit_one_count(E, tc, value)
    for other in tc.others:
        m = _emit_one_count(E, other, value)
        less = E.v(fast_ops.icmp(llvm_ext.ICmpOp, m, n, fast_ops.int_attr(SLT, i64)))
        n = E.v(fast_ops.select(llvm_ext.SelectOp, less, m, n))
    return n


def _emit_one_count(E, tc: TripCount, value) -> SSAValue:
    """``N`` of ``tc``'s own exit test (emit_trip_count)."""

    def wide(v: SSAValue) -> SSAValue:
        v = value(v)
        if v.type == i64:
            return v
        # (as llvm.ZExtOp(v, i64) / llvm.SExtOp(v, i64) build it, without IRDL's matching)
        return E.v((llvm.ZExtOp if tc.unsigned else llvm.SExtOp).create(operands=[v], result_types=[i64]))

    def const(n: int) -> SSAValue:
        return E.v(fast_ops.constant(fast_ops.int_attr(n, i64), i64))

    def add(a: SSAValue, b: SSAValue) -> SSAValue:
        return E.v(fast_ops.int_arith(llvm.AddOp, a, b))

    def sub(a: SSAValue, b: SSAValue) -> SSAValue:
        return E.v(fast_ops.int_arith(llvm.SubOp, a, b))

    init, bound = wide(tc.init), wide(tc.bound)
    d = sub(bound, init) if tc.step > 0 else sub(init, bound)
    if tc.bias:
        # the test compares iv + bias with the bound: iv meets bound - bias
        d = sub(d, const(tc.bias)) if tc.step > 0 else add(d, const(tc.bias))
    s = abs(tc.step)
    if tc.inclusive:
        q = d if s == 1 else E.v(_sdiv(d, const(s)))
        passes = add(q, const(1 - tc.offset))
    else:
        q = d if s == 1 else E.v(_sdiv(add(d, const(s - 1)), const(s)))
        passes = q if tc.offset == 0 else sub(q, const(tc.offset))
    zero = const(0)
    positive = E.v(fast_ops.icmp(llvm_ext.ICmpOp, zero, passes, fast_ops.int_attr(SLT, i64)))
    clamped = E.v(fast_ops.select(llvm_ext.SelectOp, positive, passes, zero))
    return add(clamped, const(1))


def _sdiv(a: SSAValue, b: SSAValue):
    """``llvm.SDivOp(a, b)`` (not exact), built as its constructor builds it without IRDL's
    generic argument matching (as zymase.ir.fast_ops builds AD's ops)."""
    return llvm.SDivOp.create(operands=[a, b], result_types=[a.type])
