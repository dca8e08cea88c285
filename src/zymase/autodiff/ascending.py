"""Reverse loops that run their iterations in ascending order.

The reverse sweep runs a counted loop's iterations last to first: in general the
reverse of iteration ``k`` must see what the reverse of every later iteration did
(a shadow one iteration stores and a later one loads, an adjoint carried by a loop
phi). When no iteration's reverse can see another's, the order is free, and
ascending order is the one LLVM's vectorizer and the hardware prefetchers handle
best: a descending vectorized loop reverses every vector it loads and stores (a
shuffle each, and the register pressure that comes with them), which costs the
in-place butterflies of an FFT about a third of their reverse time.

The iterations of loop ``L`` commute in the reverse sweep when

- no active value crosses from one iteration to the next or leaves the loop, except
  running sums: a header argument ``s`` carried on as ``s + t`` (``s - t``, an fma
  into ``s``) and used for nothing else. The adjoint of each partial sum is that of
  the final one, the same in every iteration; any other loop-carried value (a
  product, a partial sum also used inside the loop) would carry an adjoint that
  changes from one iteration to the next;
- ``L`` does nothing to memory but loads, stores and address arithmetic, and calls
  nothing but pure functions;
- no store into shadowed memory meets, in another iteration, an access to the
  same bytes: the reverse of a store reads and clears its shadow, which must come
  after every later load of those bytes has added to it. Accumulations alone
  commute (in exact arithmetic: the order of a sum may change its rounding). The
  proof is one of: the two pointers have different roots (distinct objects, or
  ``noalias`` arguments); the source promised they do not alias (a ``restrict``
  parameter of an inlined callee, whose scope is declared outside ``L``, so the
  promise spans all of its iterations); or both are ``base + c * k + ...`` with the
  same base, stride and invariant terms, and their byte ranges never meet for two
  different iterations ``k``;
- the forward sweep tapes nothing inside ``L`` on a stack: a LIFO cache can only be
  read backwards (indexed caches are read at the iteration number, any order).

Two more conditions are about speed, not correctness. An enclosing loop still runs
downwards, so memory that the forward sweep walks upwards through both loops would be
walked in short ascending runs, each further down: a saw-tooth that defeats the
hardware prefetchers. So ``L`` must store into shadowed memory (the reverse of a loop
that only loads is made of accumulations, which LLVM vectorizes downwards without
shuffles left over, and upwards it gained nothing while the GMM's rows of up to 64
doubles, read as a saw-tooth, cost 8% at d=64 K=100 n=10000), and its iteration must
not pick tape slots inside a region that an enclosing loop picks too (tape.py records
these loops; the GMM gradient reading its 25 MB of tape that way was 30% slower).

The reverse loop is first emitted counting down (ReverseGenerator._count_down);
when ``L`` qualifies, ``make_ascending`` turns the count around: the exit route
stores the last iteration's number in a second slot and starts at 0, and the
reverse header leaves at that number and otherwise steps up.

Used as a mixin of :class:`zymase.autodiff.reverse.ReverseGenerator`.
"""

from __future__ import annotations

import os
import sys

from zymase.analysis.memory import MARKER_INTRINSICS, memory_kind
from zymase.analysis.op_classes import is_a
from zymase.analysis.trip_count import constant_int, constant_trip_count
from zymase.analysis.layout import size_align, struct_offsets
from zymase.autodiff.tape import is_pure
from zymase.ir import Block, BlockArgument, IntegerAttr, IntegerType, Operation, SSAValue, i64, llvm, location_of
from zymase.ir import enzyme as ez
from zymase.ir.llvm_ext import NSW, NUW, overflow_bits
from zymase.llvm.noalias_scopes import SCOPE_DECL, is_scope_decl, source_scopes

#: the key of the iteration number in an affine form (other keys: invariant values, 1)
_K = "k"
_ONE = 1
#: iteration distances tried when two ranges might meet (|stride| tiny against the size)
_MAX_DISTANCES = 64
#: store/access pairs compared per loop at most (a larger loop body stays descending)
_MAX_PAIRS = 20000


