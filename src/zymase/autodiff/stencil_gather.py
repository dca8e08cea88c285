"""Reverse loops of stencils with their adjoint adds gathered, one element per iteration
(a mixin of ``reverse.ReverseGenerator``).

A stencil ``v[i] = f(u[i-1], u[i], u[i+1])`` reverses into a loop whose iteration ``i``
adds into ``du[i-1]``, ``du[i]`` and ``du[i+1]``: neighbouring iterations add into one
element, a dependence of distance one that LLVM's loop vectorizer refuses, and that its
loop distribution cannot break, not knowing that the adds commute. They do: adjoint
accumulations are sums, and this project accepts reassociating them (every one carries
``reassoc``; the order of a sum may change its rounding, as the ascending order of
``ascending.py`` may). So the adds of one family (one shadow base, stride and invariant
terms; offsets ``c_1 .. c_m`` apart by whole iterations) run before the loop in gather
form: a loop over the elements, whose iteration ``t`` computes each member's
contribution at the iteration that adds into element ``t`` (``t + e_k``, the member's
shift) and adds them all into that one element, which vectorizes (one load and one store
of the element: each add after the first takes the running sum from the one before,
since nothing else in the iteration reads or writes that element); for each member, short
loops over its iterations at the two ends whose element is outside that range; then the
original loop without those adds (the shadow zeroing, the other adds, the cells). Every
new loop counts upwards with the reverse loop's own counter, which the original loop
gets back. Splitting into one loop per offset (each vectorized) was measured first and was no
faster than the scalar loop: each copy walks the shadows again, and stencils are bound
by memory.

The reverse loop of a primal loop ``L`` is rewritten when

- ``L`` is a counted loop of one block (declaring no ``restrict`` scope) whose iterations
  commute (``ascending.py``: no active value carried from one iteration to the next, no
  call that is not pure, stores apart across iterations);
- a family's adds are at two or more offsets (at most ``MAX_OFFSETS``), at affine
  addresses in the reverse iteration number; invariant terms may be recomputed in the
  loop (an OpenMP chunk's clamped bounds: one leaf per expression, ``signature``); an
  add whose address is not affine leaves the loop as it is;
- no primal load whose reverse adds into a shadow meets, in any two iterations or in the
  same one, a shadowed primal store (whose reverse reads and zeroes its shadow), and no
  two shadowed stores meet: the gathered contributions then read every shadow as the
  original loop would have (same proofs as ``ascending.py``: affine forms, ``restrict``
  scopes, distinct roots, swapped buffers);
- what a moved add needs is reads and arithmetic only: loads, indexed cache reads, pure
  calls, cells the reverse loop never sets, and its counter.

Otherwise the loop stays as it is. ``ZYMASE_NO_GATHER=1`` turns this off (for A/B
measurements); ``ZYMASE_DEBUG_TAPE=1`` names the loops gathered.
"""

from __future__ import annotations

import os
import sys

from zymase.analysis.cfg import CFG
from zymase.analysis.memory import memory_kind
from zymase.analysis.op_classes import is_a
from zymase.analysis.trip_count import SGT, SLT, constant_int, constant_trip_count
from zymase.autodiff.ascending import _K, _ONE, _AffineForms
from zymase.autodiff.tape import is_pure
from zymase.ir import (ArrayAttr, Block, FloatAttr, IntegerAttr, IntegerType, Operation, OpResult, SSAValue,
                       StringAttr, i64, llvm, location_of)
from zymase.ir import enzyme as ez
from zymase.ir import llvm_ext
from zymase.llvm.loop_hints import LOOP_HINTS_ATTR
from zymase.llvm.noalias_scopes import SCOPE_DECL, is_scope_decl

#: integer intrinsics without side effects (a chunk's bounds are clamped with them)
_INTEGER_INTRINSICS = ("llvm.smin.", "llvm.smax.", "llvm.umin.", "llvm.umax.")

MAX_OFFSETS = 8
"""Offsets of one family at most; a wider stencil's reverse loop stays as it is."""


