"""Split forward mode (Enzyme's ``__enzyme_augmentfwd`` + ``__enzyme_fwdsplit``): an
augmented primal that pushes the primal values the tangent code needs, and a
tangent-only function that reads them back, first in, first out.

Enzyme's ``__enzyme_fwdsplit(f, args with tangents..., tape)`` never runs ``f``'s side
effects again and never reads primal memory (its users pass NULL primal pointers), so
every primal value a tangent needs comes from the arguments or from the tape. The pair
is made from one forward derivative (:class:`ForwardGenerator`, whose primal copies are
listed in ``primal_copies``), generated into the tangent function's body and then cut:

* the values the tangent code and the control flow use are followed back through the
  primal copies: pure arithmetic, casts, GEPs, compares, selects, constants and phis
  (block arguments) are recomputed from what they use; the non-pointer arguments are
  the caller's; everything else (loads, calls, allocations, primal pointer arguments)
  is *taped*;
* ``augmented<f>`` is the prepared primal body itself (every side effect, once) with a
  push on the thread's global tape right after each taped value is defined (block
  arguments at the start of their block), so the pushes follow the primal's execution;
* ``fwdsplit<f>`` is the forward derivative with every other primal copy removed
  (stores, frees, calls, loads) and each taped value read at the same place from the
  tape's data, given as its last argument, with a cursor running from the start: it
  replays the same control flow (its branch conditions are recomputed or taped), so it
  reads the values in the order they were pushed. The first push is a key
  (:func:`tape_key`), which the fwdsplit call checks (transforms/split_mode.py).

At width N (``enzyme_width``) the tangent function is the width-N forward derivative
cut the same way: one tape, the same primal values, N tangents per value.

A tangent operation that would still touch memory through a primal pointer (a BLAS
rule's reads of its inputs, a call of a derivative that takes pointers) is refused by
name, as are callees whose forward derivative would run their primal again (pointer
arguments, writes, global reads) and registered derivatives other than Enzyme's split
ones. A callee registered with ``__enzyme_register_splitderivative_<g> = {g, augment,
fwdsplit}`` is called through the user's functions: ``augment`` in the augmented
primal (its tape pushed), the user's ``fwdsplit`` in the tangent function with that tape
(autodiff/custom.py has the convention). The marker side and the tape object are in
:mod:`zymase.transforms.split_mode`.
"""

from __future__ import annotations

import hashlib

from zymase.analysis.memory import memory_kind
from zymase.autodiff.common import describe
from zymase.autodiff.custom import custom_derivative, custom_gradient, custom_splitderivative, split_derivative_functions
from zymase.autodiff.flavor import Emitter, intrinsic_base
from zymase.autodiff.forward import ForwardGenerator
from zymase.autodiff.tape import explain_tape
from zymase.errors import ZymaseError
from zymase.ir import Block, BlockArgument, IntegerAttr, IntegerType, Operation, SSAValue, StringAttr, i64, is_float_type, llvm
from zymase.ir import enzyme as ez
from zymase.ir import location_of

I8 = IntegerType(8)

#: Primal operations the tangent function recomputes instead of reading from the tape:
#: no memory, no calls, the same result from the same operands.
RECOMPUTED = frozenset({
    "llvm.fadd", "llvm.fsub", "llvm.fmul", "llvm.fdiv", "llvm.frem", "llvm.fneg",
    "llvm.add", "llvm.sub", "llvm.mul", "llvm.sdiv", "llvm.udiv", "llvm.srem", "llvm.urem",
    "llvm.shl", "llvm.lshr", "llvm.ashr", "llvm.and", "llvm.or", "llvm.xor",
    "llvm.icmp", "llvm.fcmp", "llvm.select", "llvm.getelementptr", "llvm.bitcast",
    "llvm.sext", "llvm.zext", "llvm.trunc", "llvm.fptrunc", "llvm.fpext", "llvm.fptosi", "llvm.fptoui",
    "llvm.sitofp", "llvm.uitofp", "llvm.ptrtoint", "llvm.inttoptr",
    "llvm.extractvalue", "llvm.insertvalue", "llvm.extractelement", "llvm.insertelement", "llvm.shufflevector",
    "llvm.mlir.constant", "llvm.mlir.zero", "llvm.mlir.undef", "llvm.mlir.poison", "llvm.mlir.addressof",
})