class AscendingLoops:
    """Mixin: which counted loops may be reversed in ascending order, and the rewrite."""

    def _commuting_loops(self) -> set[Block]:
        """Headers of the counted loops whose iterations commute in the reverse sweep,
        as far as the primal shows (the stack-tape condition is checked after the
        reverse sweep is built, see make_ascending)."""
        if self.split or self.flavor.name != "llvm":
            return set()
        return {h for h, info in self.counted.items() if self._iterations_commute(h, info)}

    def _iterations_commute(self, h: Block, info: dict) -> bool:
        body: set[Block] = info["body"]
        exits = info["exits"]
        if len(exits) != 1 or exits[0].src is not info["latch"].src:
            return False  # the last iteration must run the same path as the others
        sums = self._running_sums(h, info)
        if sums is None:
            return False
        accesses = []
        for b in body:
            term = b.last_op
            for dst, operands in zip(term.successors, self.flavor.successor_operands(term)):
                for i, v in enumerate(operands):
                    if not self.act.is_active(v) or dst in body and dst is not h:
                        continue  # within an iteration
                    carried_on = sums.get(h.args[i]) is v if dst is h else v in sums.values()
                    if not carried_on:
                        return False
            for op in b.ops:
                for r in op.results:
                    if (self.act.is_active(r) and r not in sums.values()
                            and any(u.operation.parent_block() not in body for u in r.uses)):
                        return False
                kind = memory_kind(op)
                if kind in ("load", "store"):
                    if op.ptr in self.act.shadowed:
                        accesses.append(op)
                elif kind in ("derive", "select", "global"):
                    if is_a(op, llvm.CallOp):
                        return False
                elif kind is not None:
                    return False
                elif is_a(op, llvm.CallOp) and not is_pure(op):
                    return False
                elif is_a(op, llvm.CallIntrinsicOp) and not op.intrin.data.startswith(MARKER_INTRINSICS) and any(
                    is_a(o.type, llvm.LLVMPointerType) for o in op.operands
                ):
                    return False
        declared = {op.attributes[SCOPE_DECL].data for b in body for op in b.ops if is_scope_decl(op)}
        forms = _AffineForms(self, h, info)
        tc = self._trip_count(h)
        count = None if tc is None else constant_trip_count(tc)
        # two iterations are at most count - 1 apart (count bounds the header's runs)
        reach = None if count is None else count - 1
        stores = [op for op in accesses if is_a(op, llvm.StoreOp)]
        if not stores:
            return False  # for speed: see the module's docstring
        if len(stores) * len(accesses) > _MAX_PAIRS:
            return False  # compile time: every pair is compared
        for s in stores:
            for a in accesses:
                if not self._apart_across_iterations(s, a, forms, declared, reach):
                    return False
        return True

    def _running_sums(self, h: Block, info: dict) -> dict | None:
        """{header argument: its next value} for the active header arguments, when each
        is a running sum ``s' = s + t`` (or ``s - t``) whose partial values are used only
        to carry it on (and after the loop): then the adjoint of every partial sum is the
        adjoint of the final one, the same in every iteration. None when an active header
        argument is anything else (its adjoint would differ from one iteration to the next)."""
        body: set[Block] = info["body"]
        latch = info["latch"]
        term = latch.src.last_op
        carried = self.flavor.successor_operands(term)[latch.slot]
        sums = {}
        for a in h.args:
            if not self.act.is_active(a):
                continue
            nxt = carried[a.index]
            if isinstance(nxt, BlockArgument) or not a.has_one_use():
                return None
            if not _adds_to(nxt.owner, a):
                return None
            for u in nxt.uses:
                where = u.operation
                if where.parent_block() not in body:
                    continue
                if where is not term:
                    return None
                for dst, operands in zip(term.successors, self.flavor.successor_operands(term)):
                    for i, v in enumerate(operands):
                        if v is nxt and (dst in body and dst is not h or dst is h and i != a.index):
                            return None
            sums[a] = nxt
        return sums

    def _apart_across_iterations(self, s: Operation, a: Operation, forms: "_AffineForms", declared: set,
                                 reach: int | None, *, same_iteration: bool = False) -> bool:
        """Whether store ``s`` in one iteration never touches a byte that access ``a``
        touches in another (at most ``reach`` iterations away, when known), nor, with
        ``same_iteration``, in the same one."""
        fs, fa = forms.pointer(s.ptr), forms.pointer(a.ptr)
        if fs is not None and fa is not None and fs[0] is fa[0]:
            size_s, size_a = _access_size(s), _access_size(a)
            if _never_meet(fs[1], size_s, fa[1], size_a, reach) and (
                    not same_iteration or _apart_in_one_iteration(fs[1], size_s, fa[1], size_a)):
                return True
        if s is not a and _promised_apart(s, a, declared):
            return True
        if fs is not None and fa is not None and self._distinct_objects(fs[0], fa[0]):
            return True
        rs, ra = self._roots(s.ptr), self._roots(a.ptr)
        if rs is None or ra is None:
            return False
        return not any(self._may_share(r, x) for r in rs for x in ra)

    def _distinct_objects(self, p: SSAValue, q: SSAValue) -> bool:
        """Whether ``p`` and ``q`` point into two different objects for the pointer
        roots: arguments of one block that receive, on every edge, either two values
        with distinct roots or ``p`` and ``q`` themselves, in either order (the two
        buffers of a time loop, swapped each step: by induction over the edges taken,
        the pair is always the two objects it started as)."""
        if not (isinstance(p, BlockArgument) and isinstance(q, BlockArgument)) or p.block is not q.block or p is q:
            return False
        for e in self.cfg.preds.get(p.block, ()):
            operands = self.flavor.successor_operands(e.src.last_op)[e.slot]
            x, y = operands[p.index], operands[q.index]
            if (x is p and y is q) or (x is q and y is p):
                continue
            rx, ry = self._roots(x), self._roots(y)
            if rx is None or ry is None or any(self._may_share(r, t) for r in rx for t in ry):
                return False
        return bool(self.cfg.preds.get(p.block))

    def make_ascending(self, gop: Operation) -> None:
        """Turn the reverse of each qualifying counted loop into an ascending count
        (called once the whole reverse sweep exists)."""
        for h in [h for h in self._count_ops if h in self.commuting]:  # in a fixed order: reproducible output
            info = self.counted[h]
            if self._stack_taped_in(info["body"]) or h in self.__dict__.get("strided_tape_loops", ()):
                continue
            _explain(self.fname, h, info["body"])
            cmp_op, step_op, step_set = self._count_ops[h]
            slot = info["slot"]
            # the slot's own uses, not a walk of the whole derivative per loop; each
            # rewrite below is local to its set, so their order does not matter
            entries = list({id(u.operation): u.operation for u in slot.uses
                            if isinstance(u.operation, ez.SetOp) and u.operation.gradient is slot
                            and u.operation is not step_set}.values())
            last = ez.InitOp(ez.GradientType(i64))
            self.g_entry.insert_op_before(last, self._entry_branch)
            for setop in entries:
                zero = llvm.ConstantOp(IntegerAttr(0, i64), i64)
                setop.parent_block().insert_ops_before(
                    [ez.SetOp(last.results[0], setop.value), zero], setop
                )
                setop.operands = [slot, zero.results[0]]
            self.__dict__.setdefault("ascended", {})[h] = last.results[0]  # the last iteration's number
            get_last = ez.GetOp(last.results[0])
            cmp_op.parent_block().insert_op_before(get_last, cmp_op)
            cmp_op.operands = [cmp_op.operands[0], get_last.results[0]]
            up = llvm.AddOp(step_op.operands[0], step_op.operands[1])
            step_op.parent_block().insert_op_before(up, step_op)
            step_op.results[0].replace_all_uses_with(up.results[0])
            step_op.parent_block().erase_op(step_op)

    def _stack_taped_in(self, body: set[Block]) -> bool:
        """Whether the forward sweep pushes on a LIFO cache inside loop ``body`` (in
        the copy of one of its blocks, or on an edge between two of them)."""
        blocks = [self.bmap[b] for b in body]
        blocks += [nb for e, nb in self.__dict__.get("_exit_blocks", {}).items() if e.src in body and e.dst in body]
        return any(is_a(op, ez.PushOp) for nb in blocks for op in nb.ops)


