"""Where reverse mode keeps the primal values it needs: indexed per-loop caches.

A value the reverse sweep needs from inside a loop is, by default, pushed on a
growing LIFO stack once per iteration and popped in the reverse loop (one saved where
no loop is, at most once per call, is set in a slot instead: :func:`save_op`). When the
loops around it have trip counts known before they run (see
:mod:`zymase.analysis.trip_count`), the value goes into an ``enzyme.cache_alloc``
buffer instead, one slot per iteration, allocated once per run of the outermost
such loop (a nest of such loops shares one region of the product of their trip
counts, indexed by the linearized iteration numbers), written at the iteration
number in the forward sweep and read at the same number in the reverse sweep. No
bookkeeping runs per iteration, so LLVM keeps both loops free of memory-carried
dependences (and can vectorize them).

Each value gets one ``!enzyme.IndexedCache`` for the whole call: a nest that runs
once per call uses slots from 0; a nest inside another loop takes the next region
at each run (a running total, the region's offset taped once per run), so no run
allocates memory of its own (only the cache grows, by doubling). The storage is
released when the function returns.

Used as a mixin of :class:`zymase.autodiff.reverse.ReverseGenerator`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from zymase.analysis.trip_count import TripCount, constant_int, emit_trip_count, trip_count
from zymase.ir import (Block, BlockArgument, IndexType, IntegerAttr, IntegerType, OpClasses, Operation, SSAValue,
                       StringAttr, i64, llvm, location_of, memref)
from zymase.ir import enzyme as ez
from zymase.ir import fast_ops
from zymase.ir import llvm_ext, memref_ext
from zymase.llvm.noalias_scopes import drop_scopes
from zymase.analysis.op_classes import is_a


@dataclass
class LoopNest:
    """Loops ``headers[0]`` (innermost) .. ``headers[-1]`` sharing cache regions:
    each is entered at most once per iteration of the next, and all trip counts are
    known on entry to the outermost one, where ``block`` (a forward block on its
    entry edge) computes them (``counts``, forward values) and reserves the region
    ``[offset, end)`` of every cache of the nest. ``forward_index`` /
    ``reverse_index`` memoize the slot index per block."""

    headers: tuple[Block, ...]
    block: Block
    counts: list[SSAValue]
    offset: SSAValue
    end: SSAValue
    forward_index: dict[Block, SSAValue] = field(default_factory=dict)
    reverse_index: dict[Block, tuple[SSAValue, Operation | None]] = field(default_factory=dict)

    @property
    def outer(self) -> Block:
        return self.headers[-1]


class LifoCaches:
    """Mixin: the storage of values saved where no indexed cache applies (see
    :func:`save_op`): a LIFO cache, a slot for saves that run once per call, and split
    mode's global tape."""

    def _new_cache(self, typ, *, once: bool = False) -> SSAValue:
        """A LIFO cache of ``typ`` values, or with ``once`` (its saves run at most once per
        call) a slot: see tape.save_op."""
        init = ez.InitOp(ez.GradientType(typ) if once else ez.CacheType(typ))
        self.g_entry.insert_op_before(init, self._entry_branch)
        return init.results[0]

    def _once_per_call(self, b: Block) -> bool:
        """Whether a value saved in (the forward copy of) block ``b`` for the reverse sweep
        goes in a slot rather than on a LIFO cache: ``b`` is in no cycle, so the save runs
        at most once per call. LLVM flavor only: the MLIR CFG path keeps its caches (a
        derivative with one is refused when differentiated again, ``common.prepare``)."""
        return self.flavor.name == "llvm" and not self.split and b not in self.cfg.in_cycle

    def _tape_at(self, typ, block: Block, before: Operation | None) -> SSAValue:
        """Split mode: the thread's global tape, named where it is used (the
        augmented and reverse functions share it, so no value crosses between them)."""
        init = ez.InitOp(ez.CacheType(typ))
        init.attributes["zymase.tape"] = StringAttr("global")
        if before is None:
            block.add_op(init)
        else:
            block.insert_op_before(init, before)
        return init.results[0]


