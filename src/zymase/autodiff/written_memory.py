"""What the function being reversed writes (a mixin of ``reverse.ReverseGenerator``).

The reverse sweep may read primal memory again instead of taping a loaded value when no
op that may run after the load writes or frees that memory. This module answers those
questions from pointer roots (entry arguments, allocations, globals): which roots the
function or a set of ops writes, whether memory is unwritten after an op, which frees
can be deferred to the reverse sweep so their buffers stay readable, and whether a call
writes memory the analysis cannot see.
"""

from __future__ import annotations

from zymase.analysis.memory import (MARKER_INTRINSICS, SIGNGAM, SIGNGAM_SETTERS, UNSEEN_WRITES, call_rule_writes,
                                    callee_name, float_typed_access, inline_asm_may_access_memory, memory_kind,
                                    pointer_roots)
from zymase.autodiff.region_recompute import CapturedObject, captured_object
from zymase.ir import Block, BlockArgument, Operation, SSAValue, llvm
from zymase.analysis.op_classes import is_a


class WrittenMemory:
    def _never_written(self, ptr: SSAValue, access: Operation | None = None) -> bool:
        """Whether no op of the function may write (or free) the memory ``ptr`` points
        into: its roots are distinct from every written root (allocations made here
        are distinct from everything else; arguments and globals may alias each
        other unless an argument is ``noalias``). ``access``: the load or store of
        ``ptr`` asked about, whose TBAA type may rule out an int global (SIGNGAM)."""
        return self._not_written(ptr, self._written_roots(), access)

    def _not_written(self, ptr: SSAValue, written, access: Operation | None = None) -> bool:
        """Whether ``ptr`` points into none of the ``written`` roots (None: unknown).
        lgamma's ``signgam`` is not among the roots a float-typed ``access`` reads: a
        function computing a Gamma term would otherwise make every argument count as
        written, and every value read from one be taped."""
        roots = self._roots(ptr)
        if roots is None or written is None:
            return False
        if SIGNGAM in written and access is not None and float_typed_access(access):
            written = written - {SIGNGAM}
        for r in roots:
            if any(self._may_share(r, x) for x in written):
                return False
            if UNSEEN_WRITES in written and not self._outside(r) and self._escapes(r):
                return False  # an opaque call may write it through the escaped address
        return True

    def _may_share(self, r, x) -> bool:
        """Whether roots ``r`` and ``x`` may be the same memory: one object, or two that
        come from outside (arguments, globals) with neither a ``noalias`` argument."""
        return r is x or (self._outside(r) and self._outside(x) and not (self._noalias(r) or self._noalias(x)))

    def _escapes(self, alloc: Operation) -> bool:
        from zymase.analysis.memory import address_escapes

        cache = self.__dict__.setdefault("_escaped", {})
        if alloc not in cache:
            cache[alloc] = address_escapes(alloc, self.flavor.successor_operands)
        return cache[alloc]

    def _outside(self, root) -> bool:
        """Memory not allocated by this function (arguments, globals)."""
        return is_a(root, (BlockArgument, str, CapturedObject))

    def _noalias(self, root) -> bool:
        if isinstance(root, CapturedObject):
            return True
        if isinstance(root, BlockArgument) and root.index >= 3 and self._recomputed_parfor():
            return True  # a prange loop's arrays, which its recomputing caller proved apart
        if not isinstance(root, BlockArgument) or root.index >= len(self.fop.function_type.inputs.data):
            return False
        attrs = self.fop.properties.get("arg_attrs")
        if attrs is None:
            return False
        return "llvm.noalias" in attrs.data[root.index].data

    def _roots(self, ptr: SSAValue):
        """The objects a pointer may point into (entry arguments, allocation ops,
        global names), or None when unknown."""
        found = pointer_roots(ptr, self.p.region.blocks[0], self._incoming)
        if found is None and self._recomputed_region():
            captured = captured_object(ptr, self.p.region.blocks[0], self.__dict__.setdefault("_captured", {}))
            return None if captured is None else {captured}
        return found

    def _recomputed_region(self) -> bool:
        """The combined derivative of an OpenMP region, which only a caller that proved
        its captured objects apart forks (autodiff/region_recompute.py)."""
        from zymase.transforms.openmp import is_outlined_region

        return not self.split and is_outlined_region(self.fop)

    def _recomputed_parfor(self) -> bool:
        """The combined derivative of a Numba prange loop, which only a caller that proved
        its arrays apart forks (autodiff/numba_parfor.py; ``transforms/numba_parfor``
        refuses it anywhere else)."""
        from zymase.transforms.numba_parfor import is_parfor

        return not self.split and is_parfor(self.fop)

    def _incoming(self, arg: BlockArgument) -> list[SSAValue]:
        """The values block argument ``arg`` receives, one per incoming edge."""
        return [self.flavor.successor_operands(e.src.last_op)[e.slot][arg.index] for e in self.cfg.preds[arg.block]]

    def _written_roots(self):
        """Roots of all memory the function writes or frees (None: unknown writes)."""
        if not hasattr(self, "_written"):
            self._written = self._writes_in(self.p.region.blocks)
        return self._written

    def _writes_in(self, blocks):
        """Roots of all memory that the ops of ``blocks`` write or free (None: unknown)."""
        return self._writes_of(op for b in blocks for op in b.ops)

    def _find_deferred_frees(self) -> dict[Operation, Operation]:
        """Allocation -> its free, for frees the reverse sweep may run instead of the
        forward one: both run exactly once per call (outside loops, on every path to
        the exit), and no other free or realloc may release that allocation. Reading
        a buffer again in the reverse sweep is then as good as having taped it; the
        cost is that the buffer lives until the reverse sweep is done with it."""
        if self.split or self.flavor.name != "llvm":
            return {}
        cfg, exit_ = self.cfg, self.p.exit

        def once(b: Block) -> bool:
            return b not in cfg.in_cycle and cfg.dominates(b, exit_)

        # Numba arrays (NRT_MemInfo_alloc, released by their last NRT_decref) are deferred
        # only in a function calling a prange loop, whose recomputation in the reverse
        # sweep reads and writes them again (autodiff/numba_parfor.py)
        arrays = self._calls_parfor()
        releases: dict = {}
        for b in self.p.region.blocks:
            for op in b.ops:
                kind = memory_kind(op)
                if kind in ("free", "realloc") or (arrays and kind == "refcount"):
                    roots = self._roots(op.operands[0])
                    if roots is None:
                        return {}
                    for r in roots:
                        releases.setdefault(r, []).append(op)
        deferred = {}
        for alloc, frees in releases.items():
            if not (isinstance(alloc, Operation) and memory_kind(alloc) in ("malloc", "calloc", "nrt_alloc")):
                continue
            numba_array = memory_kind(alloc) == "nrt_alloc"
            if len(frees) != 1 or (callee_name(frees[0]) if numba_array else memory_kind(frees[0])) != (
                    "NRT_decref" if numba_array else "free"):
                continue
            f = frees[0]
            ab, fb = alloc.parent_block(), f.parent_block()
            if once(ab) and once(fb) and cfg.dominates(ab, fb) and self._roots(f.operands[0]) == {alloc}:
                deferred[alloc] = f
        return deferred

    def _parfor_writes(self, call: Operation) -> list[SSAValue] | None:
        """The data pointers of the arrays a Numba prange loop writes (None: not a parfor
        call, or unknown)."""
        from zymase.autodiff.numba_parfor import written_pointers
        from zymase.transforms.numba_parfor import is_parfor

        return written_pointers(self, call) if is_parfor(self.ctx.defined_function(call)) else None

    def _calls_parfor(self) -> bool:
        from zymase.transforms.numba_parfor import is_parfor

        return any(is_parfor(self.ctx.defined_function(op)) for b in self.p.region.blocks for op in b.ops
                   if is_a(op, llvm.CallOp))

    def _unwritten_after(self, load: Operation) -> bool:
        """Whether no op that may run after ``load`` in the forward sweep writes or frees
        the memory it reads, so that the reverse sweep may read it again (frees moved
        to the reverse sweep do not count: see _find_deferred_frees)."""
        return self._unwritten_after_op(load, load.ptr, load)

    def unwritten_after(self, op: Operation, ptr: SSAValue) -> bool:
        """Whether no op that may run after primal ``op`` in the forward sweep (``op``
        itself included when it is in a loop) writes or frees the memory ``ptr`` points
        into: the reverse sweep may then read it again instead of a copy. Never in split
        mode, where the caller may write it between the augmented and reverse calls."""
        return not self.split and self._unwritten_after_op(op, ptr)

    def shares_object_with(self, ptr: SSAValue, others: list[SSAValue]) -> bool:
        """Whether ``ptr`` points into the same object (argument, allocation, global) as
        one of ``others`` for certain or by an unknown root: a call handed the same
        array as input and output (``cblas_daxpy(n, a, x, 1, x, 1)``) overwrites its
        own input. Distinct arguments count as apart, as everywhere in the call rules."""
        mine = self._roots(ptr)
        for other in others:
            theirs = self._roots(other)
            if mine is None or theirs is None or mine & theirs:
                return True
        return False

    def _unwritten_after_op(self, op: Operation, ptr: SSAValue, access: Operation | None = None) -> bool:
        b = op.parent_block()
        ops = list(b.ops)
        written = self._writes_of(ops[ops.index(op) + 1:])
        for x in self._reachable_after(b) & self._returning_blocks():
            if written is None:
                break
            more = self._block_writes(x)
            written = None if more is None else written | more
        return self._not_written(ptr, written, access)

    def _block_writes(self, b: Block):
        """``_writes_of`` a whole block, kept: every load asked about reads the writes of
        the blocks after it, which walked the function once per load (as
        ``_written_roots``, it takes the primal as fixed once the sweeps are built)."""
        memo = self.__dict__.setdefault("_writes_by_block", {})
        if b not in memo:
            memo[b] = self._writes_of(b.ops)
        return memo[b]

    def _returning_blocks(self) -> set[Block]:
        """Blocks from which a return is reachable. The reverse sweep runs only after the
        forward sweep reached a return: what a block leading only to an abandoned return or
        an ``unreachable`` writes (Numba's error paths: taking the GIL to raise,
        ``Py_FatalError``) cannot change what the reverse sweep reads. (A return after an
        abandon marker counts as a return here: conservative.)"""
        if "_returning" not in self.__dict__:
            work = [b for b in self.cfg.blocks if b.last_op is not None and self.flavor.is_return(b.last_op)]
            returning = set(work)
            while work:
                for e in self.cfg.preds[work.pop()]:
                    if e.src not in returning:
                        returning.add(e.src)
                        work.append(e.src)
            self._returning = returning
        return self._returning

    def _reachable_after(self, b: Block) -> set[Block]:
        """Blocks reachable from ``b`` through at least one edge (``b`` itself if on a cycle)."""
        seen: set[Block] = set()
        work = [e.dst for e in self.cfg.succs[b]]
        while work:
            x = work.pop()
            if x not in seen:
                seen.add(x)
                work.extend(e.dst for e in self.cfg.succs[x])
        return seen

    def _writes_of(self, ops):
        """Roots of all memory that ``ops`` write or free (None: unknown)."""
        written: set = set()
        deferred = set(self.deferred_frees.values())
        for op in ops:
            if op in deferred:
                continue
            kind = memory_kind(op)
            if kind is None and not is_a(op, _MAY_WRITE):
                continue  # arithmetic, compares, branches ...: none of the cases below
            targets = []
            if kind == "store":
                targets = [op.ptr]
            elif kind in ("memcpy", "memset", "free", "realloc", "posix_memalign"):
                targets = [op.operands[0]]
            elif kind == "call_rule":
                targets = call_rule_writes(op)
            elif kind == "refcount" and op.callee.root_reference.data == "NRT_decref":
                # a decref may free an array allocated here; the caller's arrays
                # stay alive (Numba increfs its arguments on entry and decrefs them
                # on exit, and the caller holds its own reference meanwhile)
                r = self._roots(op.operands[0])
                targets = [] if r is not None and all(self._outside(x) for x in r) else [op.operands[0]]
            elif is_a(op, llvm.CallOp) and kind is None and (targets := self._parfor_writes(op)) is not None:
                pass  # a Numba prange loop: the arrays it writes
            elif is_a(op, llvm.CallOp) and kind is None:
                targets = [o for o in op.operands if isinstance(o.type, llvm.LLVMPointerType)]
                if self._sets_signgam_only(op):
                    written.add(SIGNGAM)
                elif self._call_writes_unseen(op):
                    written.add(UNSEEN_WRITES)
            elif is_a(op, llvm.CallIntrinsicOp) and kind is None and not op.intrin.data.startswith(
                MARKER_INTRINSICS
            ) and any(is_a(o.type, llvm.LLVMPointerType) for o in op.operands):
                return None
            elif inline_asm_may_access_memory(op):
                return None
            for t in targets:
                r = self._roots(t)
                if r is None:
                    return None
                written |= r
        return written

    def _sets_signgam_only(self, call: Operation) -> bool:
        """libm's lgamma (not a definition of the module's own): besides its result it
        writes ``signgam`` alone (see common.Context.call_writes_unseen)."""
        return (callee_name(call) in SIGNGAM_SETTERS and self.ctx.defined_function(call) is None
                and self.ctx.rule_for(call) is not None)

    def _call_writes_unseen(self, call: Operation) -> bool:
        """Whether a call may write globals or escaped memory beyond its pointer operands.
        A defined callee that may was inlined before AD (common.prepare), and so was one
        calling such a function; a declared one is judged by its attributes."""
        callee = self.ctx.defined_function(call)
        if callee is not None:
            return self.ctx.writes_memory(callee)
        return self.ctx.call_writes_unseen(call)


#: the ops memory_kind says nothing of that may still write memory (_writes_of's cases
#: after the memory kinds); others (arithmetic, compares, branches ...) are skipped at once,
#: decided by class (analysis/op_classes.py: the isinstance checks, for every op of the
#: function, cost more than the rest)
_MAY_WRITE = (llvm.CallOp, llvm.CallIntrinsicOp, llvm.InlineAsmOp)