def _adds_to(op: Operation, a: SSAValue) -> bool:
    """``op`` is ``a + t``, ``t + a``, ``a - t`` or ``x * y + a`` (fma, fmuladd), ``a`` in
    no other operand."""
    if isinstance(op, llvm.FAddOp):
        return a in op.operands and op.operands[0] is not op.operands[1]
    if isinstance(op, llvm.FSubOp):
        return op.operands[0] is a and op.operands[1] is not a
    if isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(("llvm.fmuladd.", "llvm.fma.")):
        return len(op.operands) == 3 and op.operands[2] is a and a not in op.operands[:2]
    return False


def _explain(fname: str, h: Block, body: set[Block]) -> None:
    """With ZYMASE_DEBUG_TAPE=1, name the loops whose reverse runs upwards (on stderr)."""
    if os.environ.get("ZYMASE_DEBUG_TAPE", "") in ("", "0"):
        return
    blocks = [h] + [b for b in body if b is not h]
    where = next((loc for b in blocks for op in b.ops if (loc := location_of(op))), "an unknown line")
    print(f"zymase: tape: {fname}: the loop at {where}: reversed in ascending order (its iterations commute)",
          file=sys.stderr)


def _access_size(op: Operation) -> int:
    t = op.results[0].type if is_a(op, llvm.LoadOp) else op.value.type
    return size_align(t)[0]