class IndexedCaches:
    """Mixin: ``_indexed_cache(w)`` stores ``w`` in the forward copy of the current
    block and returns it loaded back in the current reverse block, or returns None
    when the current block is not inside a loop nest with known trip counts."""

    def _trip_count(self, header: Block) -> TripCount | None:
        memo = self.__dict__.setdefault("_trip_counts", {})
        if header not in memo:
            info = self.counted[header]
            tc = trip_count(self.cfg, header, info["body"], info["entry"], info["latch"], self.flavor.successor_operands)
            if tc is not None and any(
                isinstance(v.type, IntegerType) and v.type.width.data > 64 for v in tc.operands()
            ):
                tc = None
            memo[header] = tc
        return memo[header]

    def _loop_chain(self, b: Block) -> list[tuple[Block, set[Block]]]:
        """The natural loops around block ``b``, innermost first."""
        loops = [(h, body) for h, body in self.cfg.natural_loops() if b in body]
        return sorted(loops, key=lambda hb: len(hb[1]))

    def _nest_of(self, b: Block) -> LoopNest | None:
        """The nest of indexed-cache loops around block ``b`` (None: none)."""
        return self._nest_for(self._loop_chain(b))

    def _edge_nest(self, e) -> LoopNest | None:
        """The nest around edge ``e`` (the loops holding both of its ends)."""
        return self._nest_for([(h, body) for h, body in self._loop_chain(e.dst) if e.src in body])

    def _nest_for(self, chain: list[tuple[Block, set[Block]]]) -> LoopNest | None:
        if self.split or self.flavor.name != "llvm" or self.cfg.irreducible:
            # an irreducible cycle may run the outermost loop of a nest many times per
            # call, and an indexed cache holds one run of its nest
            return None
        nests = self.__dict__.setdefault("_nests", {})
        headers: list[Block] = []
        for h, body in chain:
            if h not in self.counted or self._trip_count(h) is None:
                break
            operands = [v for g in [*headers, h] for v in self._trip_count(g).operands()]
            if not all(self._invariant_in(v, body) for v in operands):
                break
            headers.append(h)
        if not headers:
            return None
        key = tuple(headers)
        if key not in nests:
            nests[key] = self._new_nest(key)
        return nests[key]

    def _invariant_in(self, v: SSAValue, body: set[Block]) -> bool:
        if constant_int(v) is not None:
            return True
        home = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
        return home not in body

    def _new_nest(self, headers: tuple[Block, ...]) -> LoopNest:
        outer = self.counted[headers[-1]]
        block = self._exit_edge_block(outer["entry"])  # a forward block on the entry edge
        E = self.E
        saved = (E.block, E.anchor)
        E.before(block.last_op)
        counts = [self._emit_trip_count(self._trip_count(h)) for h in headers]
        size = counts[0]
        for n in counts[1:]:
            size = E.v(llvm.MulOp(size, n))
        if self._runs_once(headers[-1]):
            offset, end = E.v(llvm.ConstantOp(IntegerAttr(0, i64), i64)), size
        else:
            total = ez.InitOp(ez.GradientType(i64))
            self.g_entry.insert_op_before(total, self._entry_branch)
            offset = E.v(ez.GetOp(total.results[0]))
            end = E.v(llvm.AddOp(offset, size))
            E.insert(ez.SetOp(total.results[0], end))
        E.block, E.anchor = saved
        return LoopNest(headers, block, counts, offset, end)

    def _runs_once(self, header: Block) -> bool:
        """Whether loop ``header`` is entered at most once per call (no loop around it)."""
        return len(self._loop_chain(header)) == 1

    def _forward_value(self, v: SSAValue) -> SSAValue:
        if constant_int(v) is not None and not isinstance(v, BlockArgument):
            return self.E.v(fast_ops.clone(v.owner))
        return self.vmap.get(v, v)

    def _emit_trip_count(self, tc: TripCount, value=None) -> SSAValue:
        """``N`` of ``tc`` (see TripCount), from the values ``value`` gives for its
        operands: by default their forward copies."""
        return emit_trip_count(self.E, tc, value or self._forward_value)

    def _linear_index(self, nest: LoopNest, offset: SSAValue, ks: list[SSAValue], counts: list[SSAValue]) -> SSAValue:
        """``offset + ((k_m * N_{m-1} + k_{m-1}) * N_{m-2} + ...) * N_0 + k_0``."""
        from zymase.ir.fast_ops import int_arith

        E = self.E
        idx = ks[-1]
        for j in range(len(ks) - 2, -1, -1):
            idx = E.v(int_arith(llvm.AddOp, E.v(int_arith(llvm.MulOp, idx, counts[j])), ks[j]))
        return idx if self._runs_once(nest.outer) else E.v(int_arith(llvm.AddOp, offset, idx))

    def _new_indexed_cache(self, nest: LoopNest, typ) -> SSAValue:
        """An indexed cache of ``typ`` with room for each run of ``nest``."""
        from zymase.autodiff.semantics import differentiated_again

        cache = ez.InitOp(ez.IndexedCacheType(typ))
        if differentiated_again():
            # a derivative that will be differentiated again keeps its tape in a buffer
            # of its own (malloc/realloc/free, which the engine shadows), not in the
            # module's spare-buffer globals and {ptr, i64} aggregates
            cache.attributes["zymase.tape"] = StringAttr("heap")
        self.g_entry.insert_op_before(cache, self._entry_branch)
        nest.block.insert_op_before(ez.CacheReserveOp(cache.results[0], nest.end), nest.block.last_op)
        return cache.results[0]

    def _store_indexed(self, nest: LoopNest, cache: SSAValue, fwd: Block, w: SSAValue,
                       same: frozenset = frozenset()) -> None:
        """Forward: store ``w`` at the end of forward block ``fwd`` (inside the nest)
        at the slot of the current iterations (iteration 0 of the loops in ``same``)."""
        E = self.E
        saved = (E.block, E.anchor)
        if (fwd, same) not in nest.forward_index:
            E.before(fwd.last_op)
            ks = [self._zero_i64() if h in same else self.counted[h]["k"] for h in nest.headers]
            nest.forward_index[(fwd, same)] = self._linear_index(nest, nest.offset, ks, nest.counts)
        fwd.insert_op_before(ez.CacheStoreOp(cache, nest.forward_index[(fwd, same)], w), fwd.last_op)
        E.block, E.anchor = saved

    def _zero_i64(self) -> SSAValue:
        return self.E.v(llvm.ConstantOp(IntegerAttr(0, i64), i64))

    def _reverse_index(self, nest: LoopNest, same: frozenset = frozenset()) -> SSAValue:
        """Reverse: the slot of the iterations being reversed (iteration 0 of the
        loops in ``same``), emitted at ``E``."""
        E = self.E
        body = self.counted[nest.outer]["body"]
        ks = [self._zero_i64() if h in same else E.v(ez.GetOp(self.counted[h]["slot"])) for h in nest.headers]
        counts = [E.v(ez.GetOp(self._run_slot(n, nest.outer, body))) for n in nest.counts[:-1]]
        offset = nest.offset
        if not self._runs_once(nest.outer):
            offset = E.v(ez.GetOp(self._run_slot(nest.offset, nest.outer, body)))
        return self._linear_index(nest, offset, ks, counts)

    def _indexed_cache(self, w: SSAValue, v: SSAValue | None = None) -> SSAValue | None:
        """``w`` (the forward copy of primal ``v``, when given) through an indexed
        cache. A value that is the same in every iteration of some loops of the
        nest (``exp(q[k])`` in a loop over points) is kept in the slots of their
        first iteration only: the forward sweep rewrites one slot with the same
        value, and the tape it touches stays small enough for the L1 cache."""
        nest = self._nest_of(self.cur)
        if nest is None:
            return None
        same = frozenset(h for h in nest.headers if v is not None and self._same_each_iteration(v, h))
        explain_tape(self.fname, w, f"indexed by {len(nest.headers) - len(same)} of {len(nest.headers)} loops")
        self._note_slot_order(nest, same)
        cache = self._new_indexed_cache(nest, w.type)
        self._store_indexed(nest, cache, self.bmap[self.cur], w, same)
        # reverse: read the same slot at the top of the current reverse block
        E = self.E
        saved = (E.block, E.anchor)
        rb = self.rev[self.cur]
        if (self.cur, same) not in nest.reverse_index:
            anchor = rb.first_op
            self._emit_at_top(rb, anchor)
            nest.reverse_index[(self.cur, same)] = (self._reverse_index(nest, same), anchor)
        idx, anchor = nest.reverse_index[(self.cur, same)]
        self._emit_at_top(rb, anchor)
        value = E.v(ez.CacheLoadOp(cache, idx))
        E.block, E.anchor = saved
        return value

    def _note_slot_order(self, nest: LoopNest, same: frozenset) -> None:
        """Record in ``strided_tape_loops`` the loops whose iteration picks a slot inside
        a region of the tape that an enclosing loop also picks (the nest's outer loops, or
        the runs of a nest inside another loop). The reverse sweep reads the tape
        backwards, in step with the forward sweep's writes; one of these loops reversed
        in ascending order inside a descending one would read it in a saw-tooth that the
        hardware prefetchers do not follow (see autodiff/ascending.py)."""
        indexed = [h for h in nest.headers if h not in same]
        if indexed and self._runs_once(nest.outer):
            indexed.pop()  # the outermost loop reads its region end to end, either way
        self.__dict__.setdefault("strided_tape_loops", set()).update(indexed)

    def _emit_at_top(self, rb: Block, anchor: Operation | None) -> None:
        if anchor is None:
            self.E.at_end(rb)
        else:
            self.E.before(anchor)

    # ---- values that do not change from one iteration of a loop to the next --------
    def _same_each_iteration(self, v: SSAValue, header: Block) -> bool:
        """Whether primal ``v`` takes the same value in every iteration of loop
        ``header`` (for the same iterations of the loops inside it): it is computed
        by pure ops from values defined outside the loop, the induction variables of
        counted loops inside it, and loads of memory that the loop does not write."""
        memos = self.__dict__.setdefault("_same_memo", {})
        memo = memos.setdefault(header, {})
        return self._same_in(v, header, self.counted[header]["body"], memo)

    def _deciding_conditions(self, b: Block) -> list[SSAValue]:
        """The values that decide which edge control enters block ``b`` by: the
        conditions of the branches between ``b``'s immediate dominator and ``b``. A
        branch on anything else (or an unknown terminator) makes it [None]."""
        stop = self.cfg.idom.get(b)
        seen, work, out = set(), [e.src for e in self.cfg.preds[b]], []
        while work:
            x = work.pop()
            if x in seen:
                continue
            seen.add(x)
            term = x.last_op
            if len({id(s) for s in term.successors}) > 1:
                if isinstance(term, llvm.CondBrOp):
                    out.append(term.cond)
                elif isinstance(term, llvm_ext.SwitchOp):
                    out.append(term.value)
                else:
                    return [None]
            if x is not stop:
                work.extend(e.src for e in self.cfg.preds[x])
        return out

    def _same_in(self, v: SSAValue | None, header: Block, body: set[Block], memo: dict) -> bool:
        if v is None:
            return False
        if v in memo:
            return memo[v]
        if isinstance(v, BlockArgument):
            b = v.block
            if b not in body:
                return True
            if b is not header and b not in self.counted:
                # a join inside the loop: the same when every incoming value is and so
                # is every branch that decides which edge comes in (a packed triangle's
                # row start after a row loop that may be skipped)
                memo[v] = False  # no cycle reaches a join without passing a loop header
                ok = all(self._same_in(x, header, body, memo) for x in self._incoming(v)) and all(
                    self._same_in(c, header, body, memo) for c in self._deciding_conditions(b)
                )
                memo[v] = ok
                return ok
            if b is header:
                memo[v] = False
                return False
            # a phi of a counted loop inside: assume it is the same while its
            # incoming values are checked (its own back edge leads here again);
            # if not, forget what was concluded under the assumption. Read after
            # that loop, it holds its last iteration's value, which is the same only
            # when the loop's trip count is (a triangular loop's is not: issue 23
            # item 2)
            mark = len(memo)
            memo[v] = True
            info = self.counted[b]
            tc = self._trip_count(b)
            ok = tc is not None and all(self._same_in(x, header, body, memo) for x in tc.operands()) and all(
                self._same_in(self.flavor.successor_operands(e.src.last_op)[e.slot][v.index], header, body, memo)
                for e in (info["entry"], info["latch"])
            )
            if not ok:
                for key in list(memo)[mark:]:
                    del memo[key]
                memo[v] = False
            return ok
        op = v.owner
        if op.parent_block() not in body:
            return True
        if isinstance(op, llvm.LoadOp):
            writes = self.__dict__.setdefault("_loop_writes", {})
            if header not in writes:
                writes[header] = self._writes_in(body)
            ok = self._same_in(op.ptr, header, body, memo) and self._not_written(op.ptr, writes[header], op)
        elif self.flavor.is_constant(op) or is_pure(op):
            ok = all(self._same_in(o, header, body, memo) for o in op.operands)
        else:
            ok = False
        memo[v] = ok
        return ok


