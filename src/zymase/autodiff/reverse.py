"""Reverse mode: one combined function that runs the primal forward sweep and then
the adjoint (reverse) sweep over the control-flow graph.

Layout of the generated function ``G``::

    ^entry(args, shadows, seeds):    caches and accumulators; br ^fwd.B0(args)
    ^fwd.B ...                       the primal blocks, copied; blocks with several
                                     predecessors get an extra i32 argument telling
                                     which edge was taken, pushed on a cache
    ^fwd.exit                        seeds the adjoints of returned values; br ^rev.exit
    ^rev.B ...                       one block per primal block, ops in reverse order;
                                     ends by popping the edge index (or rebuilding it
                                     from a branch condition, or counting a loop's
                                     iterations down) and branching to the edge block
                                     that routes block-argument adjoints to the operands
                                     of that edge, then to ^rev.pred
    ^rev.B0                          returns the primal results and the derivatives

Adjoints of values used only in their own block live in SSA values; the others in
``enzyme.init : !enzyme.Gradient<T>`` accumulators (``enzyme.get``/``enzyme.set``),
zeroed after use when their block is in a loop. A primal value the reverse sweep
needs is read directly when it is computed once and dominates the exit, rematerialized
when it is a constant, and otherwise pushed on an ``!enzyme.Cache<T>`` at the end of
the forward block that needs it and popped at the start of its reverse block (tape.py
and forwarding.py keep most values cheaper than that). Returns marked abandoned
(names.ABANDON) return at once, without a reverse sweep. Later cleanups turn these
generic ops into plain SSA and memory (see transforms/).

Vector mode (``width`` N > 1, autodiff/lanes.py): one forward sweep and one tape, and
N lanes of adjoints in the reverse sweep (each op's reverse emitted once per lane, a
call's reverse as one call of the callee's width-N derivative); the function takes N
shadows per dup argument and N seeds per active result, and returns N derivatives
per active argument.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from zymase.analysis.cfg import CFG, Edge
from zymase.autodiff.ascending import AscendingLoops
from zymase.autodiff.stencil_gather import StencilGather
from zymase.autodiff.counted_loops import CountedLoops
from zymase.autodiff.taken_edges import TakenEdges
from zymase.autodiff.written_memory import WrittenMemory
from zymase.autodiff.common import (
    mark_shadow_args,
    no_rule_error,
    Context,
    Prepared,
    function_name,
    prepare,
)
from zymase.analysis.memory import callee_name, memory_kind
from zymase.llvm.noalias_scopes import is_scope_decl
from zymase.autodiff.flavor import Emitter
from zymase.autodiff.rounded_partials import RoundedPartials
from zymase.autodiff.lanes import LaneMaps
from zymase.autodiff.memory import ShadowCode, twin_decl
from zymase.autodiff.names import ABANDONED
from zymase.autodiff.registry import ScalarRule, call_memory_rule
from zymase.autodiff.rules.mpi import deferred_communicator_frees
from zymase.autodiff.semantics import differentiated_again, strong_zero
from zymase.autodiff import checkpoint, region_recompute, region_versioning
from zymase.transforms.inline import hoist_allocas
from zymase.transforms.numba_parfor import is_parfor
from zymase.transforms.numba_parfor import mark_recomputed as mark_parfor_recomputed
from zymase.transforms.openmp import mark_recomputed, reverse_mirror
from zymase.autodiff.forwarding import StoreForwarding
from zymase.autodiff.tape import IndexedCaches, LifoCaches, MinCutRecompute, explain_tape, restore_op, save_op
from zymase.ir import (Block, BlockArgument, IntegerAttr, IntegerType, OpResult, Operation, Region, SSAValue, i1,
                       i8, i64, is_float_type, llvm)
from zymase.ir import enzyme as ez
from zymase.ir import fast_ops
from zymase.ir.enzyme import Activity
from zymase.analysis.op_classes import is_a



def lane_by_lane(op: Operation) -> bool:
    """Whether vector mode reverses memory op ``op`` lane by lane: a call whose rule says
    so (BLAS and LAPACK, registry.CallMemoryRule.lane_by_lane)."""
    return memory_kind(op) == "call_rule" and call_memory_rule(callee_name(op)).lane_by_lane(op)


def _uses_later_values(region: Region) -> bool:
    """Whether an op of ``region`` uses the result of an op in the same or a later block
    of the region's block list, after it (a loop's latch listed before its header)."""
    blocks = set(region.blocks)
    seen: set[int] = set()
    for b in region.blocks:
        for op in b.ops:
            for o in op.operands:
                if is_a(o, OpResult) and id(o.op) not in seen and o.op.parent in blocks:
                    return True
            seen.add(id(op))
    return False


def _is_lifetime_marker(op: Operation) -> bool:
    """A call to llvm.lifetime.start/end."""
    return is_a(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith("llvm.lifetime.")


def _is_stack_intrinsic(op: Operation, which: str) -> bool:
    """A call to llvm.stacksave or llvm.stackrestore (``which``), mangled or not."""
    if not is_a(op, llvm.CallIntrinsicOp):
        return False
    name = op.intrin.data
    return name == f"llvm.{which}" or name.startswith(f"llvm.{which}.")


# How many dominators up from a block _assume_guards looks for branch conditions.
_GUARD_DEPTH = 24

#: the true of an i1 (-1), which _assume's negated conditions xor with
_ALL_ONES_I1 = IntegerAttr(-1, IntegerType(1))


@functools.cache
def _assume_properties() -> dict:
    """The properties xDSL's constructor gives a call of llvm.assume (its defaults
    included), taken from one op it builds."""
    cond = Block(arg_types=[i1]).args[0]
    return dict(llvm.CallIntrinsicOp("llvm.assume", [cond], []).properties)


class ReverseGenerator(LaneMaps, ShadowCode, LifoCaches, IndexedCaches, MinCutRecompute, StoreForwarding, AscendingLoops,
                       StencilGather, CountedLoops, TakenEdges, WrittenMemory):
    def __init__(self, ctx: Context, fop: Operation, arg_acts: Sequence[Activity], ret_acts: Sequence[Activity], name: str,
                 width: int = 1):
        self.ctx = ctx
        self.flavor = ctx.flavor
        self.fop = fop
        self.arg_acts = list(arg_acts)
        self.ret_acts = list(ret_acts)
        self.name = name
        self.fname = function_name(fop)
        self.aug_op: Operation | None = None
        self.init_lanes(width)
        self.rounded_partials = RoundedPartials()

    # ------------------------------------------------------------------------------
    def generate_split(self, aug_op: Operation, rev_op: Operation) -> None:
        """Split mode (Enzyme's augmented primal + reverse pass), for callees that
        cannot be recomputed: ``aug_op`` runs the forward sweep and returns the primal
        result, pushing what the reverse needs on the thread's global tape;
        ``rev_op`` takes the same arguments plus the seed and pops it back."""
        self.aug_op = aug_op
        self.generate(rev_op)

    @property
    def split(self) -> bool:
        return self.aug_op is not None

    def generate(self, gop: Operation) -> None:
        """Fill the (already created, empty-bodied) function ``gop``."""
        flavor = self.flavor
        p: Prepared = prepare(self.ctx, self.fop, self.arg_acts, self.ret_acts, abandon=True,
                              checkpoint=not self.split and not differentiated_again(),
                              split_chunks=not self.split and self.width == 1 and flavor.name == "llvm")
        self.p = p
        self.cfg: CFG = p.cfg
        act = p.activity
        self.act = act
        region = p.region
        orig_entry = region.blocks[0]
        self.E = Emitter(flavor, self.ctx.module)

        entry = gop.body.blocks[0]
        self.g_entry = entry
        fwd_entry = self.aug_op.body.blocks[0] if self.split else entry
        # Map the inputs: the forward sweep reads them from its own entry block (the
        # augmented function's in split mode); the reverse function has its own.
        inputs, outputs = flavor.signature(self.fop)
        g_args = list(entry.args)
        f_args = list(fwd_entry.args)
        k = 0
        primal_args: list[SSAValue] = []
        self.rev_arg_of: dict[SSAValue, SSAValue] = {}
        shadow_lane: dict[int, int] = {}  # position of a shadow argument -> its lane
        for arg, a in zip(orig_entry.args, self.arg_acts):
            primal_args.append(f_args[k])
            self.rev_arg_of[f_args[k]] = g_args[k]
            k += 1
            if a.is_dup:
                for lane in self.each_lane():
                    if act.has_shadow(arg):
                        self.smap[arg] = f_args[k]
                        self.rev_arg_of[f_args[k]] = g_args[k]
                        shadow_lane[k] = lane
                    k += 1
        for fn in {gop, fwd_entry.parent_op()}:
            mark_shadow_args(fn, list(shadow_lane), list(shadow_lane.values()))
        seeds: list[list[SSAValue] | None] = []  # per result, its seed in each lane
        for a in self.ret_acts:
            if a.is_active:
                seeds.append(g_args[k:k + self.width])
                k += self.width
            else:
                seeds.append(None)

        # Blocks that can reach the exit, reachable from the entry.
        live = self._live_blocks()
        self.live = live
        # Edges into each block from live blocks.
        self.in_edges: dict[Block, list[Edge]] = {
            b: [e for e in self.cfg.preds[b] if e.src in live] for b in region.blocks
        }

        # ---- forward sweep: copy the primal blocks ------------------------------
        self.vmap: dict[SSAValue, SSAValue] = {}
        self.bmap: dict[Block, Block] = {}
        fwd_blocks = []
        for b in region.blocks:
            nb = Block(arg_types=[a.type for a in b.args])
            self.bmap[b] = nb
            for a, na in zip(b.args, nb.args):
                self.vmap[a] = na
            fwd_blocks.append(nb)
        (self.aug_op if self.split else gop).body.add_block(fwd_blocks)
        # Block order need not follow dominance: when an op uses a value defined in a
        # later block, the copies get their operands once every block has been copied,
        # in the order of the ops (each value gets the use list that copying them with
        # their operands and setting every copy's operands again gave); else each copy
        # is built with its operands.
        later_values = _uses_later_values(region)
        clones: dict[Operation, Operation] = {}
        for b in region.blocks:
            nb = self.bmap[b]
            for op in b.ops:
                if _is_lifetime_marker(op) or (_is_stack_intrinsic(op, "stackrestore") and self._defers_stack()):
                    # The reverse sweep reads primal stack memory (and its shadow) after
                    # the primal's lifetime.end or stackrestore (a VLA's scope ends): the
                    # objects must stay alive, which they do without markers until the
                    # function returns (issue 23 item 1), and without the stackrestore
                    # until the reverse sweep restores the stack at the stacksave's
                    # mirror (item 3, see _reverse_block).
                    continue
                # (an op with regions is copied whole, its nested ops with their operands,
                # and given its own again below, as before)
                clone = fast_ops.clone(op, self.vmap, self.bmap, with_operands=not later_values or bool(op.regions))
                fast_ops.append(nb, clone)
                clones[op] = clone
        if later_values:
            vmap = self.vmap
            for op, clone in clones.items():
                if op.operands:
                    clone.operands = [vmap.get(o, o) for o in op.operands]
        for op, clone in clones.items():
            if ABANDONED in op.attributes:
                self._return_abandoned(clone, orig_entry)
        # Shadow memory structure in the forward sweep (shadow pointers, allocations).
        for b in region.blocks:
            if b is orig_entry:
                continue
            for a in b.args:
                if act.has_shadow(a):
                    nb = self.bmap[b]
                    for _ in self.each_lane():
                        self.smap[a] = nb.insert_arg(a.type, len(nb.args))
        # Frees the reverse sweep runs instead (at their allocation's mirror), so that
        # it may read the buffers again rather than tape what it needs of them (known
        # before the shadow structure: call-level rules ask what is written after them).
        self.deferred_frees = self._find_deferred_frees()
        # (and communicators freed by the function: rules/mpi.py)
        self.deferred_comm_frees = deferred_communicator_frees(self)
        for b in self.cfg.rpo():
            for op in b.ops:
                if memory_kind(op) is not None:
                    if memory_kind(op) == "call_rule" and any(o in act.shadowed for o in op.operands) \
                            and not lane_by_lane(op):
                        self.refuse_in_vector_mode(op, f"calls to '{callee_name(op)}'", self.fname)
                    clone = clones[op]
                    self.E.before(clone.next_op)
                    for _ in self.each_lane():
                        self.shadow_structure(op, clone, forward_mode=False)
                elif self._is_split_call(op):
                    self._forward_split_call(op, clones[op])
        for f in (*self.deferred_frees.values(), *self.deferred_comm_frees.values()):
            clones[f].parent_block().erase_op(clones[f])
        # Which blocks need an edge index (a dict, not a set: its order is the order of the
        # iteration counters in the output, which must not change from run to run).
        self.multi = dict.fromkeys(b for b in region.blocks if b is not orig_entry and len(self.in_edges[b]) > 1)
        self.edge_index: dict[Block, BlockArgument] = {}
        self._edge_pops: dict[Edge, list] = {}
        self._route_points: dict[Edge, Operation] = {}
        self._last_iteration: dict[Edge, tuple[SSAValue, SSAValue]] = {}
        self.counted = self._counted_loops()
        self.commuting = self._commuting_loops()
        self._count_ops: dict[Block, tuple] = {}
        self._add_edge_indices(region)

        # ---- entry: accumulators --------------------------------------------------
        needs_cell = [v for b in region.blocks for v in self._values_of(b) if act.is_active(v) and self._needs_cell(v)]
        self.E.at_end(entry)
        for v in dict.fromkeys(needs_cell):
            for _ in self.each_lane():
                self.cells[v] = self.E.v(ez.InitOp(ez.GradientType(v.type)))
        fwd_entry.add_op(flavor.br(self.bmap[orig_entry], primal_args))
        self._entry_branch = fwd_entry.last_op
        if flavor.name == "llvm":
            # the copy of the primal's entry runs once, right after this entry; once
            # this derivative is inlined into a loop (a callee's), allocas left there
            # would be dynamic
            hoist_allocas(self.bmap[orig_entry], fwd_entry)
        # Each counted loop tapes its iteration count once per run, on every exit
        # edge, unless the reverse sweep can compute it (see _exact_count).
        for h, info in self.counted.items():
            if self._exact_count(h) is None:
                self._tape_on_exits(info["k"], info["exits"], info["slot"])

        # ---- forward exit -> reverse ----------------------------------------------
        exit_f = self.bmap[p.exit]
        ret_op = exit_f.last_op
        self.primal_outputs = [
            self.vmap.get(v, v) for v, a in zip(p.returned, self.ret_acts) if a.needs_primal
        ]
        self.rev: dict[Block, Block] = {b: Block() for b in region.blocks if b in live}
        if self.split:
            # The augmented function returns the primal result here; the reverse
            # function starts by seeding the result's adjoint.
            self.E.before(ret_op)
            flavor.ret(self.E, [self.vmap.get(v, v) for v in p.returned], self.aug_op)
            ret_op.parent_block().erase_op(ret_op)
            self.primal_outputs = []
            self.E.at_end(entry)
        else:
            self.E.before(ret_op)
        for v, lane_seeds in zip(p.returned, seeds):
            if lane_seeds is not None and act.is_active(v):
                for lane in self.each_lane():
                    self._accumulate(v, lane_seeds[lane])
        if self.split:
            entry.add_op(flavor.br(self.rev[p.exit], []))
        else:
            ret_op.parent_block().insert_op_before(flavor.br(self.rev[p.exit], []), ret_op)
            ret_op.parent_block().erase_op(ret_op)

        rev_blocks = [self.rev[b] for b in reversed(list(region.blocks)) if b in self.rev]
        gop.body.add_block(rev_blocks)
        self.popped: dict[tuple[SSAValue, Block], SSAValue] = {}
        for b in reversed(list(region.blocks)):
            if b in self.rev:
                self._reverse_block(b, orig_entry)
        self.rounded_partials.finish()
        self.make_ascending(gop)
        self.gather_stencil_adds(gop)

    def _return_abandoned(self, stop: Operation, orig_entry: Block) -> None:
        """The forward copy of an abandoned return (see autodiff.names.ABANDON): the derivative
        function returns there, without a reverse sweep, zeros for all it returns."""
        if self.split:
            types = [v.type for v in self.p.returned]
            fn = self.aug_op
        else:
            types = [v.type for v, a in zip(self.p.returned, self.ret_acts) if a.needs_primal]
            types += [arg.type for arg, a in zip(orig_entry.args, self.arg_acts) if a.is_active
                      for _ in range(self.width)]
            fn = None
        E = Emitter(self.flavor, self.ctx.module).before(stop)
        zeros = [E.v(llvm.ZeroOp.build(result_types=[t])) for t in types]
        self.flavor.ret(E, zeros, fn)
        stop.parent_block().erase_op(stop)

    # ------------------------------------------------------------------------------
    def _live_blocks(self) -> set[Block]:
        can_reach: set[Block] = set()
        work = [self.p.exit]
        while work:
            b = work.pop()
            if b in can_reach:
                continue
            can_reach.add(b)
            work.extend(e.src for e in self.cfg.preds[b])
        return {b for b in can_reach if b in self.cfg.reachable}

    def _values_of(self, b: Block):
        yield from b.args
        for op in b.ops:
            yield from op.results

    def _needs_cell(self, v: SSAValue) -> bool:
        if is_a(v, BlockArgument):
            return True
        home = v.owner.parent_block()
        for use in v.uses:
            if use.operation.parent_block() is not home or use.operation.successors:
                return True
            if self.flavor.is_return(use.operation):
                return True
        return False

    def _in_cycle(self, v: SSAValue) -> bool:
        b = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
        return b in self.cfg.in_cycle

    # ---- adjoint storage ---------------------------------------------------------
    def _accumulate(self, v: SSAValue, contrib: SSAValue | None) -> None:
        if contrib is None or not self.act.is_active(v):
            return
        E = self.E
        if v in self.cells:
            cell = self.cells[v]
            old = E.v(ez.GetOp(cell))
            E.insert(ez.SetOp(cell, E.accumulate(old, contrib)))
        else:
            old = self.local.get(v)
            self.local[v] = contrib if old is None else E.accumulate(old, contrib)

    def _take_adjoint(self, v: SSAValue) -> SSAValue | None:
        """The adjoint of ``v`` at its definition, which is then reset."""
        if not self.act.is_active(v):
            return None
        E = self.E
        if v in self.cells:
            cell = self.cells[v]
            val = E.v(ez.GetOp(cell))
            if self._in_cycle(v):
                E.insert(ez.SetOp(cell, E.zero(v.type)))
            return val
        return self.local.pop(v, None)

    # ---- primal values in the reverse sweep --------------------------------------
    def wants(self, v: SSAValue) -> bool:
        return self.act.is_active(v)

    def primal(self, v: SSAValue) -> SSAValue:
        return self.rounded_partials.read(self.E, v, self._fetch(v, self.vmap.get(v, v)))

    def varies_in_loop(self, v: SSAValue) -> bool:
        return self._in_cycle(v)

    @property
    def versions_guards(self) -> bool:
        """Whether strong-zero guards whose singularity is loop-invariant are emitted for
        loop versioning (registry.zero_probe, transforms/strong_zero_versioning): LLVM
        code, which the versioning pass runs on."""
        return self.flavor.name == "llvm"

    def fetch_shadow(self, p: SSAValue) -> SSAValue:
        """The shadow of primal pointer ``p``, read in the reverse sweep."""
        if p not in self.smap:
            return self.shadow_of(p)
        return self._fetch(p, self.smap[p])

    def fetch_computed_in(self, home: Block, w: SSAValue) -> SSAValue:
        """Value ``w`` that the forward sweep computed in (the copy of) primal block
        ``home``, made usable in the current reverse block."""
        return self._fetch(None, w, home)

    def _fetch(self, v: SSAValue | None, w: SSAValue, home: Block | None = None, *, recompute: bool = True) -> SSAValue:
        """Value ``w`` of the forward sweep (computed alongside primal ``v``, or in
        primal block ``home``), made usable in the current reverse block: read
        directly, rematerialized, recomputed (unless ``recompute`` is false: ``w``
        is in a cut chosen by _recompute), or cached on the tape."""
        if not is_a(w, BlockArgument) and self.flavor.is_constant(w.owner):
            key = (w, self.cur)
            if key not in self.popped:
                clone = fast_ops.clone(w.owner)
                self.E.insert(clone)
                self.popped[key] = clone.results[0]
            return self.popped[key]
        if self.split:
            if w in self.rev_arg_of:
                return self.rev_arg_of[w]
        elif self._available(v, home):
            return w
        key = (w, self.cur)
        if key in self.popped:
            return self.popped[key]
        if v is not None:
            iv = self._induction(v, w)
            if iv is not None:
                self.popped[key] = iv
                return iv
        if v is not None and self.flavor.name == "llvm":
            if w is self.vmap.get(v, v):
                again = self._forwarded_load(v)
                if again is not None:
                    self.popped[key] = again
                    return again
        if v is not None and recompute:
            again = self._recompute(v, w)
            if again is not None:
                self.popped[key] = again
                return again
        if v is not None and self.flavor.name == "llvm" and not self.split:
            rebased = self._rebased_pointer(v, w)
            if rebased is not None:
                self.popped[key] = rebased
                return rebased
        if v is not None and not self.split:
            hoisted = self._hoist(v, w)
            if hoisted is not None:
                self.popped[key] = hoisted
                return hoisted
        self.popped[key] = self._tape(w, v)
        return self.popped[key]

    def _tape(self, w: SSAValue, v: SSAValue | None) -> SSAValue:
        """Forward value ``w`` (the copy of primal ``v``, when given) saved by the
        forward sweep and read back in the current reverse block: in an indexed
        cache inside a nest of counted loops, on a LIFO cache otherwise."""
        indexed = self._indexed_cache(w, v)
        if indexed is not None:
            return indexed
        once = self._once_per_call(self.cur)
        explain_tape(self.fname, w, "global tape (split mode)" if self.split else
                     "slot, once per call" if once else "stack, per iteration")
        fwd = self.bmap[self.cur]
        rb = self.rev[self.cur]
        if self.split:
            push_cache = self._tape_at(w.type, fwd, fwd.last_op)
        else:
            push_cache = self._new_cache(w.type, once=once)
        fwd.insert_op_before(save_op(push_cache, w), fwd.last_op)
        pop = restore_op(push_cache)
        if rb.first_op is None:
            rb.add_op(pop)
        else:
            rb.insert_op_before(pop, rb.first_op)
        if self.split:
            pop.operands = [self._tape_at(w.type, rb, pop)]
        return pop.results[0]

    def _address_base(self, v: SSAValue) -> SSAValue | None:
        """The one value that pointer ``v`` is computed from by address arithmetic
        alone (GEPs and casts, through phis and selects), or None. A shadow pointer
        is computed from the base's shadow by the same arithmetic, so it lies at the
        same offset from it; that need not hold across anything else (Numba's
        ``NRT_MemInfo_data_fast`` finds the data of a shadow allocation at its own
        offset from the header)."""
        entry = self.p.region.blocks[0]
        bases, seen, work = set(), set(), [v]
        while work:
            p = work.pop()
            if p in seen:
                continue
            seen.add(p)
            if isinstance(p, BlockArgument):
                if p.block is entry:
                    bases.add(p)
                else:
                    work.extend(self._incoming(p))
            elif isinstance(p.owner, (llvm.GEPOp, llvm.BitcastOp)):
                work.append(p.owner.operands[0])
            elif isinstance(p.owner, llvm.SelectOp):
                work.extend(p.owner.operands[1:])
            else:
                bases.add(p)
            if len(bases) > 1:
                return None
        return next(iter(bases), None)

    def _rebased_pointer(self, v: SSAValue, w: SSAValue) -> SSAValue | None:
        """A pointer into one object that the reverse sweep can name (an argument, or
        an allocation made once) is taped as its byte offset from that object and
        rebuilt as a GEP from the object, or from the object's shadow for the shadow
        pointer. The shadow then needs no tape of its own, and alias analysis still
        sees which object the rebuilt pointer points into: a pointer read back from
        the tape might point anywhere, which keeps LLVM from hoisting loads past
        stores through it or vectorizing the loops that use it."""
        if not isinstance(w.type, llvm.LLVMPointerType):
            return None
        base = self._address_base(v)
        if base is None or not self._available(base):
            return None
        if w is self.vmap.get(v, v):
            rebuilt_base = self._fetch(base, self.vmap.get(base, base))
        elif w is self.smap.get(v) and base in self.smap:
            rebuilt_base = self.fetch_shadow(base)
        else:
            return None
        diffs = self.__dict__.setdefault("_pointer_offsets", {})
        if v not in diffs:
            # computed where the pointer is, from the primal pointer (its shadow is
            # laid out like it), and saved like any forward value (per run of a loop
            # when the pointer is fixed during it, in an indexed cache, or a stack)
            at = llvm.PtrToIntOp(self.vmap.get(v, v), i64)
            start = llvm.PtrToIntOp(self.vmap.get(base, base), i64)
            diffs[v] = llvm.SubOp(at.results[0], start.results[0])
            pv = self.vmap.get(v, v)
            if isinstance(pv, BlockArgument):
                first = pv.block.first_op
                pv.block.insert_ops_before([at, start, diffs[v]], first)
            else:
                pv.owner.parent_block().insert_ops_after([at, start, diffs[v]], pv.owner)
        offset = self._fetch(v, diffs[v].results[0], recompute=False)
        return self.E.v(llvm.GEPOp(rebuilt_base, [llvm.GEP_USE_SSA_VAL], i8, ssa_indices=[offset]))

    # ---- loop-invariant values: taped once per loop, not once per iteration ---------
    def _hoist_loop(self, v: SSAValue):
        """The outermost loop around the current block that ``v`` is defined outside
        of (and dominates), or None."""
        if self.split:
            return None
        home = v.block if is_a(v, BlockArgument) else v.owner.parent_block()
        # a fact of the primal's loops, asked for every value fetched or cut in a block:
        # kept per (block of the value, block being reversed)
        memo = self.__dict__.setdefault("_hoist_loops", {})
        key = (home, self.cur)
        if key in memo:
            return memo[key]
        best = None
        for header, body in self.cfg.natural_loops():
            if self.cur in body and home not in body and self.cfg.dominates(home, header):
                if best is None or len(body) > len(best[1]):
                    best = (header, body)
        memo[key] = best
        return best

    def _hoist(self, v: SSAValue, w: SSAValue) -> SSAValue | None:
        """A value defined outside the loop that needs it is taped once per run of
        that loop: pushed on the loop's exit edges (in a small forward block on each
        edge) and popped, when the reverse sweep comes back through that edge, into a
        slot that the loop's reverse blocks read."""
        loop = self._hoist_loop(v)
        if loop is None:
            return None
        # w is v's forward copy or v's offset from an object made once (_rebased_pointer):
        # either is the same wherever v is; a shadow is not checked for that
        offset = self.__dict__.get("_pointer_offsets", {}).get(v)
        of_v = w is self.vmap.get(v, v) or (offset is not None and w is offset.results[0])
        return self.E.v(ez.GetOp(self._run_slot(w, *loop, primal=v if of_v else None)))

    def _run_slot(self, w: SSAValue, header: Block, body: set[Block], primal: SSAValue | None = None) -> SSAValue:
        """A slot holding ``w`` (computed before loop ``header`` runs) while the
        reverse sweep runs that loop: ``w`` is pushed on the loop's exit edges and
        popped into the slot when the reverse sweep comes back through that edge.
        ``primal``: the primal value ``w`` stands for (or is a function of alone)."""
        slots = self.__dict__.setdefault("_hoisted", {})
        slot = slots.get((w, header))
        if slot is None:
            init = ez.InitOp(ez.GradientType(w.type))
            self.g_entry.insert_op_before(init, self._entry_branch)
            slot = slots[(w, header)] = init.results[0]
            exits = [e for e in self.cfg.exit_edges(body) if e.src in self.live]
            self._tape_on_exits(w, exits, slot, primal)
        return slot

    def _tape_on_exits(self, w: SSAValue, exits: list[Edge], slot: SSAValue, primal: SSAValue | None = None) -> None:
        """Tape ``w`` on each loop exit edge (in a forward block on the edge) and
        restore it into ``slot`` when the reverse sweep comes back through that edge:
        in an indexed cache when the edge lies in a nest of loops with known trip
        counts, on a LIFO cache otherwise. When ``primal`` takes the same value in
        every iteration of some loops of the nest (a packed triangle's row start, in
        a loop over points), only the slots of their first iteration are used."""
        for e in exits:
            nb = self._exit_edge_block(e)
            nest = self._edge_nest(e)
            if nest is not None:
                same = frozenset(h for h in nest.headers if primal is not None and self._same_each_iteration(primal, h))
                explain_tape(self.fname, w, f"on a loop exit, indexed by {len(nest.headers) - len(same)} of "
                             f"{len(nest.headers)} loops")
                self._note_slot_order(nest, same)
                cache = self._new_indexed_cache(nest, w.type)
                self._store_indexed(nest, cache, nb, w, same)
                item = (cache, slot, nest, same)
            elif self._once_per_call(e.dst):
                # the loop runs at most once per call: the forward sweep sets the slot
                # its reverse reads on the way out, with nothing to pop
                explain_tape(self.fname, w, "on a loop exit, once per call")
                nb.insert_op_before(ez.SetOp(slot, w), nb.last_op)
                continue
            else:
                explain_tape(self.fname, w, "on a loop exit, stack")
                cache = self._new_cache(w.type)
                nb.insert_op_before(ez.PushOp(cache, w), nb.last_op)
                item = (cache, slot, None, frozenset())
            self._edge_pops.setdefault(e, []).append(item)
            if e in self._route_points:
                self._emit_edge_pops(e, [item])

    def _exit_edge_block(self, e: Edge) -> Block:
        """A forward block on loop exit edge ``e`` (made once), where values hoisted
        out of the loop are pushed."""
        blocks = self.__dict__.setdefault("_exit_blocks", {})
        if e in blocks:
            return blocks[e]
        src = self.bmap[e.src]
        term = src.last_op
        dst = term.successors[e.slot]
        nb = Block(arg_types=[a.type for a in dst.args])
        nb.add_op(self.flavor.br(dst, list(nb.args)))
        src.parent.insert_block_after(nb, src)
        succs = list(term.successors)
        succs[e.slot] = nb
        term.successors = succs
        blocks[e] = nb
        return nb

    def _emit_edge_pops(self, e: Edge, pops) -> None:
        """Pop hoisted values into their slots on the reverse path of edge ``e``,
        last pushed first, right before the branch into the loop's reverse."""
        for cache, slot, nest, same in pops:
            anchor = self._route_points[e]
            if nest is not None:  # any order: read where the route point is
                saved = (self.E.block, self.E.anchor)
                self.E.before(anchor)
                self.E.insert(ez.SetOp(slot, self.E.v(ez.CacheLoadOp(cache, self._reverse_index(nest, same)))))
                self.E.block, self.E.anchor = saved
                continue
            pop = ez.PopOp(cache)
            setop = ez.SetOp(slot, pop.results[0])
            anchor.parent_block().insert_ops_before([pop, setop], anchor)
            self._route_points[e] = pop

    def _outside_inner_loop(self, v: SSAValue) -> bool:
        """Defined outside a loop around the current block: taped at most once per
        run of that loop (see _hoist), not once per iteration."""
        return self._hoist_loop(v) is not None

    def _is_constant_value(self, v: SSAValue) -> bool:
        return not is_a(v, BlockArgument) and self.flavor.is_constant(v.owner)

    def _available(self, v: SSAValue | None, home: Block | None = None) -> bool:
        """Computed at most once and dominating the forward exit: still in scope and
        unchanged when the reverse sweep runs."""
        if home is not None:
            b = home
        else:
            b = v.block if is_a(v, BlockArgument) else v.owner.parent_block()
        return b not in self.cfg.in_cycle and self.cfg.dominates(b, self.p.exit)

    # ---- one reverse block -------------------------------------------------------
    def _reverse_block(self, b: Block, orig_entry: Block) -> None:
        flavor = self.flavor
        rb = self.rev[b]
        self.cur = b
        self.reset_lanes("local")
        self.E.at_end(rb)
        ops = list(b.ops)
        for op in reversed(ops[:-1]):
            if _is_stack_intrinsic(op, "stacksave") and self._defers_stack():
                # the stackrestores the forward sweep left out: the dynamic allocas made
                # since this save are no longer needed once their reverse has run
                self.E.insert(llvm.CallIntrinsicOp("llvm.stackrestore.p0", [self.primal(op.results[0])], []))
            elif memory_kind(op) is not None:
                for _ in self.each_lane():
                    self.reverse_memory(op)
            elif op in self.deferred_comm_frees:
                free = self.deferred_comm_frees[op]  # the communicator's free, after its last message
                self.E.insert(llvm.CallOp(callee_name(free), *(self.primal(o) for o in free.operands),
                                          return_type=free.results[0].type))
            elif is_scope_decl(op):
                self.E.insert(twin_decl(op))
            elif self._is_split_call(op):
                self._reverse_split_call(op)
            elif (mirror := reverse_mirror(op)) is not None:
                # OpenMP synchronization, mirrored (transforms/openmp.py)
                self.E.insert(llvm.CallOp(mirror, *(self.primal(o) for o in op.operands)))
            elif self.act.op_is_active(op):
                if self.width > 1 and self.ctx.defined_function(op) is not None:
                    self._reverse_call_lanes(op, self.ctx.defined_function(op))
                else:
                    for _ in self.each_lane():
                        self._reverse_op(op)
        self._assume_guards(b)
        # Adjoints of this block's arguments (in vector mode, lane by lane per argument).
        if b is orig_entry:
            derivs = []
            for arg, a in zip(b.args, self.arg_acts):
                if a.is_active:
                    for _ in self.each_lane():
                        d = self._take_adjoint(arg)
                        derivs.append(d if d is not None else self.E.zero(arg.type))
            flavor.ret(self.E, self.primal_outputs + derivs, None)
            return
        arg_adj = []
        for arg in b.args:
            for _ in self.each_lane():
                d = self._take_adjoint(arg) if self.act.is_active(arg) else None
                arg_adj.append(d)
        edges = self.in_edges[b]
        self._exact_counts_into(edges)
        if len(edges) == 1:
            self._route_edge(edges[0], arg_adj)
            return
        if b in self.counted:
            self._count_down(b, arg_adj)
            return
        # Several predecessors: fetch the edge index, branch to one edge block each.
        idx = self._edge_taken(b)
        active_pos = [i for i, d in enumerate(arg_adj) if d is not None]
        edge_blocks = []
        for e in edges:
            eb = Block(arg_types=[arg_adj[i].type for i in active_pos])
            edge_blocks.append(eb)
        region = rb.parent
        region.insert_block_after(edge_blocks, rb)
        vals = [arg_adj[i] for i in active_pos]
        self.E.insert(
            flavor.switch(
                idx, edge_blocks[0], vals, list(range(1, len(edges))), edge_blocks[1:], [vals] * (len(edges) - 1)
            )
        )
        for e, eb in zip(edges, edge_blocks):
            self.E.at_end(eb)
            adj = [None] * len(arg_adj)
            for i, ba in zip(active_pos, eb.args):
                adj[i] = ba
            self._route_edge(e, adj)

    def _defers_stack(self) -> bool:
        """Whether the stack is restored in the reverse sweep rather than the forward
        one: in a combined LLVM function (in split mode the augmented function returns
        before the reverse one runs, and its allocas are handled as allocations)."""
        return self.flavor.name == "llvm" and not self.split

    def _assume_guards(self, b: Block) -> None:
        """The integer compares that the forward sweep branched on to reach ``b`` held
        when it ran, so they hold when its reverse runs: say so with ``llvm.assume``.
        Facts LLVM derived from them in the primal survive into the reverse sweep,
        where the values come from the tape: an FFT's butterfly partners ``a`` and
        ``a + half`` are distinct because ``half > 0`` guarded the loop, and without
        that, each shadow store is reloaded in case it overwrote the other. Only
        compares whose operands this reverse block already has are assumed (none is
        taped for it)."""
        if self.flavor.name != "llvm" or self.split:
            return
        x = b
        # Only the nearest dominators: walking the whole chain from every block is
        # quadratic in straight-line code (inlined bodies give chains of thousands of
        # blocks) and emits as many assumes; fewer facts are always sound.
        for _ in range(_GUARD_DEPTH):
            if (a := self.cfg.idom.get(x)) is None:
                break
            preds = self.cfg.preds[x]
            term = a.last_op
            if (
                len(preds) == 1 and isinstance(term, llvm.CondBrOp) and term.successors[0] is not term.successors[1]
                and not is_a(term.cond, BlockArgument) and is_a(term.cond.owner, llvm.ICmpOp)
            ):
                self._assume(term.cond.owner, holds=preds[0].slot == 0)
            x = a

    def _assume(self, cmp: llvm.ICmpOp, holds: bool) -> None:
        operands = []
        for v in cmp.operands:
            if self._is_constant_value(v):
                operands.append(None)
                continue
            w = self.vmap.get(v, v)
            have = w if self._available(v) else self.popped.get((w, self.cur))
            if have is None:
                return
            operands.append(have)
        E = self.E
        operands = [E.v(fast_ops.clone(v.owner)) if w is None else w for v, w in zip(cmp.operands, operands)]
        # the ops xDSL's constructors would build, made by Operation.create: a function
        # gets hundreds of assumes (GMM: 527), and the constructors' generic handling of
        # operands and properties is about 3x the time (the compare is a branch
        # condition, so its result is an i1)
        cond = E.v(llvm.ICmpOp.create(operands=operands, result_types=[i1], properties={"predicate": cmp.predicate}))
        if not holds:
            true = E.v(llvm.ConstantOp.create(result_types=[i1], properties={"value": _ALL_ONES_I1}))
            cond = E.v(llvm.XOrOp.create(operands=[cond, true], result_types=[i1]))
        E.insert(llvm.CallIntrinsicOp.create(operands=[cond], properties=dict(_assume_properties())))

    def _reverse_op(self, op: Operation) -> None:
        dys = [self._take_adjoint(r) for r in op.results]
        if all(d is None for d in dys):
            return
        callee = self.ctx.defined_function(op)
        if callee is not None:
            self._reverse_call(op, callee, [[d] for d in dys])
            return
        rule = self.ctx.rule_for(op)
        if rule is None:
            raise no_rule_error(op, self.fname)
        with self.E.derivative_of(op):
            contribs = rule.reverse(self, op, dys)
        # scalar rules guard their own terms under strong zeros (registry.ScalarRule)
        if self._select_guarded(op) and not (strong_zero() and isinstance(rule, ScalarRule)):
            contribs = self._strong_zero(dys[0], contribs)
        for operand, c in zip(op.operands, contribs):
            if c is not None:
                self._accumulate(operand, c)

    def _select_guarded(self, op: Operation) -> bool:
        """Whether ``op``'s float result only feeds the value operands of selects,
        directly or through other such ops: code the optimizer speculated out of a
        branch (``x < 0 ? -pow(-x, 1/3) : pow(x, 1/3)`` computes both sides). On the side
        not chosen its adjoint is exactly zero while its partials may be infinite or
        NaN (pow of a negative number), and 0 * NaN would poison the derivative."""
        memo = self.__dict__.setdefault("_guarded", {})
        if op in memo:
            return memo[op]
        memo[op] = False  # a cycle (through a phi) is not speculated code
        ok = len(op.results) == 1 and is_float_type(op.results[0].type) and bool(op.results[0].uses)
        for use in op.results[0].uses if ok else ():
            user = use.operation
            if isinstance(user, llvm.SelectOp) or user.name == "arith.select":
                ok = use.index != 0
            else:
                ok = not user.successors and not user.regions and self._select_guarded(user)
            if not ok:
                break
        memo[op] = ok
        return ok

    def _strong_zero(self, dy: SSAValue | None, contribs: list) -> list:
        """The contributions, zero wherever the adjoint ``dy`` is zero (0 * inf = 0)."""
        if dy is None or not is_float_type(dy.type):
            return contribs
        E = self.E
        dead = E.fcmp("oeq", dy, E.zero(dy.type))
        return [c if c is None or not is_float_type(c.type) else E.select(dead, E.zero(c.type), c) for c in contribs]

    # ---- calls in split mode (callees that take active memory) --------------------
    def _is_split_call(self, op: Operation) -> bool:
        """Calls left after inlining (recursive ones) that touch active memory or
        write memory themselves: their forward sweep cannot be rerun in the reverse."""
        callee = self.ctx.defined_function(op)
        if callee is None:
            return False
        if any(o in self.act.shadowed for o in op.operands):
            return True
        return self.ctx.writes_memory(callee) and any(o in self.act.varied for o in op.operands)

    def _split_activities(self, op: Operation):
        arg_acts = []
        for a in self.flavor.call_args(op):
            if self.act.has_shadow(a):
                arg_acts.append(Activity.DUP)
            elif self.act.is_active(a):
                arg_acts.append(Activity.ACTIVE)
            else:
                arg_acts.append(Activity.CONST)
        ret_acts = [Activity.ACTIVENONEED if self.act.is_active(r) else Activity.CONSTNONEED for r in op.results]
        return arg_acts, ret_acts

    def _forward_split_call(self, op: Operation, clone: Operation) -> None:
        """The forward sweep calls the callee's augmented function instead (in vector
        mode its width-N augmented function: the callee's primal runs once)."""
        if checkpoint.is_checkpointed_loop(self.ctx.defined_function(op)):
            checkpoint.forward_call(self, op, clone)
            return
        check = region_recompute.runtime_check(self, op)
        if region_recompute.recomputable(self, op) and check is None:
            # its reverse recomputes it: the primal region, forked as it is, runs only if
            # something after it reads what it writes
            if not region_recompute.primal_needed(self, op):
                clone.parent_block().erase_op(clone)
            return
        arg_acts, ret_acts = self._split_activities(op)
        aug, _ = self.ctx.driver.split(self.ctx.defined_function(op), arg_acts, ret_acts, width=self.width)
        self.E.before(clone)
        args = []
        for a, act in zip(self.flavor.call_args(op), arg_acts):
            args.append(self.vmap.get(a, a))
            if act.is_dup:
                args += [self.shadow_of(a) for _ in self.each_lane()]
        if check is not None:  # arrays that may overlap: recomputed if a run-time check finds them apart
            region_versioning.forward_call(self, op, clone, region_versioning.check_function(
                self, self.ctx.defined_function(op), check), aug, args, region_recompute.primal_needed(self, op))
            return
        results = self.E.call(aug, args, [r.type for r in op.results])
        for old, new in zip(clone.results, results):
            old.replace_all_uses_with(new)
        for r, new in zip(op.results, results):
            self.vmap[r] = new
        clone.parent_block().erase_op(clone)

    def _reverse_split_call(self, op: Operation) -> None:
        if checkpoint.is_checkpointed_loop(self.ctx.defined_function(op)):
            checkpoint.reverse_call(self, op)
            return
        arg_acts, ret_acts = self._split_activities(op)
        recompute = region_recompute.recomputable(self, op)
        check = region_recompute.runtime_check(self, op)
        if recompute:
            # an OpenMP region's combined derivative, forked: each thread recomputes its iterations
            rev = self.ctx.driver.reverse(self.ctx.defined_function(op), arg_acts, ret_acts, width=self.width)
            mark_recomputed(self.ctx.driver.symbols[rev])
            if is_parfor(self.ctx.defined_function(op)):
                mark_parfor_recomputed(self.ctx.driver.symbols[rev])
        if not recompute or check is not None:
            _, taped = self.ctx.driver.split(self.ctx.defined_function(op), arg_acts, ret_acts, width=self.width)
            rev = rev if recompute else taped
        # in vector mode: each derivative argument and result once per lane, lane by lane
        args = []
        for a, act in zip(self.flavor.call_args(op), arg_acts):
            args.append(self.primal(a))
            if act.is_dup:
                args += [self.fetch_shadow(a) for _ in self.each_lane()]
        for r, act in zip(op.results, ret_acts):
            if act.is_active:
                for _ in self.each_lane():
                    d = self._take_adjoint(r)
                    args.append(d if d is not None else self.E.zero(r.type))
        outs = [a.type for a, act in zip(self.flavor.call_args(op), arg_acts) if act.is_active
                for _ in range(self.width)]
        if check is not None:
            region_versioning.reverse_call(self, op, region_versioning.check_function(
                self, self.ctx.defined_function(op), check), rev, taped, args)
            return
        results = iter(self.E.call(rev, args, outs))
        for a, act in zip(self.flavor.call_args(op), arg_acts):
            if act.is_active:
                for _ in self.each_lane():
                    self._accumulate(a, next(results))

    def _reverse_call_lanes(self, op: Operation, callee: Operation) -> None:
        """Vector mode: the reverse of a call to a defined function is one call of the
        callee's width-N derivative, with each result's adjoint in each lane as seeds."""
        lane_dys = [self.in_each_lane(lambda: self._take_adjoint(r)) for r in op.results]
        self._reverse_call(op, callee, lane_dys)

    def _reverse_call(self, op: Operation, callee: Operation, lane_dys: list[list[SSAValue | None]]) -> None:
        """Reverse of a call to a defined function: call its (combined) derivative at
        the generator's width, which recomputes the callee's forward sweep, with the
        results' adjoints as seeds (``lane_dys``: per result, its adjoint in each lane;
        a result no adjoint reaches is constant to the callee)."""
        args = self.flavor.call_args(op)
        arg_acts = [Activity.ACTIVE if self.act.is_active(a) else Activity.CONST for a in args]
        seeded = [any(d is not None for d in dys) for dys in lane_dys]
        if not any(a.is_active for a in arg_acts) or not any(seeded):
            return
        ret_acts = [Activity.ACTIVENONEED if s else Activity.CONSTNONEED for s in seeded]
        name = self.ctx.driver.reverse(callee, arg_acts, ret_acts, width=self.width)
        seeds = [d if d is not None else self.E.zero(r.type)
                 for r, s, dys in zip(op.results, seeded, lane_dys) if s for d in dys]
        call_args = [self.primal(a) for a in args] + seeds
        out_types = [a.type for a, act in zip(args, arg_acts) if act.is_active for _ in range(self.width)]
        it = iter(self.E.call(name, call_args, out_types))
        for a, act in zip(args, arg_acts):
            if act.is_active:
                for _ in self.each_lane():
                    self._accumulate(a, next(it))