#: LLVM intrinsics (``intrinsic_base`` names) recomputed as well: pure and cheap.
RECOMPUTED_INTRINSICS = frozenset({
    "fmuladd", "fma", "fabs", "copysign", "minnum", "maxnum", "minimum", "maximum", "floor", "ceil", "trunc",
    "round", "roundeven", "rint", "nearbyint", "sqrt", "smax", "smin", "umax", "umin", "abs",
})

#: Operations that compute or compare addresses without touching memory: a primal
#: pointer may pass through them (what they compute from one is primal too).
_ADDRESS_ARITHMETIC = frozenset({"llvm.getelementptr", "llvm.bitcast", "llvm.select", "llvm.addrspacecast",
                                 "llvm.icmp", "llvm.ptrtoint"})


_HINT = ("differentiate it with __enzyme_fwddiff (which runs the primal), or split reverse mode "
         "(__enzyme_augmentfwd / __enzyme_reverse)")


def _recomputed(op: Operation) -> bool:
    if isinstance(op, llvm.CallIntrinsicOp):
        return intrinsic_base(op.intrin.data) in RECOMPUTED_INTRINSICS
    return op.name in RECOMPUTED


#: On ``fwdsplit<f>``: the key ``augmented<f>`` pushes first, which the fwdsplit call
#: checks before the tangent function reads the rest (transforms/split_mode.py).
TAPE_KEY = "zymase.fwdsplit_key"