def _promised_apart(x: Operation, y: Operation, declared: set) -> bool:
    """The source's scoped-noalias promise separates ``x`` and ``y`` in every pair of
    iterations: all of one's scopes are among the other's noalias scopes, and none
    of them is declared inside the loop (a declaration there starts a new promise
    each iteration)."""
    sx, nx = source_scopes(x)
    sy, ny = source_scopes(y)
    for scopes, noalias in ((sx, ny), (sy, nx)):
        if scopes and set(scopes) <= set(noalias) and not (set(scopes) & declared):
            return True
    return False


def _apart_in_one_iteration(fs: dict, size_s: int, fa: dict, size_a: int) -> bool:
    """Bytes ``[fs(k), fs(k) + size_s)`` and ``[fa(k), fa(k) + size_a)`` are disjoint
    for every ``k`` (the same iteration number and invariant terms in both)."""
    if {x: v for x, v in fs.items() if x != _ONE} != {x: v for x, v in fa.items() if x != _ONE}:
        return False
    d = fs.get(_ONE, 0) - fa.get(_ONE, 0)
    return not (-size_a < d < size_s)


def _never_meet(fs: dict, size_s: int, fa: dict, size_a: int, reach: int | None) -> bool:
    """Bytes ``[fs(k), fs(k) + size_s)`` and ``[fa(k'), fa(k') + size_a)`` are disjoint
    for all ``k != k'`` (affine forms over the iteration number and invariant values)
    with ``|k - k'| <= reach`` (any distance when ``reach`` is None)."""
    c = fs.get(_K, 0)
    if c == 0 or fa.get(_K, 0) != c:
        return False
    if {x: v for x, v in fs.items() if x not in (_K, _ONE)} != {x: v for x, v in fa.items() if x not in (_K, _ONE)}:
        return False
    # they meet at distance t = k' - k iff  os - oa - size_a < c t < os - oa + size_s
    d = fs.get(_ONE, 0) - fa.get(_ONE, 0)
    lo, hi = d - size_a, d + size_s
    t_lo, t_hi = sorted((lo / c, hi / c))
    first, last = int(t_lo) - 1, int(t_hi) + 1
    if reach is not None:
        first, last = max(first, -reach), min(last, reach)
    if last - first > _MAX_DISTANCES:
        return False
    return not any(t != 0 and lo < c * t < hi for t in range(first, last + 1))