# ---------------------------------------------------------------------------------
# Recompute instead of caching: a minimum cut over the dataflow graph
# ---------------------------------------------------------------------------------

_CHEAP_OPS = (
    llvm.GEPOp, llvm.SExtOp, llvm.ZExtOp, llvm.TruncOp, llvm.AddOp, llvm.SubOp, llvm.MulOp,
    llvm.ShlOp, llvm.LShrOp, llvm.AShrOp, llvm.AndOp, llvm.OrOp, llvm.XOrOp, llvm.BitcastOp,
    llvm.ICmpOp, llvm.SelectOp, llvm.FCmpOp, llvm.FAddOp, llvm.FSubOp, llvm.FMulOp, llvm.FNegOp,
    llvm.FDivOp, llvm.SIToFPOp, llvm_ext.UIToFPOp, llvm.FPExtOp, llvm.FPTruncOp,
)
"""Pure ops worth recomputing in the reverse sweep rather than taping their result."""

_CHEAP_STD_OPS = OpClasses(
    "arith.AddfOp", "arith.SubfOp", "arith.MulfOp", "arith.DivfOp", "arith.NegfOp", "arith.AddiOp", "arith.SubiOp",
    "arith.MuliOp", "arith.AndIOp", "arith.OrIOp", "arith.XOrIOp", "arith.ShLIOp", "arith.ShRSIOp", "arith.ShRUIOp",
    "arith.IndexCastOp", "arith.ExtSIOp", "arith.ExtUIOp", "arith.TruncIOp", "arith.ExtFOp", "arith.TruncFOp",
    "arith.SIToFPOp", "arith.UIToFPOp", "arith.CmpiOp", "arith.CmpfOp", "arith.SelectOp", "arith.MaxnumfOp",
    "arith.MinnumfOp", "arith.MaximumfOp", "arith.MinimumfOp", "math.FmaOp", "math.AbsFOp", "math.CopySignOp",
)
"""The same for func/arith/math code."""