def tape_key(*parts) -> int:
    """A 64-bit digest of what decides a tape's layout (the function, its activities, and
    where values are pushed and of which types): a tape written by another augmented
    function (split reverse mode's, another file's compiled differently) has another key."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "little", signed=True)


class SplitForwardGenerator(ForwardGenerator):
    """Generates the ``augmented<f>`` / ``fwdsplit<f>`` pair (module docstring)."""

    def __init__(self, ctx, fop, arg_acts, ret_acts, name, width: int = 1):
        super().__init__(ctx, fop, arg_acts, ret_acts, name, width=width)
        # copy of a call of a function with a registered split derivative ->
        # (the placeholder of its tape in the tangent code, the tape's type, augment)
        self.split_calls: dict[Operation, tuple[Operation | None, object, str]] = {}

    # -- refusals while the forward derivative is generated
    def _refuse(self, op: Operation, what: str, hint: str | None = None) -> ZymaseError:
        return ZymaseError(f"split forward mode (__enzyme_fwdsplit) of '{self.fname}': {what}",
                           construct=describe(op), function=self.fname, location=location_of(op),
                           hint=hint or _HINT)

    def _op(self, op: Operation) -> None:
        if memory_kind(op) in ("memref", "call_rule") and any(self.act.has_shadow(o) for o in op.operands):
            raise self._refuse(op, "its derivative rule reads the primal memory of the call, which "
                               "__enzyme_fwdsplit does not have")
        super()._op(op)

    def _region_op(self, op: Operation) -> None:
        raise self._refuse(op, "structured control flow is not supported in split forward mode")

    def _call(self, op: Operation, callee: Operation) -> None:
        g = callee.sym_name.data
        if custom_splitderivative(callee) is not None:
            # the user's fwdsplit computes one tangent (Enzyme has no vector convention
            # for it): refused at width > 1, never called once per lane
            self.refuse_in_vector_mode(op, f"the call of '{g}', which has a registered split derivative", self.fname)
            self._registered_split_call(op, callee)
            return
        if custom_gradient(callee) is not None or custom_derivative(callee) is not None:
            raise self._refuse(op, f"'{g}' has a registered gradient or forward derivative, which would run "
                               "its primal again", f"register its split derivative: void *__enzyme_register_"
                               f"splitderivative_{g}[3] = {{(void*){g}, (void*)augment, (void*)fwdsplit}}")
        inputs, outputs = self.flavor.signature(callee)
        if (any(isinstance(t, llvm.LLVMPointerType) for t in (*inputs, *outputs))
                or self.ctx.writes_memory(callee) or self.ctx.reads_globals(callee)):
            raise self._refuse(op, f"the call of '{g}' (recursive, or not inlined) would run its primal "
                               "again, which may read memory the caller has overwritten",
                               "make the callee inlinable (not recursive), or use __enzyme_fwddiff")
        # a function of scalars without effects: its forward derivative (which runs its
        # primal too) is called with the primal arguments the tangent function has
        super()._call(op, callee)

    def _registered_split_call(self, op: Operation, callee: Operation) -> None:
        E = self.E
        try:
            augment, tape_type, fsd = split_derivative_functions(self.ctx.module, callee)
        except ZymaseError as e:
            # named where the registered function is called
            e.location = e.location or location_of(op)
            e.function = self.fname
            raise
        new = self._copy_primal(op)
        placeholder = None
        args: list[SSAValue] = []
        for a in self.flavor.call_args(op):
            args.append(self.primal(a))
            if is_float_type(a.type):
                args.append(self.tmap[a] if self.act.is_active(a) else E.zero(a.type))
        if tape_type is not None:
            placeholder = E.insert(llvm.UndefOp(tape_type))
            args.append(placeholder.results[0])
        outs = [r.type for r in op.results if is_float_type(r.type)]
        results = self.flavor.call(E, fsd, args, outs)
        for r, t in zip(op.results, results):
            if self.act.is_active(r):
                self.tmap[r] = t
        self.split_calls[new] = (placeholder, tape_type, augment)

    # -- the pair
    def generate_pair(self, aug_op: Operation, fs_op: Operation, marker_acts) -> None:
        """Fill ``aug_op`` (primal arguments, a shadow after each dup pointer) and
        ``fs_op`` (the forward derivative's arguments, then the tape's data pointer)."""
        self.generate(fs_op)
        plan = _Plan(self, fs_op)
        blocks = list(fs_op.body.blocks)
        layout = [(blocks.index(b), [str(v.type) for v in args]) for b, args in plan.block_start.items()]
        layout += [(blocks.index(op.parent_block()), op.name, [str(r.type) for r in results])
                   for op, results in plan.after_op.items()]
        key = tape_key(self.fname, [a.name for a in marker_acts], self.ret_acts, self.width, layout)
        self._augmented(aug_op, plan, marker_acts, key)
        self._tangent_only(fs_op, plan)
        fs_op.attributes[TAPE_KEY] = IntegerAttr(key, i64)

    def _augmented(self, aug_op: Operation, plan: "_Plan", marker_acts, key: int) -> None:
        region = self.p.region
        values: dict[SSAValue, SSAValue] = {}
        blocks: dict[Block, Block] = {}
        default = aug_op.body.blocks[0]
        aug_op.body.detach_block(default)
        default.erase()
        region.clone_into(aug_op.body, value_mapper=values, block_mapper=blocks)
        ops = dict(zip(region.walk(), aug_op.body.walk()))
        entry = aug_op.body.blocks[0]
        k = 0
        for t, a in zip(self.flavor.signature(self.fop)[0], marker_acts):
            k += 1
            if a.is_dup:  # its shadows (one per lane), which the primal never reads
                for _ in range(self.width):
                    entry.insert_arg(t, k)
                    k += 1
        primal_of = {g: r for r, g in self.vmap.items()}
        E = Emitter(self.flavor, self.ctx.module)
        entry_anchor = entry.first_op
        _push(E.before(entry_anchor), E.iconst(key, i64))  # first: what the tape is for
        for block, args in plan.block_start.items():
            anchor = entry_anchor if block is plan.entry else blocks[self._primal_block(block)].first_op
            for v in args:
                w = values.get(primal_of[v], primal_of[v]) if block is not plan.entry else \
                    entry.args[self._aug_index(v.index, marker_acts)]
                _push(E.before(anchor), w)
        for copy, results in plan.after_op.items():
            aop = ops[self.primal_copies[copy]]
            E.before(aop.next_op)
            replaced: dict[SSAValue, SSAValue] = {}
            if copy in self.split_calls:
                result = self._call_augment(E, aop, self.split_calls[copy])
                if result is not None:
                    replaced[copy.results[0]] = result
            for r in results:
                _push(E, replaced.get(r) or values[primal_of[r]])

    def _call_augment(self, E: Emitter, call: Operation, info) -> SSAValue | None:
        """The call of a function with a registered split derivative becomes a call of
        the user's augment, whose tape is pushed first; returns the call's result."""
        _, tape_type, augment = info
        result = call.results[0] if call.results else None
        outs = ([tape_type] if tape_type is not None else []) + ([result.type] if result is not None else [])
        values = self.flavor.call(E, augment, list(call.operands), outs)
        if tape_type is not None:
            _push(E, values[0])
        if result is not None:
            result.replace_all_uses_with(values[-1])
        call.parent_block().erase_op(call)
        return values[-1] if result is not None else None

    def _primal_block(self, block: Block) -> Block:
        return next(b for b, nb in self.bmap.items() if nb is block)

    def _aug_index(self, index: int, marker_acts) -> int:
        """The augmented function's argument for primal argument ``index`` of the
        forward derivative (whose floats and pointers are followed by tangents)."""
        fwd, aug = 0, 0
        for a_marker, a_fwd in zip(marker_acts, self.arg_acts):
            if fwd == index:
                return aug
            fwd += 1 + self.width if (a_fwd.is_dup or a_fwd.is_active) else 1
            aug += 1 + self.width if a_marker.is_dup else 1
        raise AssertionError("argument index out of range")

    def _tangent_only(self, fs_op: Operation, plan: "_Plan") -> None:
        entry = fs_op.body.blocks[0]
        data = entry.args[-1]
        E = Emitter(self.flavor, self.ctx.module)
        first = entry.first_op
        E.before(first)
        one = E.iconst(1, i64)
        cursor = E.v(llvm.AllocaOp(one, i64, alignment=8))
        E.insert(llvm.StoreOp(E.iconst(0, i64), cursor))
        reader = _Reader(E, data, cursor)
        self._popped = reader.popped
        for block, args in plan.block_start.items():
            E.before(first if block is entry else block.first_op)
            for v in args:
                v.replace_all_uses_with(reader.pop(v.type))
        placeholders: list[Operation] = []
        for copy, results in plan.after_op.items():
            E.before(copy.next_op)
            if copy in self.split_calls:
                placeholder, tape_type, _ = self.split_calls[copy]
                if placeholder is not None:
                    # erased below: it may be the anchor the pops go before
                    placeholder.results[0].replace_all_uses_with(reader.pop(tape_type, primal=False))
                    placeholders.append(placeholder)
            for r in results:
                r.replace_all_uses_with(reader.pop(r.type))
        for placeholder in placeholders:
            placeholder.parent_block().erase_op(placeholder)
        plan.drop_unneeded_block_arguments(self.flavor)
        plan.remove_primal_copies()
        self._refuse_primal_memory(fs_op, plan)

    def _refuse_primal_memory(self, fs_op: Operation, plan: "_Plan") -> None:
        """No operation left may reach memory through a primal pointer (taped, an
        argument, or computed from one): that memory may be gone or overwritten."""
        tainted: set[SSAValue] = set(self._popped)
        tainted.update(a for a in plan.kept_args if isinstance(a.type, llvm.LLVMPointerType))
        ops = list(fs_op.walk())
        for op in ops:
            # primal pointers the kept copies make: into writable globals, from integers
            # (a kept local array is the tangent function's own, a constant global safe)
            if op in plan.keep and (isinstance(op, llvm.IntToPtrOp) or (
                    isinstance(op, llvm.AddressOfOp) and plan.constant_global(op) is None)):
                tainted.update(op.results)
        changed = True
        while changed:  # through address arithmetic and branches, in any block order
            changed = False
            for op in ops:
                if op.successors:
                    flows = [(arg, v) for succ, lst in zip(op.successors, self.flavor.successor_operands(op))
                             for arg, v in zip(succ.args, lst)]
                elif op.name in _ADDRESS_ARITHMETIC:
                    flows = [(r, o) for r in op.results for o in op.operands]
                else:
                    continue
                for out, v in flows:
                    if v in tainted and out not in tainted and isinstance(out.type, llvm.LLVMPointerType):
                        tainted.add(out)
                        changed = True
        for op in ops:
            if op.name in _ADDRESS_ARITHMETIC or op.successors:
                continue
            if any(o in tainted for o in op.operands):
                raise self._refuse(op, "a tangent would read or write memory through a primal pointer, which "
                                   "may be NULL or overwritten when __enzyme_fwdsplit runs")


def registered_split_pair(ctx, fop: Operation, aug_op: Operation, fs_op: Operation, fwd_acts,
                          ret_active: bool) -> None:
    """``__enzyme_fwdsplit`` of a function with a registered split derivative itself:
    the augmented function calls the user's augment and pushes its tape, the tangent
    function reads it and calls the user's fwdsplit (autodiff/custom.py)."""
    augment, tape_type, fsd = split_derivative_functions(ctx.module, fop)
    flavor = ctx.flavor
    params, outputs = flavor.signature(fop)
    key = tape_key(fop.sym_name.data, "registered", augment, fsd, str(tape_type))
    fs_op.attributes[TAPE_KEY] = IntegerAttr(key, i64)
    E = Emitter(flavor, ctx.module).at_end(aug_op.body.blocks[0])
    _push(E, E.iconst(key, i64))
    outs = ([tape_type] if tape_type is not None else []) + outputs
    values = flavor.call(E, augment, list(aug_op.body.blocks[0].args), outs)
    if tape_type is not None:
        _push(E, values[0])
    flavor.ret(E, values[-1:] if outputs else [], None)
    entry = fs_op.body.blocks[0]
    E = Emitter(flavor, ctx.module).at_end(entry)
    args = iter(entry.args)
    user: list[SSAValue] = []
    for t, a in zip(params, fwd_acts):
        user.append(next(args))
        if is_float_type(t):
            user.append(next(args) if (a.is_dup or a.is_active) else E.zero(t))
    if tape_type is not None:
        cursor = E.v(llvm.AllocaOp(E.iconst(1, i64), i64, alignment=8))
        E.insert(llvm.StoreOp(E.iconst(0, i64), cursor))
        user.append(_Reader(E, entry.args[-1], cursor).pop(tape_type, primal=False))
    tangent = flavor.call(E, fsd, user, [t for t in outputs if is_float_type(t)])
    flavor.ret(E, tangent if ret_active else [], None)


