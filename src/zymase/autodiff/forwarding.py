"""Recompute loads of scratch memory from the store that wrote them.

A gradient often reads scratch arrays that the primal fills in one loop and reads
in a later one::

    for (j = 0; j < d; j++) xc[j] = x[j] - mu[j];      // loop A: the only store to xc
    for (i = 0; i < d; i++) ... xc[i] ...              // loop B, same range as A
    for (r = 0; r < d; r++)
        for (i = 0; i <= r; i++) ... xc[i] ...         // a triangular loop B within it
    ... xo[2] ...                                       // a constant index

``xc`` is overwritten on the next run of the enclosing loop, so the reverse sweep
cannot re-read it, and by default every such load is taped. But the value is known:
``xc[i]`` is what loop A stored at its iteration ``i``, ``x[i] - mu[i]``, built
from memory the function never writes. Rebuilding that expression in the reverse
sweep costs a few loads and flops and no tape. (Enzyme tapes these loads.)

A load ``v`` is forwarded when all of this holds (the checks keep it exact):

* its address is ``base + s*t + c`` bytes and exactly one store in the function
  writes into ``base``'s memory (frees do not count: a load after a free is
  undefined anyway), at ``base + s*iv + c'`` with the same ``base`` value, where
  ``iv`` is the induction variable (``+1`` per iteration) of a counted loop A
  whose every iteration runs the store;
* ``t`` is the induction variable of a counted loop B within A's range (same start,
  a bound at most A's: the same, or the inner loop of a triangular nest, see
  ``_bound_within``) and ``c == c'``, or there is no ``t`` and
  ``(c - c') / s`` is an integer in A's constant range;
* the load runs after a complete run of A in the same iteration of the loops
  around A: it is reached only through A's exit, and within A's parent loop no
  path from the parent's header reaches the load without passing that exit;
* the stored value is built, inside A, from pure arithmetic, casts, GEPs, loads
  of memory the function never writes, A's induction variable and values defined
  before A.

Used as a mixin of :class:`zymase.autodiff.reverse.ReverseGenerator` (LLVM dialect,
not in split mode, whose augmented primal does not keep the primal's memory).
"""

from __future__ import annotations

from zymase.analysis.memory import call_rule_writes, memory_kind
from zymase.analysis.trip_count import EQ, NE, SLT, ULT, constant_int
from zymase.analysis.layout import size_align
from zymase.autodiff.tape import _CHEAP_INTRINSICS, _CHEAP_OPS
from zymase.ir import Block, BlockArgument, IntegerAttr, Operation, SSAValue, i64, llvm
from zymase.llvm.noalias_scopes import drop_scopes
from zymase.analysis.op_classes import is_a

_MAX_OPS = 24
"""Largest stored-value expression rebuilt per forwarded load."""