class StencilGather:
    """Mixin: gather the adjoint adds of stencil reverse loops."""

    def record_shadow_add(self, store: Operation, load: Operation, primal: Operation) -> None:
        """``store`` adds into a shadow what ``load`` read from it: the adjoint of
        ``primal``, a load (called by ShadowCode.reverse_memory)."""
        self.__dict__.setdefault("_stencil_adds", {})[store] = (load, primal)

    def gather_stencil_adds(self, gop: Operation) -> None:
        """Gather the adds of the reverse loops that qualify (module docstring); called
        once the reverse sweep exists and its loops run in their final order."""
        adds = self.__dict__.get("_stencil_adds")
        if not adds or self.width != 1 or os.environ.get("ZYMASE_NO_GATHER"):
            return
        # the reverse sweep's CFG, built on first need and again only after a rewrite
        # (one build per candidate loop was 5-8% of AD on hand and FFT)
        cfg: list[CFG | None] = [None]
        for h in [h for h in self._count_ops if h in self.commuting]:  # a fixed order: reproducible output
            plan = self._gather_plan(gop, h, adds, cfg)
            if plan is not None:
                _explain(self.fname, h, [len(family) for family in plan["gathers"]])
                self._gather(gop, plan)
                cfg[0] = None

    # ---- analysis -------------------------------------------------------------------

    def _gather_plan(self, gop: Operation, h: Block, adds: dict, cfg_slot: list) -> dict | None:
        """``cfg_slot``: a one-element list holding the CFG of ``gop``'s body, or None
        until it is built (kept across the loops of one function)."""
        info = self.counted[h]
        if info["body"] != {h} or h not in self.rev or any(is_scope_decl(op) for op in h.ops):
            return None  # (a scope declared in the loop is a promise about one iteration)
        rh = self.rev[h]
        if rh.args:
            return None
        if sum(1 for store in adds if store.parent_block() is rh) < 2:
            return None  # a family needs adds at two offsets, all in the reverse loop's block
        if cfg_slot[0] is None:
            cfg_slot[0] = CFG.build(gop.body)
        cfg = cfg_slot[0]
        loop = next((body for header, body in cfg.natural_loops() if header is rh), None)
        if loop is None:
            return None
        entries = [e for e in cfg.preds[rh] if e.src not in loop]
        exits = cfg.exit_edges(loop)
        if len(entries) != 1 or len(exits) != 1:
            return None
        for e in entries + exits:
            if self.flavor.successor_operands(e.src.last_op)[e.slot]:
                return None
        slot = info["slot"]
        set_cells = {op.gradient for b in loop for op in b.ops if is_a(op, ez.SetOp)}
        forms = _ReverseForms(loop, slot, set_cells)
        # adds into one base with one stride and the same invariant terms: a family,
        # whose members differ by a constant offset (one group per offset)
        families: dict = {}
        for store, (load, primal) in adds.items():
            if store.parent_block() not in loop:
                continue
            form = forms.pointer(store.ptr)
            if form is None:
                return None
            base, offset = form
            stride = offset.get(_K, 0)
            rest = frozenset((x, c) for x, c in offset.items() if x not in (_K, _ONE))
            if stride == 0 or store.parent_block() is not rh:
                continue
            family = families.setdefault((base, stride, rest), {})
            family.setdefault(offset.get(_ONE, 0), []).append((store, load, primal))
        gathers = []
        for (_, stride, _), groups in families.items():
            if len(groups) < 2:
                continue
            if len(groups) > MAX_OFFSETS:
                return None
            offsets = list(groups)
            if any((offsets[0] - o) % stride for o in offsets):
                continue
            # group ``o`` adds, in iteration i + shift, where the first group adds in i
            gathers.append([(groups[o], (offsets[0] - o) // stride) for o in offsets])
        if not gathers:
            return None
        if not self._shadow_reads_unchanged(h, info):
            return None
        for family in gathers:
            for i, (group, shift) in enumerate(family):
                stores = {store for store, _, _ in group}
                need = _closure(stores, {rh})
                if not all(_readable(op, slot, set_cells) for op in need - stores):
                    return None
                family[i] = (group, shift, [op for op in rh.ops if op in need])
        zeroing = None
        if len(gathers) == 1:
            moved = {store for group, _, _ in gathers[0] for store, _, _ in group}
            zeroing = _zeroing_left(loop, rh, slot, moved, forms)
        if zeroing is not None:
            need = _closure(set(zeroing), {rh})
            if not all(_readable(op, slot, set_cells) for op in need - set(zeroing)):
                zeroing = None
            else:
                zeroing = [op for op in rh.ops if op in need]
        return {"h": h, "rh": rh, "entry": entries[0], "exit": exits[0], "slot": slot, "gathers": gathers,
                "last": self.__dict__.get("ascended", {}).get(h), "zeroing": zeroing}

    def _shadow_reads_unchanged(self, h: Block, info: dict) -> bool:
        """No shadowed primal store of loop ``h`` meets, in any two iterations or in
        the same one, a load whose reverse adds into a shadow, or another such store."""
        act = self.act
        loads, stores = [], []
        for op in h.ops:
            kind = memory_kind(op)
            if kind == "load" and op.ptr in act.shadowed and act.is_active(op.results[0]):
                loads.append(op)
            elif kind == "store" and op.ptr in act.shadowed:
                stores.append(op)
            elif kind not in (None, "load", "store", "derive", "select", "global"):
                return False
        declared = {op.attributes[SCOPE_DECL].data for op in h.ops if is_scope_decl(op)}
        forms = _AffineForms(self, h, info)
        tc = self._trip_count(h)
        count = None if tc is None else constant_trip_count(tc)
        reach = None if count is None else count - 1
        for i, s in enumerate(stores):
            for a in loads + stores[i + 1:]:
                if not self._apart_across_iterations(s, a, forms, declared, reach, same_iteration=True):
                    return False
        return True

    # ---- the rewrite ----------------------------------------------------------------

    def _gather(self, gop: Operation, plan: dict) -> None:
        """Run the moved adds of each family before the loop: one loop over the
        iterations where every member adds (each at its own shift of the iteration
        number, all into one element), and for each member its iterations outside
        those, at the ends; then the original loop without them."""
        flavor, E = self.flavor, self.E
        rh, slot = plan["rh"], plan["slot"]
        region = gop.body
        chain = [Block()]
        E.at_end(chain[0])
        start = E.v(ez.GetOp(slot))  # 0 upwards, the last iteration's number downwards
        last = E.v(ez.GetOp(plan["last"])) if plan["last"] is not None else start
        count = E.iadd(last, E.iconst(1, i64))
        zero = E.iconst(0, i64)
        for family in plan["gathers"]:
            shifts = [shift for _, shift, _ in family]
            lo, hi = -min(shifts), max(shifts)
            first = E.iconst(lo, i64)
            end = E.isub(count, E.iconst(hi, i64))  # one past the last iteration all add in
            ranges = []
            for group, shift, ops in family:
                a = _smin(E, E.iconst(shift + lo, i64), count)
                b = _smax(E, _smin(E, E.isub(count, E.iconst(hi - shift, i64)), count), a)
                ranges.append(((zero, a), (b, count), ops))
            # the family's adds, each store with the load of the element it adds to
            adds = {store: load for group, _, _ in family for store, load, _ in group}
            for (head, tail, ops) in ranges:
                self._range_loop(chain, slot, *head, [(ops, 0)], short=True, adds=adds)
                self._range_loop(chain, slot, *tail, [(ops, 0)], short=True, adds=adds)
            bodies = [(ops, shift) for _, shift, ops in family]
            zeroing = plan["zeroing"]
            if zeroing is not None:
                # nothing but the shadow zeroing is left of the original loop: zero, in
                # iteration t, the element no later iteration reads (the one the member
                # of least shift read), and the last few after the loop
                bodies.append((zeroing, -lo))
            self._range_loop(chain, slot, first, end, bodies, adds=adds)
            if zeroing is not None:
                E.at_end(chain[-1])
                rest = _smax(E, E.isub(count, E.iconst(lo + hi, i64)), zero)
                self._range_loop(chain, slot, rest, count, [(zeroing, 0)], short=True)
            for group, _, _ in family:
                for store, load, _ in group:
                    store.parent_block().erase_op(store)
        E.at_end(chain[-1])
        if plan["zeroing"] is not None:
            # the original loop has nothing left to do: leave as it would, its counter
            # at its last value (the loop's blocks are left unreachable)
            E.insert(ez.SetOp(slot, last if plan["last"] is not None else zero))
            E.insert(flavor.br(plan["exit"].dst, []))
        else:
            E.insert(ez.SetOp(slot, start))
            E.insert(flavor.br(rh, []))
        _redirect(flavor, plan["entry"].src, plan["entry"].slot, chain[0])
        loc = rh.last_op.location
        for b in chain:
            for op in b.ops:
                op.location = loc
        region.insert_block_before(chain, rh)

    def _range_loop(self, chain: list[Block], slot: SSAValue, lo: SSAValue, end: SSAValue, bodies: list,
                    short: bool = False, adds: dict | None = None) -> None:
        """At the end of ``chain[-1]``: a loop running ``bodies`` (ops of the reverse
        loop's body, each run at the iteration number plus its shift) for the
        iteration numbers in ``[lo, end)``, upwards; appends its blocks to ``chain``,
        the last one where it leaves. A ``short`` loop (a few edge iterations) is
        marked for LLVM not to vectorize or unroll it (code it would never run).

        ``adds`` maps the adds of one family (stores) to the loads of the elements they
        add to; in one iteration of this loop they all add into one element, so the
        element is loaded once and stored once: each add after the first takes the sum
        the one before it would have stored (LLVM cannot drop those stores itself when
        it cannot tell the shadows apart: it does so only before it vectorizes, where
        the run-time alias checks it adds are not yet there)."""
        flavor, E = self.flavor, self.E
        body, after = Block(), Block()
        E.at_end(chain[-1])
        E.insert(ez.SetOp(slot, lo))
        runs = E.v(llvm_ext.ICmpOp(lo, end, IntegerAttr(SLT, i64)))
        E.insert(flavor.cond_br(runs, body, [], after, []))
        E.at_end(body)
        adds = adds or {}
        loads = set(adds.values())
        pending: Operation | None = None  # the last add's store, until the next add's load
        for ops, shift in bodies:
            vmap: dict[SSAValue, SSAValue] = {}
            for op in ops:
                if isinstance(op, ez.GetOp) and op.gradient is slot:
                    k = E.v(ez.GetOp(slot))
                    vmap[op.results[0]] = E.iadd(k, E.iconst(shift, i64)) if shift else k
                    continue
                if op in loads and pending is not None:
                    # the element's running sum, instead of reading back what the
                    # previous add stored (which is then not stored at all)
                    vmap[op.results[0]] = pending.value
                    body.erase_op(pending)
                    pending = None
                    continue
                clone = op.clone(value_mapper=vmap)
                _make_plain(clone)
                E.insert(clone)
                if op in adds:
                    pending = clone
        k = E.v(ez.GetOp(slot))
        nxt = E.iadd(k, E.iconst(1, i64))
        E.insert(ez.SetOp(slot, nxt))
        latch = E.insert(flavor.cond_br(E.icmp_eq(nxt, end), after, [], body, []))
        if short:
            latch.attributes[LOOP_HINTS_ATTR] = ArrayAttr([StringAttr("llvm.loop.vectorize.enable=0"),
                                                          StringAttr("llvm.loop.unroll.disable")])
        chain.extend([body, after])


def _smin(E, a: SSAValue, b: SSAValue) -> SSAValue:
    return E.v(llvm_ext.SelectOp(E.v(llvm_ext.ICmpOp(a, b, IntegerAttr(SLT, i64))), a, b))


def _smax(E, a: SSAValue, b: SSAValue) -> SSAValue:
    return E.v(llvm_ext.SelectOp(E.v(llvm_ext.ICmpOp(a, b, IntegerAttr(SGT, i64))), a, b))


class _ReverseForms(_AffineForms):
    """Affine forms of integers and pointers in a reverse loop (blocks ``body``), whose
    iteration number is the value of its counter ``slot``; a cell the loop never sets
    (``set_cells`` are those it does) holds one value during the loop, its leaf."""

    def __init__(self, body: set[Block], slot: SSAValue, set_cells: set):
        self.body = body
        self.h = None
        self.memo: dict = {}
        self.slot = slot
        self.set_cells = set_cells

    def _cell(self, v: SSAValue):
        if isinstance(v, OpResult) and isinstance(v.owner, ez.GetOp):
            return v.owner.gradient
        return None

    def _integer(self, v: SSAValue, unsigned: bool) -> dict | None:
        if self._cell(v) is self.slot:
            return {_K: 1}
        found = super()._integer(v, unsigned)
        if found is None and isinstance(v.type, IntegerType):
            # the same during the loop though computed in it (the reverse sweep
            # recomputes a chunk's bounds in every iteration): one leaf per expression
            sig = self.signature(v)
            if sig is not None:
                return {(sig, unsigned) if v.type.width.data < 64 else sig: 1}
        return found

    def signature(self, v: SSAValue):
        """A key equal for values computed alike from the same values fixed during the
        loop (defined outside it, constants, cells it never sets), None for a value
        that may change from one iteration to the next."""
        key = ("sig", v)
        if key not in self.memo:
            self.memo[key] = None
            self.memo[key] = self._signature(v)
        return self.memo[key]

    def _unwritten_slot(self, load: Operation) -> bool:
        """An integer load from a stack slot of the function (an OpenMP chunk's bounds)
        that no store of the loop writes: the loop stores only into shadows and stack
        slots it can name."""
        if not isinstance(load.results[0].type, IntegerType) or load.properties.get("volatile_") is not None:
            return False
        ordering = load.properties.get("ordering")
        if ordering is not None and ordering.value.data != 0:
            return False
        root = _root(load.ptr)
        if not (isinstance(root, OpResult) and isinstance(root.owner, llvm.AllocaOp) and self._invariant(root)):
            return False
        if self.signature(load.ptr) is None:
            return False
        if "stored" not in self.memo:
            self.memo["stored"] = {_root(op.ptr) for b in self.body for op in b.ops if memory_kind(op) == "store"}
            self.memo["others"] = any(memory_kind(op) not in (None, "load", "store", "derive", "select", "global")
                                      for b in self.body for op in b.ops)
        stored = self.memo["stored"]
        if self.memo["others"]:
            return False
        # every stored pointer is a shadow from a cell or argument, or an allocation: not this slot
        return root not in stored and all(
            not (isinstance(r, OpResult) and isinstance(r.owner, llvm.AllocaOp)) or r is not root for r in stored
        ) and all(r is not None for r in stored)

    def _signature(self, v: SSAValue):
        if self._invariant(v):
            return v
        if not isinstance(v, OpResult):
            return None
        op = v.owner
        cell = self._cell(v)
        if cell is not None:
            return ("cell", cell) if cell not in self.set_cells else None
        c = constant_int(v)
        if c is not None:
            return ("const", c, str(v.type))
        if isinstance(op, llvm.LoadOp) and self._unwritten_slot(op):
            return ("load", str(v.type), self.signature(op.ptr))
        if isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(_INTEGER_INTRINSICS):
            pass
        elif op.regions or memory_kind(op) is not None or isinstance(op, (llvm.CallOp, llvm.CallIntrinsicOp)):
            return None
        if op.dialect_name() != "llvm" or len(op.results) != 1:
            return None
        operands = tuple(self.signature(o) for o in op.operands)
        if any(o is None for o in operands):
            return None
        props = tuple(sorted((k, str(a)) for k, a in [*op.properties.items(), *op.attributes.items()]))
        return (op.name, props, str(v.type), operands)

    def _pointer(self, p: SSAValue):
        cell = self._cell(p)
        if cell is not None and cell not in self.set_cells:
            return cell, {}
        return super()._pointer(p)


def _root(p: SSAValue):
    """The value pointer ``p`` is an offset of (through GEPs), or the cell it was read from."""
    while isinstance(p, OpResult) and isinstance(p.owner, llvm.GEPOp):
        p = p.owner.operands[0]
    if isinstance(p, OpResult) and isinstance(p.owner, ez.GetOp):
        return ("cell", p.owner.gradient)
    return p


def _zeroing_left(loop: set[Block], rh: Block, slot: SSAValue, moved: set, forms: "_ReverseForms") -> list | None:
    """The stores of zero into shadows (at affine addresses) that are, besides the
    ``moved`` adds and the counting, all the reverse loop does; None if it does more."""
    zeros = []
    for b in loop:
        for op in b.ops:
            if op is b.last_op or op in moved or isinstance(op, (ez.GetOp, ez.CacheLoadOp)):
                continue
            if isinstance(op, ez.SetOp) and op.gradient is slot:
                continue
            if isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data == "llvm.assume":
                continue
            if isinstance(op, llvm.StoreOp):
                ordering = op.properties.get("ordering")
                if (b is not rh or not _is_zero(op.value) or op.properties.get("volatile_") is not None
                        or (ordering is not None and ordering.value.data != 0) or forms.pointer(op.ptr) is None):
                    return None
                zeros.append(op)
                continue
            if isinstance(op, llvm.LoadOp) or (op.dialect_name() == "llvm" and not op.regions and _pure(op)):
                continue
            return None
    return zeros


def _pure(op: Operation) -> bool:
    if isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(_INTEGER_INTRINSICS):
        return True
    if isinstance(op, (llvm.CallOp, llvm.CallIntrinsicOp)):
        return is_pure(op)
    return memory_kind(op) in (None, "derive", "select")


def _is_zero(v: SSAValue) -> bool:
    if not isinstance(v, OpResult) or not isinstance(v.owner, llvm.ConstantOp):
        return False
    value = v.owner.value
    return isinstance(value, (FloatAttr, IntegerAttr)) and value.value.data == 0


def _closure(keep: set, loop: set[Block]) -> set | None:
    """``keep`` and every op of ``loop`` whose result they use, transitively."""
    need = set(keep)
    work = list(keep)
    while work:
        op = work.pop()
        for v in op.operands:
            if isinstance(v, OpResult) and v.owner.parent_block() in loop and v.owner not in need:
                need.add(v.owner)
                work.append(v.owner)
    return need


def _readable(op: Operation, slot: SSAValue, set_cells: set) -> bool:
    """Whether ``op`` may run again, in a copy of the loop, and give what it gave in the
    loop: a read, arithmetic or a pure call (a cell only if the loop never sets it)."""
    if isinstance(op, ez.GetOp):
        return op.gradient is slot or op.gradient not in set_cells
    if isinstance(op, ez.CacheLoadOp):
        return True
    if isinstance(op, llvm.LoadOp):
        return op.properties.get("volatile_") is None
    if isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(_INTEGER_INTRINSICS):
        return True
    if isinstance(op, (llvm.CallOp, llvm.CallIntrinsicOp)):
        return is_pure(op)
    if memory_kind(op) not in (None, "derive", "select"):
        return False
    return not op.regions and len(op.results) > 0 and op.dialect_name() in ("llvm", "arith", "math")


def _make_plain(op: Operation) -> None:
    """A shadow access of an adjoint add made an ordinary one (an unordered atomic one
    keeps the loop vectorizer out; split, the loop no longer needs it)."""
    if "ordering" in op.properties:
        op.properties["ordering"] = IntegerAttr(0, i64)


def _redirect(flavor, src: Block, slot: int, dst: Block) -> None:
    """Send ``src``'s ``slot``-th successor edge (which carries no operands) to ``dst``."""
    old = src.last_op
    new = flavor.rebuild_terminator(old, flavor.successor_operands(old))
    new.successors = [dst if j == slot else s for j, s in enumerate(old.successors)]
    new.attributes.update(old.attributes)
    src.insert_op_before(new, old)
    src.erase_op(old)


def _explain(fname: str, h: Block, offsets: list[int]) -> None:
    """With ZYMASE_DEBUG_TAPE=1, name the loops whose reverse adds are gathered (on stderr)."""
    if os.environ.get("ZYMASE_DEBUG_TAPE", "") in ("", "0"):
        return
    where = next((loc for op in h.ops if (loc := location_of(op))), "an unknown line")
    counts = " and ".join(str(n) for n in offsets)
    print(f"zymase: tape: {fname}: the loop at {where}: adjoint adds at {counts} offsets gathered",
          file=sys.stderr)