class _Plan:
    """Which primal copies of the forward derivative the tangent function keeps
    (recomputed), which values it reads from the tape and where."""

    def __init__(self, gen: SplitForwardGenerator, fs_op: Operation):
        self.gen = gen
        self.fs_op = fs_op
        self.entry = fs_op.body.blocks[0]
        primal = set(gen.vmap.values())
        self.primal = primal
        copies = gen.primal_copies
        preds: dict[Block, list[tuple[Operation, int]]] = {}
        for block in fs_op.body.blocks:
            term = block.last_op
            for k, succ in enumerate(term.successors):
                preds.setdefault(succ, []).append((term, k))
        seen: set[SSAValue] = set()
        work: list[SSAValue] = []
        taped: set[SSAValue] = set()
        self.keep: set[Operation] = set()
        self.kept_args: set[SSAValue] = set()

        def need(v: SSAValue) -> None:
            if v not in seen:
                seen.add(v)
                work.append(v)

        for op in fs_op.walk():
            if op in copies:
                continue
            if op.successors:
                lists = gen.flavor.successor_operands(op)
                passed = [v for lst in lists for v in lst]
                for o in op.operands:
                    if o not in passed:
                        need(o)
                for succ, lst in zip(op.successors, lists):
                    for arg, o in zip(succ.args, lst):
                        if arg not in primal:
                            need(o)
                continue
            for o in op.operands:
                need(o)
        while work:
            v = work.pop()
            if v not in primal:
                continue
            if isinstance(v, BlockArgument):
                if v.block is self.entry:
                    if isinstance(v.type, llvm.LLVMPointerType):
                        taped.add(v)  # a primal pointer may be NULL when fwdsplit runs
                    continue
                self.kept_args.add(v)
                for term, k in preds.get(v.block, []):
                    need(gen.flavor.successor_operands(term)[k][v.index])
                continue
            owner = v.owner
            if owner in copies:
                if _recomputed(owner) and owner not in gen.split_calls:
                    self.keep.add(owner)
                    for o in owner.operands:
                        need(o)
                elif isinstance(owner, llvm.AllocaOp) and self._local(owner):
                    # a local array the tangent function fills again (its own frame's)
                    self.keep.add(owner)
                    for o in owner.operands:
                        need(o)
                elif isinstance(owner, llvm.LoadOp) and self._replayable_load(owner):
                    # local or constant memory: the load is done again (a local
                    # array's stores are kept with it, below)
                    self.keep.add(owner)
                    need(owner.ptr)
                    for store in self._stores_into(owner.ptr):
                        if store not in self.keep:
                            self.keep.add(store)
                            need(store.value)
                            need(store.ptr)
                else:
                    taped.add(v)
        for v in taped:
            explain_tape(gen.fname, v, "split forward mode's tape")
        # where each taped value is pushed and popped: block arguments at the start of
        # their block, results right after their op (the tape of a registered split
        # call first)
        self.block_start: dict[Block, list[SSAValue]] = {}
        self.after_op: dict[Operation, list[SSAValue]] = {}
        for block in fs_op.body.blocks:
            args = [a for a in block.args if a in taped]
            if args:
                self.block_start[block] = args
            for op in block.ops:
                results = [r for r in op.results if r in taped]
                if results or op in gen.split_calls:
                    self.after_op[op] = results

    # -- memory the tangent function can read again: a constant global, or a local array
    #    (an alloca whose address only loads and stores use), whose stores it then keeps
    def _base(self, ptr: SSAValue) -> Operation | None:
        """The alloca or constant global ``ptr`` points into (through GEPs), or None."""
        while isinstance(ptr.owner, (llvm.GEPOp, llvm.BitcastOp)) and ptr.owner in self.gen.primal_copies:
            ptr = ptr.owner.operands[0]
        owner = ptr.owner
        if owner not in self.gen.primal_copies:
            return None
        if isinstance(owner, llvm.AllocaOp):
            return owner if self._local(owner) else None
        if isinstance(owner, llvm.AddressOfOp) and self.constant_global(owner) is not None:
            return owner
        return None

    def constant_global(self, addressof: Operation) -> Operation | None:
        """The constant global ``addressof`` takes the address of, or None."""
        glob = self.gen.ctx.driver.lookup_function(addressof.global_name.root_reference.data)
        return glob if isinstance(glob, llvm.GlobalOp) and glob.constant is not None else None

    def _replayable_load(self, load: Operation) -> bool:
        ordering = load.properties.get("ordering")  # atomic loads are taped
        if "volatile_" in load.properties or (isinstance(ordering, IntegerAttr) and ordering.value.data != 0):
            return False
        return self._base(load.ptr) is not None

    def _addresses(self, alloca: Operation) -> list[SSAValue]:
        """Every pointer computed from ``alloca`` by primal GEPs and casts."""
        found, todo = [], [alloca.results[0]]
        while todo:
            v = todo.pop()
            found.append(v)
            for use in v.uses:
                user = use.operation
                if isinstance(user, (llvm.GEPOp, llvm.BitcastOp)) and use.index == 0:
                    todo.extend(user.results)
        return found

    def _local(self, alloca: Operation) -> bool:
        """Only primal loads and stores (as the address) and lifetime markers use it."""
        cache = self.__dict__.setdefault("_local_cache", {})
        if alloca not in cache:
            ok = True
            for v in self._addresses(alloca):
                for use in v.uses:
                    user = use.operation
                    if user not in self.gen.primal_copies:
                        ok = False
                    elif isinstance(user, (llvm.GEPOp, llvm.BitcastOp)) and use.index == 0:
                        continue
                    elif isinstance(user, llvm.LoadOp):
                        continue
                    elif isinstance(user, llvm.StoreOp) and use.index == 1:
                        continue
                    elif isinstance(user, llvm.CallIntrinsicOp) and user.intrin.data.startswith("llvm.lifetime."):
                        continue
                    else:
                        ok = False
            cache[alloca] = ok
        return cache[alloca]

    def _stores_into(self, ptr: SSAValue) -> list[Operation]:
        base = self._base(ptr)
        if not isinstance(base, llvm.AllocaOp):
            return []  # constant memory: never stored to
        return [use.operation for v in self._addresses(base) for use in v.uses
                if isinstance(use.operation, llvm.StoreOp) and use.index == 1]

    def drop_unneeded_block_arguments(self, flavor) -> None:
        """Primal block arguments nothing reads any more receive undef."""
        for block in self.fs_op.body.blocks:
            term = block.last_op
            if not term.successors:
                continue
            lists = flavor.successor_operands(term)
            changed = False
            new_lists = []
            for succ, lst in zip(term.successors, lists):
                new = []
                for arg, v in zip(succ.args, lst):
                    if arg in self.primal and arg not in self.kept_args:
                        undef = llvm.UndefOp(v.type)
                        block.insert_op_before(undef, term)
                        new.append(undef.results[0])
                        changed = True
                    else:
                        new.append(v)
                new_lists.append(new)
            if changed:
                rebuilt = flavor.rebuild_terminator(term, new_lists)
                block.insert_op_before(rebuilt, term)
                block.erase_op(term)

    def remove_primal_copies(self) -> None:
        doomed = [op for op in self.fs_op.walk() if op in self.gen.primal_copies and op not in self.keep]
        gone = set(doomed)
        for op in doomed:
            for r in op.results:
                for use in list(r.uses):
                    if use.operation not in gone:
                        raise ZymaseError(
                            f"internal error in split forward mode: '{use.operation.name}' still uses a removed "
                            f"primal value of '{op.name}'", construct=op.name, function=self.gen.fname,
                            location=location_of(op), hint="report this; use __enzyme_fwddiff meanwhile")
        for op in reversed(doomed):
            op.parent_block().erase_op(op, safe_erase=False)