class StoreForwarding:
    def _forwarding(self, v: SSAValue):
        """(store, loop A's body, A's induction variable, the index into A's
        iterations: an int, or loop B's induction variable) when load ``v`` can be
        forwarded, else None."""
        memo = self.__dict__.setdefault("_forwarding_memo", {})
        if v not in memo:
            memo[v] = self._find_forwarding(v) if self._forwarding_enabled() else None
        return memo[v]

    def _forwarding_enabled(self) -> bool:
        return self.flavor.name == "llvm" and not self.split

    def _find_forwarding(self, v: SSAValue):
        if is_a(v, BlockArgument) or not is_a(v.owner, llvm.LoadOp):
            return None
        load = v.owner
        addr = _address(load.ptr)
        if addr is None:
            return None
        base, term, c = addr
        store = self._only_store_into(base)
        if store is None or store.value.type != v.type:
            return None
        saddr = _address(store.ptr)
        if saddr is None or saddr[0] is not base or saddr[1] is None:
            return None
        _, (scale, iv), c_store = saddr
        header = iv.block if isinstance(iv, BlockArgument) else None
        loop = self._unit_loop(header, iv)
        if loop is None or store.parent_block() not in loop["body"]:
            return None
        if not self.cfg.dominates(store.parent_block(), loop["latch"].src):
            return None
        if term is None:
            k, rem = divmod(c - c_store, scale)
            first, last = constant_int(loop["init"]), constant_int(loop["bound"])
            if rem or first is None or last is None or not first <= k < last:
                return None
            index = k
        else:
            t_scale, t = term
            if t_scale != scale or c != c_store or not isinstance(t, BlockArgument):
                return None
            other = self._unit_loop(t.block, t)
            if other is None or not _same_value(other["init"], loop["init"]):
                return None
            if not self._bound_within(other["bound"], loop["bound"]):
                return None
            index = t
        if not self._after_complete_run(loop, header, load.parent_block()):
            return None
        if not self._rebuildable(store.value, loop["body"], iv):
            return None
        return store, loop["body"], iv, index

    def _forwarded_load(self, v: SSAValue) -> SSAValue | None:
        """Load ``v`` rebuilt in the current reverse block from the expression its
        store wrote, or None when it cannot be forwarded."""
        found = self._forwarding(v)
        if found is None:
            return None
        store, body, iv, index = found
        if isinstance(index, int):
            subst = self.E.v(llvm.ConstantOp(IntegerAttr(index, iv.type), iv.type))
        else:
            subst = self._fetch(index, self.vmap.get(index, index))
        return self._rebuild_stored(store.value, body, {iv: subst})

    def _rebuild_stored(self, x: SSAValue, body: set[Block], done: dict) -> SSAValue:
        if x in done:
            return done[x]
        if self._defined_outside(x, body):
            out = self._fetch(x, self.vmap.get(x, x))
        else:
            op = self.vmap.get(x, x).owner
            clone = op.clone({}, {})
            clone.operands = [self._rebuild_stored(o, body, done) for o in x.owner.operands]
            drop_scopes(clone)  # recomputed outside the region its scopes promise for
            self.E.insert(clone)
            out = clone.results[x.index]
        done[x] = out
        return out

    # ---- the checks ----------------------------------------------------------------
    def _only_store_into(self, base: SSAValue) -> Operation | None:
        """The one store into ``base``'s memory in the function, or None (none, several,
        or writes through calls or unknown pointers)."""
        roots = self._roots(base)
        if roots is None or len(roots) != 1:
            return None
        (root,) = roots
        if self._outside(root):
            return None  # the caller's memory: written before the call, too
        found = None
        for b in self.p.region.blocks:
            for op in b.ops:
                kind = memory_kind(op)
                if kind in ("free", "refcount"):
                    continue  # reading after a free is undefined; refcounts write headers
                if kind == "store":
                    targets = [op.ptr]
                elif kind in ("memcpy", "memset", "realloc", "posix_memalign"):
                    targets = [op.operands[0]]
                elif kind == "call_rule":
                    targets = call_rule_writes(op)
                elif is_a(op, (llvm.CallOp, llvm.CallIntrinsicOp)) and kind is None:
                    if isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(
                        ("llvm.lifetime", "llvm.dbg", "llvm.assume", "llvm.experimental.noalias")
                    ):
                        continue
                    targets = [o for o in op.operands if is_a(o.type, llvm.LLVMPointerType)]
                else:
                    continue
                for t in targets:
                    r = self._roots(t)
                    if r is None:
                        return None
                    if root in r:
                        if kind != "store" or found is not None:
                            return None
                        found = op
        return found

    def _unit_loop(self, header: Block | None, iv: SSAValue) -> dict | None:
        """For a counted loop whose header argument ``iv`` starts at ``init`` and goes
        up by one each iteration until the latch's test ``iv + 1 == bound`` (or
        ``iv + 1 < bound``) fails: {"init", "bound", "test", "body", "latch"}."""
        if header is None or header not in self.counted:
            return None
        cache = self.__dict__.setdefault("_unit_loops", {})
        key = (header, iv)
        if key in cache:
            return cache[key]
        cache[key] = None
        info = self.counted[header]
        latch, entry = info["latch"], info["entry"]
        if len(info["exits"]) != 1 or info["exits"][0].src is not latch.src:
            return None
        ops = self.flavor.successor_operands
        nxt = ops(latch.src.last_op)[latch.slot][iv.index]
        init = ops(entry.src.last_op)[entry.slot][iv.index]
        if isinstance(nxt, BlockArgument) or not isinstance(nxt.owner, llvm.AddOp):
            return None
        if nxt.owner.operands[0] is not iv or constant_int(nxt.owner.operands[1]) != 1:
            return None
        term = latch.src.last_op
        if not isinstance(term, llvm.CondBrOp) or isinstance(term.cond, BlockArgument):
            return None
        test = term.cond.owner
        if not isinstance(test, llvm.ICmpOp) or test.lhs is not nxt:
            return None
        pred = test.predicate.value.data
        stays = term.successors[0] is header  # the branch back when the test holds
        form = {(EQ, False): "eq", (NE, True): "eq", (SLT, True): "slt", (ULT, True): "ult"}.get((pred, stays))
        if form is None:
            return None
        cache[key] = {"init": init, "bound": test.rhs, "test": form, "body": info["body"], "latch": latch}
        return cache[key]

    def _bound_within(self, b: SSAValue, a: SSAValue) -> bool:
        """Whether loop bound ``b`` is at most bound ``a`` wherever ``b`` is used: the same
        value, or ``x + k`` (``k`` >= 0, or no addition) for ``x`` an induction variable of
        a loop R around the use that counts up to ``a``, with ``x <= a - 1 + offset`` and
        ``offset + k <= 1``. That is the inner loop of a triangular nest, ``c <= r`` or
        ``c < r``, inside ``r < a``: in LLVM IR its bound is ``r + 1`` or a second
        induction variable of R that starts at 1."""
        if _same_value(b, a):
            return True
        x, k = b, 0
        if not isinstance(b, BlockArgument) and isinstance(b.owner, llvm.AddOp):
            step = constant_int(b.owner.operands[1])
            if step is None or step < 0:
                return False
            x, k = b.owner.operands[0], step
        found = self._counting_offset(x)
        if found is None:
            return False
        outer, offset = found
        return offset + k <= 1 and _same_value(outer["bound"], a)

    def _counting_offset(self, x: SSAValue) -> tuple[dict, int] | None:
        """``(R, offset)`` when ``x`` is an argument of the header of a counted loop R
        (``_unit_loop``) that equals R's induction variable plus ``offset`` in every
        iteration: R's induction variable itself, or an argument that starts at a
        constant and goes up by one per iteration when R's starts at a constant."""
        if not isinstance(x, BlockArgument) or x.block not in self.counted:
            return None
        header = x.block
        own = self._unit_loop(header, x)
        if own is not None:
            return own, 0
        info = self.counted[header]
        ops = self.flavor.successor_operands
        nxt = ops(info["latch"].src.last_op)[info["latch"].slot][x.index]
        start = constant_int(ops(info["entry"].src.last_op)[info["entry"].slot][x.index])
        if start is None or isinstance(nxt, BlockArgument) or not isinstance(nxt.owner, llvm.AddOp):
            return None
        if nxt.owner.operands[0] is not x or constant_int(nxt.owner.operands[1]) != 1:
            return None
        for arg in header.args:
            outer = self._unit_loop(header, arg) if arg is not x else None
            first = constant_int(outer["init"]) if outer is not None else None
            if first is not None:
                return outer, start - first
        return None

    def _after_complete_run(self, loop: dict, header: Block, where: Block) -> bool:
        """Whether ``where`` runs only after a complete run of the loop, in the same
        iteration of the loops around it: the loop's exit edge dominates ``where``,
        ``where`` is inside the innermost loop around this one (if any), and there no
        path from that loop's header reaches ``where`` without passing the exit."""
        if where in loop["body"]:
            return False
        exit_edge = self.counted[header]["exits"][0]
        target = exit_edge.dst
        # the exit edge dominates ``where``: its target does, and every other way into
        # the target comes from blocks the target dominates (a loop starting there)
        if not self.cfg.dominates(target, where) or any(
            e.src is not exit_edge.src and not self.cfg.dominates(target, e.src) for e in self.cfg.preds[target]
        ):
            return False
        parent = None
        for h, b in self.cfg.natural_loops():
            if header in b and h is not header and (parent is None or len(b) < len(parent[1])):
                parent = (h, b)
        if parent is None:
            return True
        ph, pbody = parent
        if where not in pbody:
            return False  # after the enclosing loop: kept simple, not needed so far
        seen, work = {ph}, [ph]
        while work:
            b = work.pop()
            for e in self.cfg.succs[b]:
                d = e.dst
                if d is target or d is ph or d in seen or d not in pbody:
                    continue
                if d is where:
                    return False
                seen.add(d)
                work.append(d)
        return True

    def _rebuildable(self, x: SSAValue, body: set[Block], iv: SSAValue) -> bool:
        count = 0
        seen: set = set()
        work = [x]
        while work:
            y = work.pop()
            if y in seen or y is iv or self._defined_outside(y, body):
                continue
            seen.add(y)
            if isinstance(y, BlockArgument):
                return False
            op = y.owner
            count += 1
            if count > _MAX_OPS:
                return False
            if isinstance(op, llvm.LoadOp):
                if not self._never_written(op.ptr, op):
                    return False
            elif not _pure_cheap(op):
                return False
            work.extend(op.operands)
        return True

    def _defined_outside(self, x: SSAValue, body: set[Block]) -> bool:
        home = x.block if isinstance(x, BlockArgument) else x.owner.parent_block()
        return home not in body