class _AffineForms:
    """Integers and pointers of loop ``h`` as affine forms: ``{key: coefficient}`` with
    keys ``"k"`` (the iteration number), ``1`` and values fixed during a run of the
    loop; a pointer is ``(base, form in bytes)``. None when a value is not affine."""

    def __init__(self, gen, h: Block, info: dict):
        self.gen = gen
        self.h = h
        self.body: set[Block] = info["body"]
        self.latch = info["latch"]
        self.entry = info["entry"]
        self.memo: dict = {}

    def _invariant(self, v: SSAValue) -> bool:
        home = v.block if is_a(v, BlockArgument) else v.owner.parent_block()
        return home not in self.body

    def _step(self, v: BlockArgument):
        """(next-value op, init) of header argument ``v``."""
        ops = self.gen.flavor.successor_operands
        nxt = ops(self.latch.src.last_op)[self.latch.slot][v.index]
        init = ops(self.entry.src.last_op)[self.entry.slot][v.index]
        if isinstance(nxt, BlockArgument) or not nxt.owner.operands or nxt.owner.operands[0] is not v:
            return None
        return nxt.owner, init

    def integer(self, v: SSAValue, unsigned: bool = False) -> dict | None:
        """The affine form of the value of ``v`` read as a signed integer (as GEP
        indices and ``sext`` read it) or, with ``unsigned``, as ``zext`` reads it."""
        key = ("i", v, unsigned)
        if key not in self.memo:
            self.memo[key] = None  # a cycle through a phi is not affine
            self.memo[key] = self._integer(v, unsigned)
        return self.memo[key]

    def _integer(self, v: SSAValue, unsigned: bool) -> dict | None:
        """Arithmetic narrower than 64 bits counts only when its no-wrap flag for the
        reading says it computes the mathematical value; i64 forms are exact modulo
        2^64, as addresses are."""
        width = v.type.width.data if isinstance(v.type, IntegerType) else 64
        c = constant_int(v)
        if c is not None:
            return {_ONE: c + (1 << width) if unsigned and c < 0 and width < 64 else c}
        if self._invariant(v):
            return {(v, unsigned) if width < 64 else v: 1}
        if isinstance(v, BlockArgument):
            if v.block is not self.h:
                return None
            found = self._step(v)
            if found is None or not isinstance(found[0], (llvm.AddOp, llvm.SubOp)):
                return None
            op, init = found
            step = constant_int(op.operands[1])
            start = self.integer(init, unsigned)
            if step is None or start is None or not _exact(op, unsigned):
                return None
            return _add(start, {_K: step if isinstance(op, llvm.AddOp) else -step})
        op = v.owner
        if not _exact(op, unsigned):
            return None
        if isinstance(op, (llvm.SExtOp, llvm.ZExtOp)):
            return self.integer(op.operands[0], isinstance(op, llvm.ZExtOp))
        disjoint = isinstance(op, llvm.OrOp) and op.properties.get("isDisjoint") is not None  # an add, no carries
        if isinstance(op, (llvm.AddOp, llvm.SubOp)) or disjoint:
            x, y = self.integer(op.operands[0], unsigned), self.integer(op.operands[1], unsigned)
            if x is None or y is None:
                return None
            return _add(x, _scale(y, -1) if isinstance(op, llvm.SubOp) else y)
        if isinstance(op, (llvm.MulOp, llvm.ShlOp)):
            for i in (0, 1):
                k = constant_int(op.operands[1 - i])
                if k is not None and (isinstance(op, llvm.MulOp) or i == 0):
                    x = self.integer(op.operands[i], unsigned)
                    return None if x is None else _scale(x, k if isinstance(op, llvm.MulOp) else 1 << k)
        return None

    def pointer(self, p: SSAValue):
        key = ("p", p)
        if key not in self.memo:
            self.memo[key] = None
            self.memo[key] = self._pointer(p)
        return self.memo[key]

    def _pointer(self, p: SSAValue):
        if is_a(p, BlockArgument):
            if self._invariant(p):
                return p, {}
            if p.block is not self.h:
                return None
            found = self._step(p)
            if found is None or not isinstance(found[0], llvm.GEPOp):
                return None
            op, init = found
            offset = self._gep_offset(op)
            start = self.pointer(init)
            if offset is None or start is None or set(offset) - {_ONE}:
                return None
            return start[0], _add(start[1], {_K: offset.get(_ONE, 0)})
        op = p.owner
        if isinstance(op, llvm.GEPOp):
            base = self.pointer(op.operands[0])
            offset = self._gep_offset(op)
            if base is not None and offset is not None:
                return base[0], _add(base[1], offset)
        return (p, {}) if self._invariant(p) else None

    def _gep_offset(self, op: Operation) -> dict | None:
        ssa = iter(op.ssa_indices)
        t = op.elem_type
        out: dict = {}
        for i, raw in enumerate(op.rawConstantIndices.iter_values()):
            idx = next(ssa) if raw == llvm.GEP_USE_SSA_VAL else raw
            if i > 0:
                if isinstance(t, llvm.LLVMArrayType):
                    t = t.type
                elif isinstance(idx, int) and isinstance(t, llvm.LLVMStructType):
                    out = _add(out, {_ONE: struct_offsets(t)[idx]})
                    t = t.types.data[idx]
                    continue
                else:
                    return None
            size = size_align(t)[0]
            form = {_ONE: idx} if isinstance(idx, int) else self.integer(idx)
            if form is None:
                return None
            out = _add(out, _scale(form, size))
        return out


def _exact(op: Operation, unsigned: bool) -> bool:
    """Integer arithmetic that computes its mathematical value (read signed, or
    unsigned): 64 bits wide, or flagged not to wrap that way (an ``or disjoint`` has
    no carries)."""
    if not isinstance(op, (llvm.AddOp, llvm.SubOp, llvm.MulOp, llvm.ShlOp)):
        return True
    t = op.results[0].type
    return (isinstance(t, IntegerType) and t.width.data >= 64) or bool(overflow_bits(op) & (NUW if unsigned else NSW))


def _add(x: dict, y: dict) -> dict:
    out = dict(x)
    for k, v in y.items():
        out[k] = out.get(k, 0) + v
        if out[k] == 0:
            del out[k]
    return out


def _scale(x: dict, c: int) -> dict:
    return {k: v * c for k, v in x.items() if v * c != 0}