class _Reader:
    """Reads the tape's values in order: a cursor (bytes) from the start of its data."""

    def __init__(self, E: Emitter, data: SSAValue, cursor: SSAValue):
        self.E, self.data, self.cursor = E, data, cursor
        self.popped: list[SSAValue] = []  # the primal pointers read

    def pop(self, t, primal: bool = True) -> SSAValue:
        """The next value, of type ``t``; ``primal``: a value of the primal (not the
        tape of a registered split derivative, which the user's function reads)."""
        E = self.E
        offset = E.v(llvm.LoadOp(self.cursor, i64))
        slot = E.v(llvm.GEPOp(self.data, [llvm.GEP_USE_SSA_VAL], I8, ssa_indices=[offset]))
        value = E.v(llvm.LoadOp(slot, t, alignment=1))
        E.insert(llvm.StoreOp(E.v(llvm.AddOp(offset, self._size(t))), self.cursor))
        if primal and isinstance(t, llvm.LLVMPointerType):
            self.popped.append(value)
        return value

    def _size(self, t) -> SSAValue:
        """``sizeof(t)`` as LLVM lays it out (``gep null, 1``, folded to a constant):
        the bytes a push of ``t`` took (transforms/lower_tape.py)."""
        E = self.E
        end = E.v(llvm.GEPOp(E.v(llvm.ZeroOp.build(result_types=[llvm.LLVMPointerType()])), [1], t))
        return E.v(llvm.PtrToIntOp(end, i64))


def _push(E: Emitter, v: SSAValue) -> None:
    """Push ``v`` on the thread's global tape (lowered by transforms/lower_tape.py)."""
    init = ez.InitOp(ez.CacheType(v.type))
    init.attributes["zymase.tape"] = StringAttr("global")
    E.insert(init)
    E.insert(ez.PushOp(init.results[0], v))