def _pure_cheap(op: Operation) -> bool:
    if isinstance(op, llvm.CallIntrinsicOp):
        return op.intrin.data.startswith(_CHEAP_INTRINSICS)
    return isinstance(op, _CHEAP_OPS + (llvm.ConstantOp,))


def _same_value(x: SSAValue, y: SSAValue) -> bool:
    if x is y:
        return True
    cx, cy = constant_int(x), constant_int(y)
    if cx is not None and cx == cy:
        return True
    # the same value widened twice (zext %n and zext %n in two preheaders)
    if isinstance(x, BlockArgument) or isinstance(y, BlockArgument):
        return False
    ox, oy = x.owner, y.owner
    return (
        type(ox) is type(oy) and isinstance(ox, (llvm.ZExtOp, llvm.SExtOp)) and ox.results[0].type == oy.results[0].type
        and ox.operands[0] is oy.operands[0]
    )


def _address(ptr: SSAValue):
    """``(base, (scale, t) or None, c)``: ``ptr`` is ``base + scale*t + c`` bytes,
    through a chain of GEPs with at most one non-constant index; or None."""
    term = None
    c = 0
    while not isinstance(ptr, BlockArgument) and isinstance(ptr.owner, llvm.GEPOp):
        op = ptr.owner
        ssa = iter(op.ssa_indices)
        t = op.elem_type
        for i, raw in enumerate(op.rawConstantIndices.iter_values()):
            idx = next(ssa) if raw == llvm.GEP_USE_SSA_VAL else raw
            if i > 0:
                if not isinstance(t, llvm.LLVMArrayType):
                    return None
                t = t.type
            size = size_align(t)[0]
            k = idx if isinstance(idx, int) else constant_int(idx)
            if k is not None:
                c += k * size
            elif term is None:
                term = (size, idx)
            else:
                return None
        ptr = op.operands[0]
    if term is not None and term[1].type != i64:
        return None
    return ptr, term, c