_CHEAP_INTRINSICS = (
    "llvm.fmuladd.", "llvm.fma.", "llvm.fabs.", "llvm.copysign.", "llvm.smax.", "llvm.smin.",
    "llvm.umax.", "llvm.umin.", "llvm.maxnum.", "llvm.minnum.", "llvm.abs.",
)
"""Intrinsics as cheap as arithmetic; other calls (exp, log, pow, sin, ...) are taped."""

_MAX_RECOMPUTED = 32
_INF = float("inf")


def save_op(cache: SSAValue, w: SSAValue) -> Operation:
    """The forward sweep's save of ``w`` for the reverse sweep: a push on a LIFO cache
    (``!enzyme.Cache``), or, where every save runs at most once per call (its block is in
    no cycle), a set of a slot (``!enzyme.Gradient``, from ``_new_cache(once=True)``).
    A slot is an entry-block alloca that SROA turns into SSA values; a cache is a stack
    struct with a 128-byte buffer, push and pop calls LLVM inlines with their growth
    paths (about 30 instructions each) and a ``free`` before every return."""
    return ez.SetOp(cache, w) if isinstance(cache.type, ez.GradientType) else ez.PushOp(cache, w)


def restore_op(cache: SSAValue) -> Operation:
    """The reverse sweep's read of what :func:`save_op` saved."""
    return ez.GetOp(cache) if isinstance(cache.type, ez.GradientType) else ez.PopOp(cache)


def explain_tape(fname: str, w: SSAValue, how: str) -> None:
    """With ZYMASE_DEBUG_TAPE=1, say on stderr which forward values reverse mode
    tapes and how: the first question to ask when a gradient is slower than it
    should be."""
    if os.environ.get("ZYMASE_DEBUG_TAPE", "") in ("", "0"):
        return
    if isinstance(w, BlockArgument):
        what = f"block argument {w.index}: {w.type}"
        # blocks have no names here: place one by the first located op in it
        where = next((loc for op in w.block.ops if (loc := location_of(op))), None)
        if where:
            what = f"{what} of the block at {where}"
    else:
        what = str(w.owner).strip().splitlines()[0]
        where = location_of(w.owner)
        if where:
            what = f"{where}: {what}"
    print(f"zymase: tape: {fname}: {how}: {what[:150]}", file=sys.stderr)


def _bytes(t) -> int:
    if is_a(t, IntegerType):
        return max(1, (t.width.data + 7) // 8)
    width = getattr(t, "bitwidth", None)
    return width // 8 if isinstance(width, int) else 8


class MinCutRecompute:
    """Mixin: ``_recompute(v, w)`` rebuilds forward value ``w`` (computed alongside
    primal ``v``) in the current reverse block from cheaper material, or returns
    None when taping ``w`` itself is cheapest.

    The graph: ``w``'s operands, transitively, through cheap pure ops (and loads
    of memory the function never writes). Values the reverse sweep has for free
    (arguments and values computed once, constants, rebuilt induction variables,
    values of an outer loop taped once per run, values already fetched in this
    block) end the search; other values (calls, loads of written memory, phis)
    must be taped if reached. Taping a value costs its size in bytes per
    iteration. A minimum vertex cut between the must-tape values and ``w``
    (Enzyme, SC'21) says which values to tape; everything above the cut is
    recomputed. Among equally cheap cuts the one nearest the must-tape values is
    chosen (its values serve more of the later requests), with loads preferred
    (a re-read costs more than arithmetic)."""

    def _recomputable(self, v: SSAValue, w: SSAValue) -> bool:
        """Whether ``w`` (computed alongside primal ``v``) may be computed again in the
        reverse sweep: a fact of the primal and its forward copy, asked again for the same
        values by every cut that reaches them and by the rebuild after each cut, so kept."""
        memo = self.__dict__.setdefault("_recomputable_memo", {})
        key = (v, w)
        if key not in memo:
            memo[key] = self._may_recompute(v, w)
        return memo[key]

    def _may_recompute(self, v: SSAValue, w: SSAValue) -> bool:
        if is_a(v, BlockArgument) or is_a(w, BlockArgument):
            return False
        vop, wop = v.owner, w.owner
        if vop.name != wop.name or len(vop.operands) != len(wop.operands) or vop.regions:
            return False
        if self.flavor.name != "llvm":
            return self._recomputable_std(v)
        if is_a(vop, llvm.LoadOp):
            # (no re-reading in split mode: the augmented function's stack is gone)
            t = vop.results[0].type
            return (not self.split and (isinstance(t, IntegerType) or t == w.type and _is_float(t))
                    and (self._never_written(vop.ptr, vop) or self._unwritten_after(vop)))
        if is_a(vop, llvm.CallIntrinsicOp):
            return vop.intrin.data.startswith(_CHEAP_INTRINSICS) and vop.intrin == wop.intrin
        return is_a(vop, _CHEAP_OPS)

    def _recomputable_std(self, v: SSAValue) -> bool:
        """func/arith/memref code: arith ops, memref views (the shadow's view is taken
        again from the shadow: the operands of the two views pair up), and loads of
        memrefs that nothing writes after them (``_memref_unchanged_after``)."""
        op = v.owner
        if isinstance(op, (memref.SubviewOp, memref_ext.CastOp)):
            return True  # a view again (a shadow's view from the shadow: the operands pair up)
        if len(op.results) != 1 or not (isinstance(v.type, (IntegerType, IndexType)) or _is_float(v.type)):
            return False
        if isinstance(op, memref.LoadOp):
            return not self.split and self._memref_unchanged_after(op)
        return isinstance(op, _CHEAP_STD_OPS)

    def _memref_unchanged_after(self, load: Operation) -> bool:
        """Whether the memory ``load`` reads holds the same values in the reverse sweep:
        here, when no op of the function may write it at all."""
        return self._memref_never_written(load.memref)

    def _memref_never_written(self, m: SSAValue) -> bool:
        """No op of the function may write (or free) the memory memref ``m`` views, so
        it holds in the reverse sweep what it held when the forward sweep read it."""
        from zymase.analysis.memref import memref_roots, written_memref_roots

        if not hasattr(self, "_written_memrefs"):
            self._written_memrefs = written_memref_roots(self.p.region)
        roots, written = memref_roots(m, self.p.region.blocks[0]), self._written_memrefs
        if roots is None or written is None:
            return False
        return not any(self._may_share(r, x) for r in roots for x in written)

    def _free_in_reverse(self, v: SSAValue, w: SSAValue) -> bool:
        """Obtainable in the current reverse block without a per-iteration tape."""
        if not is_a(w, BlockArgument) and self.flavor.is_constant(w.owner):
            return True
        if (w, self.cur) in self.popped:
            return True
        if self.split:
            return w in self.rev_arg_of
        if self._available(v):
            return True
        if self._can_rebuild_induction(v, w):
            return True
        if w is self.vmap.get(v, v) and self._forwarding(v) is not None:
            return True  # rebuilt from the store that wrote it (autodiff/forwarding.py)
        return self._hoist_loop(v) is not None

    def _recompute(self, v: SSAValue, w: SSAValue) -> SSAValue | None:
        cut = recompute_cut(v, w, self._recomputable, self._free_in_reverse)
        if cut is None:
            return None
        if cut and self._hoist_loop(v) is not None:
            return None  # taping w once per run of an outer loop beats any per-iteration cut
        return self._rebuild(v, w, cut, top=True)

    def _rebuild(self, v: SSAValue, w: SSAValue, cut: set[SSAValue], top: bool = False) -> SSAValue:
        key = (w, self.cur)
        if key in self.popped:
            return self.popped[key]
        if not top:
            if w in cut:
                return self._fetch(v, w, recompute=False)
            if self._free_in_reverse(v, w) or not self._recomputable(v, w):
                return self._fetch(v, w)
        operands = [self._rebuild(ov, ow, cut) for ov, ow in zip(v.owner.operands, w.owner.operands)]
        old = w.owner.operands
        if len(set(old)) == len(old):
            # built with its operands (not given the forward ones, then these)
            clone = fast_ops.clone(w.owner, dict(zip(old, operands)))
        else:
            clone = fast_ops.clone(w.owner)
            clone.operands = operands
        drop_scopes(clone)  # a recomputed load is outside the region its scopes promise for
        self.E.insert(clone)
        self.popped[key] = clone.results[0]
        return clone.results[0]


def recompute_cut(v: SSAValue, w: SSAValue, recomputable, free) -> set[SSAValue] | None:
    """The forward values to tape so that ``w`` (computed alongside primal ``v``) can
    be rebuilt from them in the reverse sweep (empty: from free material alone), or
    None when taping ``w`` itself is cheapest. ``recomputable(v, w)``: whether an
    op may be run again; ``free(v, w)``: whether the reverse sweep has the value
    without a per-iteration tape. See :class:`MinCutRecompute`."""
    if not recomputable(v, w):
        return None
    # Explore: node = forward value; kind "op" (recomputable) or "leaf" (taped).
    pair: dict[SSAValue, SSAValue] = {w: v}
    kind: dict[SSAValue, str] = {w: "op"}
    users: dict[SSAValue, list[SSAValue]] = {}
    work = [w]
    ops = 1
    while work:
        x = work.pop()
        xv = pair[x]
        for ov, ow in zip(xv.owner.operands, x.owner.operands):
            if ow in kind:
                users.setdefault(ow, []).append(x)
                continue
            if free(ov, ow):
                continue
            pair[ow] = ov
            users.setdefault(ow, []).append(x)
            if ops < _MAX_RECOMPUTED and recomputable(ov, ow):
                kind[ow] = "op"
                ops += 1
                work.append(ow)
            else:
                kind[ow] = "leaf"
    cut = _min_vertex_cut(kind, users, w, _tape_cost)
    return None if cut == {w} else cut


def is_pure(op: Operation) -> bool:
    """An op whose result depends on its operands only: arithmetic, and math
    intrinsics or libm functions that take no pointer."""
    if is_a(op, _CHEAP_OPS):
        return True
    if isinstance(op, (llvm.CallIntrinsicOp, llvm.CallOp)):
        from zymase.analysis.memory import memory_kind
        from zymase.autodiff.registry import REGISTRY

        if memory_kind(op) is not None or any(isinstance(o.type, llvm.LLVMPointerType) for o in op.operands):
            return False
        if isinstance(op, llvm.CallIntrinsicOp):
            return op.intrin.data.startswith("llvm.") and op.intrin.data.split(".")[1] in REGISTRY.by_function
        callee = op.callee
        return callee is not None and callee.root_reference.data in REGISTRY.by_function
    return False


_LOADS = OpClasses(llvm.LoadOp, "memref.LoadOp")


def _tape_cost(x: SSAValue) -> int:
    """Bytes taped per iteration (scaled), a little less for loads, so that ties go
    to taping a load rather than recomputing it."""
    is_load = not is_a(x, BlockArgument) and isinstance(x.owner, _LOADS)
    return 16 * _bytes(x.type) - (1 if is_load else 0)


def _is_float(t) -> bool:
    from zymase.ir import is_float_type

    return is_float_type(t)


def _min_vertex_cut(kind: dict, users: dict, sink, cost) -> set:
    """Minimum-cost set of nodes meeting every path from a ``leaf`` node up to
    ``sink`` (node capacities ``cost``; max-flow on the split graph, Edmonds-Karp),
    taking the cut nearest the leaves."""
    cap: dict[tuple, float] = {}
    adj: dict = {}

    def edge(a, b, c):
        cap[(a, b)] = cap.get((a, b), 0) + c
        cap.setdefault((b, a), 0)
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)

    source = ("source",)
    for x, k in kind.items():
        edge((x, "in"), (x, "out"), cost(x))
        if k == "leaf":
            edge(source, (x, "in"), _INF)
        for u in users.get(x, []):
            edge((x, "out"), (u, "in"), _INF)
    target = (sink, "out")
    if source not in adj:
        return set()
    while True:
        parent = {source: None}
        queue = [source]
        for a in queue:
            if a == target:
                break
            for b in adj.get(a, ()):
                if b not in parent and cap[(a, b)] > 0:
                    parent[b] = a
                    queue.append(b)
        if target not in parent:
            break
        path = []
        b = target
        while parent[b] is not None:
            path.append((parent[b], b))
            b = parent[b]
        push = min(cap[e] for e in path)
        if push == _INF:
            return {sink}  # cannot happen: every node has a finite capacity
        for a, b in path:
            cap[(a, b)] -= push
            cap[(b, a)] += push
    reached = set(parent)
    return {x for x in kind if (x, "in") in reached and (x, "out") not in reached}
