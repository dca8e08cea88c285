"""Shadow memory code (llvm dialect), shared by the forward and reverse generators.

Follows Enzyme: a shadowed pointer has a shadow pointer into memory of the same
layout holding derivatives (tangents in forward mode, adjoints in reverse mode).

* structure, both modes, in the primal (forward) sweep: shadow pointer arithmetic,
  selects and block arguments; zeroed shadow allocations for ``alloca``/``malloc``/
  ``calloc``; pointers loaded from and stored to memory have their shadows loaded
  from and stored to shadow memory;
* forward mode: a float load's tangent is loaded from shadow memory, a float store
  stores the tangent (or zero) to shadow memory; memcpy/memset act on the shadow;
* reverse mode: a float load's reverse adds its adjoint to shadow memory; a float
  store's reverse reads the shadow into the stored value's adjoint and zeroes it; a
  memcpy's reverse moves the destination's adjoints to the source; a shadow
  allocation is freed at the allocation's mirror point in the reverse sweep, after
  every use;
* both modes: shadow accesses inherit the twins of their primal's restrict scopes
  (:func:`mirror_scopes`, end of this module).
"""

from __future__ import annotations

from zymase.analysis.layout import FLOAT_SIZE, size_align
from zymase.analysis.type_tree import FLOAT_KINDS
from zymase.analysis.memory import (
    ALIGNED_ALLOCATORS,
    CXX_ALIGNED_NEW,
    DEALLOCATED_ARG,
    TAPE_POOL,
    allocation_size_position,
    callee_name,
    holds_pointer,
    is_pointer,
    memory_kind,
    null_page_address,
)
from zymase.autodiff.lane_blocks import lane_data
from zymase.autodiff.module_symbols import find_symbol
from zymase.autodiff.parallel import chunk_interior_spread, emit_adjoint_add, interior_test, needs_atomic_add
from zymase.autodiff.type_rules import carries_derivatives
from zymase.autodiff.registry import call_memory_rule
from zymase.errors import ZymaseError
from zymase.autodiff.names import SHADOW_GLOBAL_PREFIX
from zymase.autodiff.null_shadows import check_loaded_shadow
from zymase.autodiff.memcpy_adjoint import check_whole_floats, require_memcpy_adjoint
from zymase.ir import fast_ops
from zymase.ir import (
    ArrayAttr,
    BlockArgument,
    IntegerAttr,
    IntegerType,
    Operation,
    SSAValue,
    StringAttr,
    VectorType,
    i1,
    i8,
    i64,
    is_float_type,
    llvm,
    llvm_ext,
    location_of,
)
from zymase.llvm.noalias_scopes import SCOPE_DECL, SRC_ALIAS_SCOPE, SRC_NOALIAS, scope_decl, source_scopes

PTR = llvm.LLVMPointerType()


# bytes per float type of type analysis (analysis/types.py names)
_FLOAT_BYTES = {"f32": 4, "f64": 8}

MONOTONIC = llvm_ext.ATOMIC_ORDERING_BY_NAME["monotonic"]
UNORDERED = llvm_ext.ATOMIC_ORDERING_BY_NAME["unordered"]


class ShadowCode:
    """Mixin for the generators. Needs ``E`` (an Emitter), ``act`` (ActivityInfo),
    ``vmap`` (primal value -> value in the generated function), ``smap`` (primal
    pointer -> shadow pointer), ``ctx`` and ``fname``."""

    #: the derivative of a function the program asked for (a marker), not of a callee
    #: of one: its results are the program's outputs (Driver.reverse)
    entry = False

    # ----- helpers -----------------------------------------------------------------
    def _finiteness(self):
        found = self.__dict__.get("_finite")
        if found is None:
            from zymase.analysis.finiteness import Finiteness

            found = self._finite = Finiteness(self.p, self.ctx, self.ret_acts, entry=self.entry, primal=self.fop)
        return found

    def may_be_nonfinite(self, v: SSAValue) -> bool:
        """Whether primal ``v`` may be infinite or NaN where the output is finite
        (strong zeros guard the terms it is a partial of; analysis.finiteness)."""
        return self._finiteness().needs_guard(v)

    def singular_here(self, op: Operation, rule) -> bool:
        """Whether ``op``'s value or partials may be infinite or NaN at its operands."""
        return self._finiteness().singular(op, rule)

    def _declare(self, name: str, inputs, output) -> None:
        module = self.ctx.module
        if find_symbol(module, name) is not None:
            return
        ftype = llvm.LLVMFunctionType(inputs, output)
        module.body.block.add_op(llvm.FuncOp(name, ftype, linkage=llvm.LinkageAttr("external")))

    def _i64(self, value: int) -> SSAValue:
        return self.E.v(llvm.ConstantOp(IntegerAttr(value, i64), i64))

    def _memset_zero(self, ptr: SSAValue, nbytes: SSAValue) -> None:
        E = self.E
        zero = E.v(llvm.ConstantOp(IntegerAttr(0, i8), i8))
        no = E.v(llvm.ConstantOp(IntegerAttr(0, i1), i1))
        if nbytes.type != i64:
            nbytes = E.v(llvm.ZExtOp(nbytes, i64))
        E.insert(llvm.CallIntrinsicOp("llvm.memset.p0.i64", [ptr, zero, nbytes, no], []))

    def _sizeof(self, elem, count: SSAValue) -> SSAValue:
        """``count * sizeof(elem)`` in bytes, via the null-GEP idiom (LLVM folds it)."""
        E = self.E
        null = E.v(llvm.ZeroOp.build(result_types=[PTR]))
        if count.type != i64:
            count = E.v(llvm.SExtOp(count, i64))
        end = E.v(llvm.GEPOp(null, [llvm.GEP_USE_SSA_VAL], elem, ssa_indices=[count]))
        return E.v(llvm.PtrToIntOp(end, i64))

    def shadow_of(self, v: SSAValue) -> SSAValue:
        """The shadow of a pointer in the generated function (null stays null)."""
        s = self.smap.get(v)
        if s is not None:
            return s
        owner = v.owner
        if isinstance(owner, (llvm.ZeroOp, llvm.UndefOp)) or owner.name == "llvm.mlir.poison":
            return self.E.v(llvm.ZeroOp.build(result_types=[PTR]))
        if null_page_address(owner):  # null plus a constant: its own shadow, as null is
            const = owner.input.owner
            return self.E.v(llvm.IntToPtrOp(self.E.v(llvm.ConstantOp(const.value, const.result.type))))
        raise AssertionError(f"no shadow for {v}")

    def _shadow_global(self, name: str) -> str:
        """The zero-initialized shadow of global ``@name`` (created once per driver, that
        is per marker round). A shadow an earlier round made is primal memory to this one
        (a derivative differentiated again reads and writes it): sharing it mixed this
        round's derivatives of the global into the earlier round's (second derivatives of
        a function keeping state in a global were silently wrong, session 31), so each
        round makes its own, ``@__zymase_shadow_<name>.<k>`` after the first."""
        driver = self.ctx.driver
        mine = driver.own_shadow_globals
        if name in mine:
            return mine[name]
        module = self.ctx.module
        primal = None
        taken: set[str] = set()
        for op in module.body.block.ops:
            sym = getattr(op, "sym_name", None)
            if sym is None:
                continue
            if sym.data.startswith(SHADOW_GLOBAL_PREFIX):
                taken.add(sym.data)
            if sym.data == name:
                primal = op
        if isinstance(primal, llvm.FuncOp):
            # a function's address kept in shadowed memory (Numba stores the function that
            # unwraps an exception's arguments in its exception record): code holds no
            # derivatives, so the function is its own shadow
            return name
        if primal is None or not isinstance(primal, llvm.GlobalOp):
            raise ZymaseError(f"cannot find the global '@{name}' to give it a shadow", function=self.fname)
        shadow, k = SHADOW_GLOBAL_PREFIX + name, 0
        while shadow in taken:
            k += 1
            shadow = f"{SHADOW_GLOBAL_PREFIX}{name}.{k}"
        g = llvm.GlobalOp(primal.global_type, shadow, "internal", constant=False,
                          alignment=primal.alignment.value.data if primal.alignment else None)
        g.attributes["zymase.llvm_init"] = StringAttr("zeroinitializer")
        module.body.block.add_op(g)
        driver.shadow_globals[shadow] = g  # (what global_shadow_reset zeroes)
        driver.symbols[shadow] = g
        mine[name] = shadow
        return shadow

    def _mapped(self, v: SSAValue) -> SSAValue:
        return self.vmap.get(v, v)

    def free_deallocated_shadow(self, op: Operation) -> None:
        """Forward mode: the registered deallocator of a custom allocator (Enzyme's
        ``__enzyme_allocation_like``) releases a pointer; its calloc'd shadow is freed
        with it (reverse mode frees it at the allocation's mirror point)."""
        ptr = op.operands[op.attributes[DEALLOCATED_ARG].value.data]
        if ptr in self.act.shadowed and callee_name(op) == "NRT_MemInfo_call_dtor":
            # a reverse sweep's release of a shadow MemInfo (shadow_reverse, nrt_alloc),
            # whose own shadow is a MemInfo too (shadow_structure, nrt_alloc); tagged like
            # it, so that a third level (forward or reverse over this forward mode) releases
            # the tangent's own shadow in turn
            release = self.E.insert(llvm.CallOp("NRT_MemInfo_call_dtor", self.shadow_of(ptr)))
            release.attributes[DEALLOCATED_ARG] = IntegerAttr(0, i64)
        elif ptr in self.act.shadowed:
            self._declare("free", [PTR], llvm.LLVMVoidType())
            self.E.insert(llvm.CallOp("free", self.shadow_of(ptr)))

    # ----- structure: both modes, forward sweep ---------------------------------------
    def shadow_structure(self, op: Operation, clone: Operation, *, forward_mode: bool) -> None:
        """Emit the shadow side of memory op ``op`` (its primal copy is ``clone``);
        the emitter is positioned right after ``clone``."""
        kind = memory_kind(op)
        if kind == "memref":
            return _memref_rule(self, op).structure(self, op, clone, forward_mode=forward_mode)
        if kind == "call_rule":  # the whole call's derivative (BLAS): registry.CallMemoryRule
            return call_memory_rule(callee_name(op)).structure(self, op, clone, forward_mode=forward_mode)
        act = self.act
        E = self.E
        if kind == "derive" and op.results[0] in act.shadowed:
            sh = fast_ops.clone(op)
            sh.operands = [self.shadow_of(op.operands[0]), *(self._mapped(o) for o in op.operands[1:])]
            E.insert(sh)
            # a lane block's data (autodiff/lane_blocks.py): this lane's part of it
            self.smap[op.results[0]] = lane_data(self, op.operands[0], sh.results[0])
        elif kind == "global" and op.results[0] in act.shadowed:
            name = self._shadow_global(op.global_name.root_reference.data)
            self.smap[op.results[0]] = E.v(llvm.AddressOfOp(name, PTR))
        elif kind == "select" and op.results[0] in act.shadowed:
            c = self._mapped(op.operands[0])
            self.smap[op.results[0]] = E.select(c, self.shadow_of(op.operands[1]), self.shadow_of(op.operands[2]))
        elif kind == "load" and op.ptr in act.shadowed and is_pointer(op.results[0]):
            if op.results[0] in act.shadowed:
                self.smap[op.results[0]] = E.v(llvm.LoadOp(self.shadow_of(op.ptr), PTR))
                check_loaded_shadow(self, op)  # (a user's shadow struct may hold NULL)
        elif kind == "store" and op.ptr in act.shadowed and is_pointer(op.value):
            value = self.shadow_of(op.value) if op.value in act.shadowed else E.v(llvm.ZeroOp.build(result_types=[PTR]))
            E.insert(llvm.StoreOp(value, self.shadow_of(op.ptr)))
        elif kind == "store" and op.ptr in act.shadowed and holds_pointer(op.value.type):
            # a struct or array holding pointers, stored whole: the pointers in it have no
            # shadows (one that needs a shadow is refused on its way into an aggregate,
            # refusals.reject_unsupported), so their shadow slots become null, as for a
            # scalar pointer without a shadow. Such a store is how an inner derivative's
            # tape handle {data, capacity} is reset at each call: inlined into a loop,
            # its shadow must be reset with it, or the next call grows its tangent tape
            # from the block the previous call released (a double free)
            E.insert(llvm.StoreOp(E.v(llvm.ZeroOp.build(result_types=[op.value.type])), self.shadow_of(op.ptr)))
        elif kind == "alloca" and op in act.shadow_allocations and getattr(self, "split", False):
            # Split mode: the augmented function's frame is gone when the reverse
            # function runs, so the shadow lives on the heap until the reverse frees it.
            self._declare("calloc", [i64, i64], PTR)
            size = self._sizeof(op.elem_type, clone.operands[0])
            self.smap[op.results[0]] = E.v(llvm.CallOp("calloc", size, self._i64(1), return_type=PTR))
        elif kind == "alloca" and op in act.shadow_allocations:
            sh = clone.clone()
            sh.operands = list(clone.operands)
            E.insert(sh)
            self._memset_zero(sh.results[0], self._sizeof(op.elem_type, clone.operands[0]))
            self.smap[op.results[0]] = sh.results[0]
        elif kind == "malloc" and op in act.shadow_allocations and (
                callee_name(op) in CXX_ALIGNED_NEW or callee_name(op) in ALIGNED_ALLOCATORS):
            # over-aligned operator new (size, alignment) or aligned_alloc (alignment,
            # size): a shadow as aligned, zeroed
            size, align = (self._mapped(a) for a in op.operands[:2])
            if callee_name(op) in ALIGNED_ALLOCATORS:
                size, align = align, size
            self._declare("aligned_alloc", [i64, i64], PTR)
            shadow = E.v(llvm.CallOp("aligned_alloc", align, size, return_type=PTR))
            self._memset_zero(shadow, size)
            self.smap[op.results[0]] = shadow
        elif kind in ("malloc", "calloc") and op in act.shadow_allocations:
            args = [self._mapped(a) for a in op.operands]
            if kind == "malloc":
                # a custom allocator's shadow is calloc'd too, of its size argument
                size = args[allocation_size_position(op)]
                if size.type != i64:
                    size = E.v(llvm.SExtOp(size, i64))  # C's int size
                args = [size, self._i64(1)]
            self._declare("calloc", [i64, i64], PTR)
            self.smap[op.results[0]] = E.v(llvm.CallOp("calloc", *args, return_type=PTR))
        elif kind == "nrt_alloc" and op in act.shadow_allocations:
            # a second MemInfo of the same size, its data zeroed; forward mode frees it
            # with the primal's reference count, reverse mode at the mirror point
            sh = clone.clone()
            sh.operands = list(clone.operands)
            E.insert(sh)
            self._declare("NRT_MemInfo_data_fast", [PTR], PTR)
            data = E.v(llvm.CallOp("NRT_MemInfo_data_fast", sh.results[0], return_type=PTR))
            self._memset_zero(data, clone.operands[0])
            self.smap[op.results[0]] = sh.results[0]
        elif kind == "refcount" and op.operands[0] in act.shadowed and forward_mode:
            E.insert(llvm.CallOp(callee_name(op), self.shadow_of(op.operands[0])))
        elif kind == "free" and op.operands[0] in act.shadowed and forward_mode:
            # a tape pool's block: its shadow came from the pool too (_shadow_realloc)
            release = callee_name(op) if callee_name(op) in TAPE_POOL else "free"
            E.insert(llvm.CallOp(release, self.shadow_of(op.operands[0])))
        elif kind == "posix_memalign" and op.operands[0] in act.shadowed:
            # posix_memalign(&p, align, n): the shadow slot receives a zeroed buffer
            slot = self.shadow_of(op.operands[0])
            args = [slot, *(self._mapped(o) for o in op.operands[1:])]
            self._declare("posix_memalign", [PTR, i64, i64], op.results[0].type)
            E.insert(llvm.CallOp("posix_memalign", *args, return_type=op.results[0].type))
            sp = E.v(llvm.LoadOp(slot, PTR))
            self._memset_zero(sp, self._mapped(op.operands[2]))
            self.alloc_shadows[op] = sp
        elif kind == "realloc" and op in act.shadow_allocations:
            self._shadow_realloc(op, forward_mode)
        elif kind == "memcpy" and op.operands[0] in act.shadowed and not forward_mode:
            self._copy_shadow_pointers(op)

    def _copy_shadow_pointers(self, op: Operation) -> None:
        """Reverse mode, forward sweep: a memcpy of memory holding pointers copies their
        shadows (a struct of a data pointer and sizes copied whole, as clang copies a
        struct passed by value), so that the reverse sweep finds them where the primal
        finds the pointers. Float bytes are not copied: their shadows hold adjoints,
        which the memcpy's reverse moves (:meth:`_reverse_memcpy`)."""
        E = self.E
        dst, src = op.operands[0], op.operands[1]
        shadowed = src in self.act.shadowed
        if self._copied_float_type(op) is None:
            # no floats: the shadow bytes are pointers' shadows and ignored integers
            if shadowed:
                new = op.clone({}, {})
                new.operands = [self.shadow_of(dst), self.shadow_of(src), *(self._mapped(o) for o in op.operands[2:])]
                E.insert(new)
            else:
                self._memset_zero(self.shadow_of(dst), self._mapped(op.operands[2]))
            return
        strided = self._strided_runs(op, "ptr")
        if strided is not None:
            # element by element: each pointer slot's shadow, in every element copied
            period, runs = strided
            name = require_memcpy_adjoint(self.ctx.module, "f64")
            n = self._mapped(op.operands[2])
            if n.type != i64:
                n = E.v(llvm.ZExtOp(n, i64))
            for lo, hi in runs:
                for at in range(lo, hi, 8):
                    E.insert(llvm.CallOp(f"{name}.pointers", self.shadow_of(dst), self.shadow_of(src), n,
                                         self._i64(period), self._i64(at)))
            return
        for lo, hi in self._copied_runs(op, "ptr"):
            for at in range(lo, hi, 8):
                to = E.v(llvm.GEPOp(self.shadow_of(dst), [at], i8))
                if shadowed:
                    frm = E.v(llvm.GEPOp(self.shadow_of(src), [at], i8))
                    value = E.v(llvm.LoadOp(frm, PTR))
                else:
                    value = E.v(llvm.ZeroOp.build(result_types=[PTR]))
                E.insert(llvm.StoreOp(value, to))

    def _copied_runs(self, op: Operation, kind: str) -> list[tuple[int, int]]:
        """The byte ranges of ``kind`` (``'ptr'``, or the float type) among the bytes
        copied by a memcpy of memory that holds floats; ``(0, -1)`` stands for the whole
        copy. Floats mixed with pointers (a struct of both) are handled field by field,
        which needs a copy of constant length: one of run-time length is refused."""
        tree = self._types().of(op.operands[0])
        if "ptr" not in tree.kinds():
            return [] if kind == "ptr" else [(0, -1)]
        nbytes = _constant_int(op.operands[2])
        if nbytes is None and self._element_period(tree) is not None and op.operands[1] in self.act.shadowed:
            return []  # run-time length: element by element (_strided_runs)
        if nbytes is None:
            raise ZymaseError(
                "cannot differentiate a copy of run-time length of memory holding both "
                "floating-point values and pointers",
                construct=f"call @{callee_name(op) or op.intrin.data}",
                function=self.fname,
                location=location_of(op),
                hint="copy the structs one at a time (by assignment) instead of with memcpy",
            )
        return [(lo, hi) for lo, hi, k in tree.runs(0, nbytes) if k == kind]

    def _element_period(self, tree) -> int | None:
        """The element size of an array of structs holding pointers (a multiple of 8),
        when every byte the tree describes repeats it: ``memcpy(d, s, n * sizeof(S))``."""
        period = tree.period
        if period is None or period % 8 or tree.start > 0:
            return None
        first = [tree.at(o) for o in range(period)]
        if any(tree.at(o) != first[o % period] for o in range(period, max(tree.extent(), 2 * period))):
            return None
        return period

    def _strided_runs(self, op: Operation, kind: str) -> tuple[int, list[tuple[int, int]]] | None:
        """For a copy of run-time length of an array of structs holding pointers and
        floats: the element size and the byte ranges of ``kind`` within one element
        (None when the copy is not one: see :meth:`_copied_runs`)."""
        tree = self._types().of(op.operands[0])
        if "ptr" not in tree.kinds() or _constant_int(op.operands[2]) is not None \
                or op.operands[1] not in self.act.shadowed:
            return None
        period = self._element_period(tree)
        if period is None:
            return None
        return period, [(lo, hi) for lo, hi, k in tree.runs(0, period) if k == kind]

    def _shadow_realloc(self, op: Operation, forward_mode: bool) -> None:
        """Forward mode: the shadow is realloc'd alongside, bytes past the old shadow
        zeroed. Reverse mode: the old shadow stays alive (earlier reverse steps use
        it); the new one starts zeroed and hands its adjoints back at the mirror point."""
        E = self.E
        old = op.operands[0]
        self._declare("malloc_usable_size", [PTR], i64)
        # the shadow gets at least the bytes the primal block can hold, not just the bytes
        # asked for: code may use all of them (malloc_usable_size says it may), and a
        # derivative's own realloc does (the tail zeroing below), so that a derivative
        # of it mirrors those accesses onto this shadow. A shadow of only the asked-for
        # bytes is overrun whenever the primal block is larger (a tape pool's recycled
        # block under a third derivative), which corrupted glibc's heap
        asked = self._mapped(op.operands[1])
        if asked.type != i64:
            asked = E.v(llvm.ZExtOp(asked, i64))
        usable = E.v(llvm.CallOp("malloc_usable_size", self._mapped(op.results[0]), return_type=i64))
        n = E.select(E.v(llvm.ICmpOp(usable, asked, IntegerAttr(8, i64))), usable, asked)  # umax
        if not forward_mode:
            self._declare("calloc", [i64, i64], PTR)
            s_new = E.v(llvm.CallOp("calloc", n, self._i64(1), return_type=PTR))
            self.smap[op.results[0]] = s_new
            if "ptr" in self._types().of(op.results[0]).kinds() and not isinstance(old.owner, (llvm.ZeroOp,
                                                                                               llvm.UndefOp)):
                self._carry_pointer_shadows(op, s_new, asked)
            return
        # a tape pool's block gets its shadow from the pool (analysis/memory.TAPE_POOL)
        grow = callee_name(op) if callee_name(op) in TAPE_POOL else "realloc"
        self._declare(grow, [PTR, i64], PTR)
        s_old = self.shadow_of(old)
        used = E.v(llvm.CallOp("malloc_usable_size", s_old, return_type=i64))
        s_new = E.v(llvm.CallOp(grow, s_old, n, return_type=PTR))
        size = E.v(llvm.CallOp("malloc_usable_size", s_new, return_type=i64))
        grew = E.v(llvm.ICmpOp(size, used, IntegerAttr(8, i64)))  # ugt
        tail = E.select(grew, E.v(llvm.SubOp(size, used)), self._i64(0))
        start = E.v(llvm.GEPOp(s_new, [llvm.GEP_USE_SSA_VAL], i8, ssa_indices=[used]))
        self._memset_zero(start, tail)
        self.smap[op.results[0]] = s_new

    def _carry_pointer_shadows(self, op: Operation, s_new: SSAValue, asked: SSAValue) -> None:
        """Reverse mode, a realloc of memory holding pointers: their shadows move into the
        new (zeroed) shadow with them, as the primal pointers move (a realloc'd array of
        pointers, a tape of pointers under a second derivative: null shadow pointers and
        a segfault before). Only for memory without floats, whose shadow bytes must not be
        copied (their adjoints flow back at the mirror point, :meth:`_reverse_realloc`)."""
        E = self.E
        if self._float_type_of(op, op.results[0], None) is not None:
            raise ZymaseError(
                "cannot differentiate a realloc of memory holding both floating-point values and "
                "pointers in reverse mode",
                construct=f"call @{callee_name(op)}",
                function=self.fname,
                location=location_of(op),
                hint="keep the pointers and the floating-point values in separate arrays",
            )
        s_old = self.shadow_of(op.operands[0])
        used = E.v(llvm.CallOp("malloc_usable_size", s_old, return_type=i64))
        keep = E.select(E.v(llvm.ICmpOp(used, asked, IntegerAttr(6, i64))), used, asked)  # umin
        no = E.v(llvm.ConstantOp(IntegerAttr(0, i1), i1))
        E.insert(llvm.CallIntrinsicOp("llvm.memcpy.p0.p0.i64", [s_new, s_old, keep, no], []))

    # ----- forward mode: tangents through memory -----------------------------------
    def forward_memory(self, op: Operation) -> None:
        kind = memory_kind(op)
        if kind == "memref":
            return _memref_rule(self, op).forward_memory(self, op)
        act = self.act
        E = self.E
        if kind == "load" and op.ptr in act.shadowed and act.is_active(op.results[0]):
            r = op.results[0]
            load = E.insert(llvm.LoadOp(self.shadow_of(op.ptr), r.type))
            mirror_scopes(op, load)
            self.tmap[r] = load.results[0]
        elif kind == "store" and op.ptr in act.shadowed and carries_derivatives(op.value.type):
            v = op.value
            t = self.tmap.get(v) if act.is_active(v) else None
            mirror_scopes(op, E.insert(llvm.StoreOp(t if t is not None else E.zero(v.type), self.shadow_of(op.ptr))))
        elif kind == "store" and op.ptr not in act.shadowed and self._active_float_bits_stored(op):
            pass  # (raises)
        elif kind == "load" and op.ptr in act.shadowed and self._float_piece_load(op):
            pass  # (raises)
        elif kind == "store" and op.ptr in act.shadowed and self._integer_over_floats(op):
            # the float there is replaced by bits that carry no derivative: tangent 0
            self._zero_shadow_of_store(op, self.shadow_of(op.ptr))
        elif kind == "memcpy" and op.operands[0] in act.shadowed:
            dst, src, n = op.operands[0], op.operands[1], self._mapped(op.operands[2])
            self._check_whole_floats_copied(op, n)
            if src in act.shadowed:
                new = op.clone({}, {})
                new.operands = [self.shadow_of(dst), self.shadow_of(src), *(self._mapped(o) for o in op.operands[2:])]
                E.insert(new)
            else:
                self._memset_zero(self.shadow_of(dst), n)
        elif kind == "memset" and op.operands[0] in act.shadowed:
            self._memset_zero(self.shadow_of(op.operands[0]), self._mapped(op.operands[2]))

    # ----- reverse mode --------------------------------------------------------------
    def reverse_memory(self, op: Operation) -> None:
        """The reverse of a memory op, emitted at its mirror point."""
        kind = memory_kind(op)
        if kind == "memref":
            return _memref_rule(self, op).reverse_memory(self, op)
        if kind == "call_rule":
            return call_memory_rule(callee_name(op)).reverse_memory(self, op)
        act = self.act
        E = self.E
        if kind == "load" and op.ptr in act.shadowed and act.is_active(op.results[0]):
            r = op.results[0]
            dy = self._take_adjoint(r)
            if dy is None:
                return
            sp = self.fetch_shadow(op.ptr)
            if needs_atomic_add(self, op):
                # other threads of an OpenMP region may add into the same element (at
                # least at the edges of this thread's chunk)
                test = interior_test(self, op)
                added = emit_adjoint_add(self, sp, dy, test)
                if test is None:
                    mirror_scopes(op, added)  # (a call to the edge helper carries no scopes)
                return
            if chunk_interior_spread(self, op):
                # a stencil's adds in its chunk's interior: no other thread's, but each
                # element is added to by neighbouring iterations, which no vectorizer can
                # run at once; unordered (plain moves) keeps the SLP vectorizer from packing
                # two elements' adds into a 16-byte load of the 8-byte stores just made (a
                # store-forwarding stall per iteration: transforms/omp_chunks.py)
                align = op.properties.get("alignment")
                align = align.value.data if align is not None else size_align(r.type)[1]
                load = E.insert(llvm_ext.LoadOp(sp, r.type, alignment=align, ordering=UNORDERED))
                store = E.insert(llvm_ext.StoreOp(E.accumulate(load.results[0], dy), sp, alignment=align,
                                                  ordering=UNORDERED))
            else:
                load = E.insert(fast_ops.load(sp, r.type))
                store = E.insert(fast_ops.store(E.accumulate(load.results[0], dy), sp))
            mirror_scopes(op, load)
            mirror_scopes(op, store)
            if hasattr(self, "record_shadow_add"):  # the reverse generator's (stencil_gather.py)
                self.record_shadow_add(store, load, op)
        elif kind == "store" and op.ptr in act.shadowed and carries_derivatives(op.value.type):
            sp = self.fetch_shadow(op.ptr)
            load = E.insert(fast_ops.load(sp, op.value.type))
            d = load.results[0]
            mirror_scopes(op, load)
            mirror_scopes(op, E.insert(fast_ops.store(E.zero(op.value.type), sp)))
            if act.is_active(op.value):
                self._accumulate(op.value, d)
        elif kind == "store" and op.ptr not in act.shadowed and self._active_float_bits_stored(op):
            pass  # (raises)
        elif kind == "load" and op.ptr in act.shadowed and self._float_piece_load(op):
            pass  # (raises)
        elif kind == "store" and op.ptr in act.shadowed and self._integer_over_floats(op):
            # the float overwritten here gets no adjoint from what is read later
            self._zero_shadow_of_store(op, self.fetch_shadow(op.ptr))
        elif kind in ("malloc", "calloc") or (kind == "alloca" and self.split):
            if op in act.shadow_allocations:
                self._declare("free", [PTR], llvm.LLVMVoidType())
                E.insert(llvm.CallOp("free", self.fetch_shadow(op.results[0])))
            if op in self.deferred_frees and getattr(self, "lane_index", 0) == 0:
                # the primal free the forward sweep left out (ReverseGenerator._find_deferred_frees),
                # once (in vector mode this runs per lane: autodiff/lanes.py)
                release = self.deferred_frees[op]
                free = callee_name(release)
                # a sized operator delete also takes the size
                args = [self.primal(op.results[0]), *(self.primal(o) for o in release.operands[1:])]
                self._declare(free, [a.type for a in args], llvm.LLVMVoidType())
                E.insert(llvm.CallOp(free, *args))
        elif kind == "nrt_alloc" and (op in act.shadow_allocations or op in self.deferred_frees):
            if op in act.shadow_allocations:
                self._declare("NRT_MemInfo_call_dtor", [PTR], llvm.LLVMVoidType())
                release = E.insert(llvm.CallOp("NRT_MemInfo_call_dtor", self.fetch_shadow(op.results[0])))
                # tagged as a deallocator of its argument, so that forward mode over this
                # derivative (a Hessian-vector product) releases the release's own shadow
                release.attributes[DEALLOCATED_ARG] = IntegerAttr(0, i64)
            if op in self.deferred_frees and getattr(self, "lane_index", 0) == 0:
                # the array's last reference, which the forward sweep left out (a prange
                # loop's recomputation uses it: WrittenMemory._find_deferred_frees)
                E.insert(llvm.CallOp("NRT_decref", self.primal(op.results[0])))
        elif kind == "posix_memalign" and op in self.alloc_shadows:
            self._declare("free", [PTR], llvm.LLVMVoidType())
            sp = self.fetch_computed_in(op.parent_block(), self.alloc_shadows[op])
            E.insert(llvm.CallOp("free", sp))
        elif kind == "realloc" and op in act.shadow_allocations:
            self._reverse_realloc(op)
        elif kind == "memset" and op.operands[0] in act.shadowed:
            self._memset_zero(self.fetch_shadow(op.operands[0]), self.primal(op.operands[2]))
        elif kind == "memcpy" and op.operands[0] in act.shadowed:
            self._reverse_memcpy(op)

    def _reverse_realloc(self, op: Operation) -> None:
        """Adjoints gathered in the new shadow flow back into the old one (over the
        bytes the old allocation had), then the new shadow is freed."""
        E = self.E
        s_new = self.fetch_shadow(op.results[0])
        old = op.operands[0]
        owner = old.owner
        if not isinstance(owner, (llvm.ZeroOp, llvm.UndefOp)):
            ftype = self._float_type_of(op, op.results[0], None)
            if ftype is not None:
                s_old = self.fetch_shadow(old)
                n = self.primal(op.operands[1])
                used = E.v(llvm.CallOp("malloc_usable_size", s_old, return_type=i64))
                less = E.v(llvm.ICmpOp(used, n, IntegerAttr(6, i64)))  # ult
                k = E.select(less, used, n)
                name = require_memcpy_adjoint(self.ctx.module, ftype)
                E.insert(llvm.CallOp(name, s_old, s_new, k))
        self._declare("free", [PTR], llvm.LLVMVoidType())
        E.insert(llvm.CallOp("free", s_new))

    def _reverse_memcpy(self, op: Operation) -> None:
        """dsrc[i] += ddst[i]; ddst[i] = 0 over the copied floats."""
        dst, src = op.operands[0], op.operands[1]
        ftype = self._copied_float_type(op)
        if ftype is None:
            # no floats copied: no adjoint to move. The shadow bytes there hold shadow
            # pointers (a struct of pointers and ints copied whole), which the rest of
            # the reverse sweep still reads: zeroing them would null them.
            return
        E = self.E
        ddst = self.fetch_shadow(dst)
        n = self.primal(op.operands[2])
        if n.type != i64:
            n = E.v(llvm.ZExtOp(n, i64))
        dsrc = self.fetch_shadow(src) if src in self.act.shadowed else None
        strided = self._strided_runs(op, ftype)
        if strided is not None:
            period, runs = strided
            name = require_memcpy_adjoint(self.ctx.module, ftype)
            for lo, hi in runs:
                E.insert(llvm.CallOp(f"{name}.strided", dsrc, ddst, n, self._i64(period), self._i64(lo),
                                     self._i64(hi)))
            return
        for lo, hi in self._copied_runs(op, ftype):
            # only the float bytes: other shadow bytes hold pointers' shadows
            if hi < 0:  # the whole copy (run-time length, floats only)
                at_dst, at_src, length = ddst, dsrc, n
                if _constant_int(op.operands[2]) is None and ftype in ("f32", "f64"):
                    check_whole_floats(self, op, ftype, n)
            else:
                at_dst = E.v(llvm.GEPOp(ddst, [lo], i8))
                at_src = E.v(llvm.GEPOp(dsrc, [lo], i8)) if dsrc is not None else None
                length = self._i64(hi - lo)
            if at_src is not None:
                name = require_memcpy_adjoint(self.ctx.module, ftype)
                E.insert(llvm.CallOp(name, at_src, at_dst, length))
            else:
                self._memset_zero(at_dst, length)

    def _integer_over_floats(self, op: Operation) -> bool:
        """A store of an integer as wide as the float that type analysis says the memory
        holds there (a union written through its integer member, a double's bytes set from
        a ``long``): the float's old derivative must not survive in the shadow (it did, and
        the value read back had it). Integers stored where type analysis sees only
        integers zero their shadow bytes too (unused there, and the analysis may not see the
        floats: below); stores over bytes known to hold pointers leave the shadow alone,
        which holds shadow pointers there. Raises when the integer is the float's own bits changed by arithmetic
        (:meth:`_refuse_float_bits_arithmetic`): then the shadow has no right value."""
        t = op.value.type
        nbytes = _integer_bytes(t)
        if nbytes is None:
            return False
        if isinstance(t, IntegerType) and t.width.data in (32, 64) and self._holds_float_of_width(op, op.ptr, nbytes):
            self._refuse_float_bits_arithmetic(op)
            return True
        # other integers (a char, a short, half a double, a vector of bytes) over bytes
        # that may be floats': zero, unless they may be bytes of floats read from memory
        # with derivatives (a byte-by-byte copy). A pointer walked byte by byte has no
        # type but the ``int`` its own stores give, so a char or short store zeroes its
        # shadow bytes unless they are known to hold a pointer's shadow (the shadow of
        # integer bytes is unused: zeroing it is harmless; a hand-written byte loop
        # zeroing doubles left their derivatives behind, session 31)
        self._refuse_copied_float_pieces(op)
        if isinstance(t, IntegerType) and t.width.data not in (32, 64) and self._integer_over_float_bytes(op):
            return True
        # An int or a long too: a pointer typed only by its own integer stores (a
        # ``uint32_t`` zeroing loop over doubles in a callee taking ``void *``, at -O0)
        # is all ``int`` to type analysis, and the zeroed doubles' derivatives were left
        # in the shadow for the next read of them (session 32)
        return "ptr" not in {k for _, _, k in self._types().of(op.ptr).runs(0, nbytes)}

    def _zero_shadow_of_store(self, op: Operation, sp: SSAValue) -> None:
        """Zeros in the shadow bytes of the integer ``op`` stores (an integer vector's by
        a memset of its size)."""
        E, t = self.E, op.value.type
        if isinstance(t, IntegerType):
            mirror_scopes(op, E.insert(llvm.StoreOp(E.v(llvm.ConstantOp(IntegerAttr(0, t), t)), sp)))
        else:
            self._memset_zero(sp, E.v(llvm.ConstantOp(IntegerAttr(_integer_bytes(t), i64), i64)))

    def _refuse_copied_float_pieces(self, store: Operation) -> None:
        """Raise when the integer ``store`` writes, narrower than a float or a vector of
        such (``i8``, ``i16``, ``<16 x i8>``), comes through integer operations, phis and
        casts from a load of memory with shadows whose bytes there may be floats (type
        analysis says floats, or does not know: a pointer walked byte by byte has no
        type): the bytes of a float moved piece by piece (a hand-written byte copy loop,
        ``*d++ = *s++`` over ``char *``; a union copied through its ``unsigned char``
        member). Shadow memory holds a float's derivative as a whole float, which no
        byte-sized piece can carry (the derivative was silently lost, wherever the
        bytes were stored: session 31, hand probes)."""
        for value, owner in self._integer_origins(store.value, vectors=True):
            if isinstance(owner, llvm.LoadOp) and owner.ptr in self.act.shadowed and self._piece_may_be_float(
                    owner, _integer_bytes(value.type)):
                raise ZymaseError(
                    "the bytes of a floating-point value that may hold derivatives are read and "
                    "written in integer pieces (char, short, or int halves of a double: a byte-by-byte "
                    "copy loop, a sign bit flipped through a char); zymase moves derivatives with whole "
                    "floats only and would lose this one",
                    construct="store", function=self.fname,
                    location=location_of(store) or location_of(owner),
                    hint="copy with memcpy or memmove (a length computed at run time is fine) or as "
                    "doubles through a double*, and change values with float operations (copysign, "
                    "fabs, -x), instead of through char")

    def _integer_origins(self, value: SSAValue, *, vectors: bool = False):
        """``(value, op)`` for each operation ``value`` is computed from through integer
        operations, casts, selects and phis (``vectors``: vectors of integers too),
        stopping at loads and calls, which are yielded too."""
        seen: set[SSAValue] = set()
        work = [value]
        while work:
            value = work.pop()
            if value in seen:
                continue
            seen.add(value)
            if isinstance(value, BlockArgument):
                work += self._phi_incoming(value)  # (bits merged with other values)
                continue
            owner = value.owner
            yield value, owner
            if isinstance(owner, (llvm.LoadOp, llvm.CallOp)):
                continue
            work.extend(o for o in owner.operands
                        if isinstance(o.type, IntegerType) or (vectors and _integer_bytes(o.type) is not None))

    def _piece_may_be_float(self, load: Operation, nbytes: int) -> bool:
        """Whether the integer ``load`` may read bytes of a float. An element of a char
        array indexed at run time (``s->name[k]`` at -O0: ``getelementptr [8 x i8], p,
        0, k``) has no type of its own, so the array's bytes in the memory around it
        decide (a union's char member over doubles has floats there; a struct's name
        field next to its doubles has none)."""
        base = _declared_integer_array(load.ptr)
        if base is not None:
            ptr, size = base
            return any(k in FLOAT_KINDS for _, _, k in self._types().of(ptr).runs(0, size))
        return self._may_hold_floats(load, load.ptr, nbytes)

    def _may_hold_floats(self, op: Operation, ptr: SSAValue, nbytes: int | None) -> bool:
        """Whether the ``nbytes`` bytes behind ``ptr`` may hold floats: type analysis
        says so, or cannot tell."""
        try:
            return self._float_type_of(op, ptr, nbytes) is not None
        except ZymaseError:
            return True

    def _integer_over_float_bytes(self, op: Operation) -> bool:
        """A store of an integer of another width than a float's over float bytes:
        a constant over whole floats is like a memset (the shadow is zeroed, True), over
        part of one it is left alone (False, as before); anything else is part of a float's bits, or several floats' bits in one
        integer, which the engine cannot follow: refused (SROA stores a double of a
        copied std::complex as an i8 and an i56, and the derivative was lost)."""
        if op.value.type.width.data % 8:
            return False
        if isinstance(op.value.owner, llvm.ConstantOp) and not self._covers_whole_floats(op):
            # a constant over part of a float carries no derivative: a union's byte member
            # initialized before the value is built over it (libstdc++'s _Temporary_value)
            return False
        self._refuse_float_pieces(op, op.ptr, op.value.type.width.data // 8, "stored over")
        return True

    def _covers_whole_floats(self, op: Operation) -> bool:
        """Whether integer store ``op`` writes float bytes, whole floats only."""
        runs = [(lo, up, kind) for lo, up, kind in self._types().of(op.ptr).runs(0, op.value.type.width.data // 8)
                if kind in FLOAT_KINDS]
        return bool(runs) and all((up - lo) % FLOAT_SIZE[kind] == 0 for lo, up, kind in runs)

    def _refuse_float_pieces(self, op: Operation, ptr: SSAValue, nbytes: int, verb: str) -> None:
        """Raise for an integer access of ``nbytes`` at ``ptr`` that touches float bytes
        unless it is a constant store over whole floats; return when no float is there."""
        tree = self._types().of(ptr)
        runs = [(lo, up, kind) for lo, up, kind in tree.runs(0, nbytes) if kind in FLOAT_KINDS]
        if not runs:
            return
        lo, up, kind = runs[0]
        whole = all((b - a) % FLOAT_SIZE[k] == 0 for a, b, k in runs)
        if whole and isinstance(op, llvm.StoreOp) and isinstance(op.value.owner, llvm.ConstantOp):
            return
        name = {"f32": "float", "f64": "double"}.get(kind, kind)
        what = "part of the bytes of" if not whole else "the bits of several"
        raise ZymaseError(
            f"an i{nbytes * 8} integer is {verb} {what} {name} value(s) holding derivatives (bytes "
            f"[{lo}, {up}) of the access); zymase moves derivatives through whole floating-point "
            "values only and would lose this one",
            construct="store" if isinstance(op, llvm.StoreOp) else "load", function=self.fname, location=location_of(op),
            hint="copy whole values (doubles, structs) instead of byte pieces; where this is std::vector::insert "
            "of a variable, insert a copy of it (v.insert(pos, T(x)))")

    def _float_piece_load(self, op: Operation) -> bool:
        """An integer load from memory with shadows whose bits become a float again
        through integer operations (SROA reads a copied double as an i8 and an i56 and
        reassembles them): the float would be taken as constant, its derivative lost,
        so it is refused. Bits stored to memory are refused when they are part of a
        float there (:meth:`_refuse_float_pieces`); bits only tested (a sign bit) pass.
        Returns False (or raises)."""
        t = op.results[0].type
        from zymase.autodiff.refusals import integer_flow, is_float_like, is_int_like

        if not is_int_like(t):
            return False
        lane = t.element_type if isinstance(t, VectorType) else t
        if lane.width.data % 8:
            return False
        for use in integer_flow(op.results[0], self.ctx.flavor):
            user = use.operation
            if isinstance(user, llvm.BitcastOp) and is_float_like(user.results[0].type):
                what = f"an i{t.width.data} integer" if lane is t else f"a vector of i{lane.width.data} integers"
                raise ZymaseError(
                    f"{what} is loaded from memory holding derivatives and made "
                    "(with integer operations) into a floating-point value; zymase moves derivatives "
                    "through whole floating-point loads only and would lose this one",
                    construct="load", function=self.fname, location=location_of(op) or location_of(user),
                    hint="load whole values (doubles, structs) instead of byte pieces or integers; Eigen's "
                    "SSE abs()/cwiseAbs() does this (an and with the sign mask): compile with -DEIGEN_DONT_VECTORIZE")
            if isinstance(user, llvm.StoreOp) and use.index == 0 and lane is t and t.width.data not in (32, 64):
                self._refuse_float_pieces(op, op.ptr, t.width.data // 8, "loaded from")
        return False

    def _holds_float_of_width(self, op: Operation, ptr: SSAValue, nbytes: int) -> bool:
        try:
            ftype = self._float_type_of(op, ptr, nbytes)
        except ZymaseError:
            return False  # types that do not agree (an array struct's fields): not a float there
        return ftype is not None and _FLOAT_BYTES.get(ftype) == nbytes

    def _refuse_float_bits_arithmetic(self, store: Operation) -> None:
        """An integer stored over a float whose value comes, through integer arithmetic,
        from a float's bits (``u.d = x; u.i += 1; return u.d`` with the union in memory):
        the value read back depends on x, but neither zeroing nor keeping the shadow is its
        derivative. Refused like the same computation on SSA values
        (autodiff/refusals._float_bits_made_float_again). (Bits merged with other values
        across a branch, through a phi, are as wrong.)"""
        for value, owner in self._integer_origins(store.value):
            # (an integer read from memory with shadows counts even where the type analysis
            # sees integers there: its bytes are read only as one, and are stored over a float)
            from_float = (isinstance(owner, llvm.BitcastOp) and is_float_type(owner.operands[0].type)) or (
                isinstance(owner, llvm.LoadOp) and isinstance(value.type, IntegerType)
                and (owner.ptr in self.act.shadowed
                     or self._holds_float_of_width(owner, owner.ptr, value.type.width.data // 8)))
            if from_float:
                raise ZymaseError(
                    "the bits of a float in memory are read as an integer, changed by integer "
                    "arithmetic or merged with other values (across a branch), and stored back over a float; "
                    "zymase moves derivatives through float operations only and would return a wrong one",
                    construct="store", function=self.fname, location=location_of(store) or location_of(owner),
                    hint="write the computation with float operations (nextafter, ldexp, frexp, "
                    "copysign, fabs) instead of bit manipulation",
                )

    def _phi_incoming(self, arg: BlockArgument) -> list[SSAValue]:
        """The values a non-entry block argument receives, one per incoming edge."""
        cfg, flavor = self.p.cfg, self.ctx.flavor
        return [flavor.successor_operands(cfg.terminator(e.src))[e.slot][arg.index]
                for e in cfg.preds.get(arg.block, ())]

    def _active_float_bits_stored(self, store: Operation) -> bool:
        """Refuse an integer stored into memory without a shadow when it may be the bits
        of a float read from memory with one (an integer load of active floats, through
        phis, selects and casts: ``long long v = 0; if (..) memcpy(&v, x, 8); memcpy(nw,
        &v, 8)``, which the pre-AD pipeline makes a phi of an ``i64`` load stored into
        ``nw``): the float read back from there would be taken as constant, its
        derivative lost (session 30, a silent zero). Integer copies the engine follows
        are memcpys by then (transforms/integer_copies). Returns False otherwise."""
        t = store.value.type
        if not isinstance(t, IntegerType) or t.width.data not in (32, 64):
            if _integer_bytes(t) is not None:
                self._refuse_copied_float_pieces(store)
            return False
        width = t.width.data // 8
        for _, owner in self._integer_origins(store.value):
            # (the source's own bytes may look like integers to the type analysis, being
            # read only as one: the destination read back as a float decides)
            if isinstance(owner, llvm.LoadOp) and owner.ptr in self.act.shadowed and (
                    self._holds_float_of_width(owner, owner.ptr, width)
                    or self._holds_float_of_width(store, store.ptr, width)):
                raise ZymaseError(
                    "the bits of a float that holds derivatives are copied through an integer variable "
                    "(merged with other values, or across a branch) into memory read as a float; "
                    "zymase moves derivatives through float operations only and would lose this one",
                    construct="store", function=self.fname,
                    location=location_of(store) or location_of(owner),
                    hint="copy the values as doubles (double v = x[i]; or memcpy between double arrays), "
                    "not through an integer variable")
        # (a 32-bit half of a double: bytes of a float moved in pieces)
        self._refuse_copied_float_pieces(store)
        return False

    def _check_whole_floats_copied(self, op: Operation, n: SSAValue) -> None:
        """Forward mode: a copy of run-time length of floats only (as type analysis sees
        it; nothing when it cannot tell, forward mode copies the bytes as they are) gets
        the run-time check that it moves whole floats, as its reverse does."""
        if _constant_int(op.operands[2]) is not None:
            return
        try:
            ftype = self._copied_float_type(op)
        except ZymaseError:
            return
        if ftype in ("f32", "f64") and "ptr" not in self._types().of(op.operands[0]).kinds():
            if n.type != i64:
                n = self.E.v(llvm.ZExtOp(n, i64))
            check_whole_floats(self, op, ftype, n)

    def _copied_float_type(self, op: Operation) -> str | None:
        """The float type of the bytes a memcpy copies, from type analysis."""
        return self._float_type_of(op, op.operands[0], _constant_int(op.operands[2]))

    def _float_type_of(self, op: Operation, ptr: SSAValue, nbytes: int | None) -> str | None:
        """The float type of the memory behind ``ptr`` (type analysis), for ``op``."""
        return self._types().float_type_in_range(ptr, nbytes)

    def _types(self):
        """Type analysis of the function being differentiated (computed once)."""
        from zymase.analysis.types import analyze_types

        info = getattr(self, "_type_info", None)
        if info is None:
            info = self._type_info = analyze_types(self.p.func, self.ctx.module,
                                                   has_tbaa=self.ctx.driver.has_tbaa)
        return info


def _memref_rule(gen, op: Operation):
    """The memref op's rule (zymase.autodiff.rules.memref); an op without one may
    only appear away from shadowed memory."""
    from zymase.autodiff.registry import REGISTRY
    from zymase.autodiff.rules.memref import MemoryRule, unsupported

    rule = REGISTRY.lookup(op)
    if isinstance(rule, MemoryRule):
        return rule
    if any(o in gen.act.shadowed for o in op.operands):
        raise unsupported(gen, op)
    return MemoryRule()


def _integer_bytes(t) -> int | None:
    """The bytes an integer, or a vector of integers, of type ``t`` occupies in memory
    (None for other types)."""
    if isinstance(t, IntegerType):
        return (t.width.data + 7) // 8
    if isinstance(t, VectorType) and isinstance(t.element_type, IntegerType):
        count = 1
        for d in t.get_shape():
            count *= d
        return count * ((t.element_type.width.data + 7) // 8)
    return None


def _declared_integer_array(ptr: SSAValue) -> tuple[SSAValue, int] | None:
    """``(base, bytes)`` when ``ptr`` is an element of an integer array indexed at run
    time, ``getelementptr [N x iK], base, 0, k`` (as clang writes ``a.name[k]`` at -O0)."""
    op = ptr.owner
    if not isinstance(op, llvm.GEPOp):
        return None
    t = op.elem_type
    raw = list(op.rawConstantIndices.iter_values())
    if not (isinstance(t, llvm.LLVMArrayType) and isinstance(t.type, IntegerType)) or len(raw) != 2 or raw[0] != 0:
        return None
    return op.operands[0], size_align(t)[0]


def _constant_int(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, llvm.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


# ----- restrict promises on shadows ------------------------------------------------------
# Two accesses a primal makes through pointers that do not alias (an inlined callee's
# restrict parameters, zymase.llvm.noalias_scopes) are mirrored, in the reverse sweep or
# by a tangent access, at the same offsets in the shadows, which then do not alias either.
# Each shadow access gets the *twin* of its primal's scopes (the same scopes in a twin
# domain), and each decl a twin decl at its mirror point, so that LLVM duplicates the
# twins with the region as it does the originals. This is what lets LLVM see that dx[i]
# and dx[i + s] in the reverse of an in-place butterfly are different elements: the
# adjoint read there and the zero written back then fold into one plain store.

def _twin(name: str) -> str:
    return "shadow." + name


def mirror_scopes(primal: Operation, shadow_access: Operation) -> None:
    """Give ``shadow_access`` (a load or store of the shadow at ``primal``'s address)
    the twins of ``primal``'s scopes."""
    for key, names in zip((SRC_ALIAS_SCOPE, SRC_NOALIAS), source_scopes(primal)):
        if names:
            shadow_access.attributes[key] = ArrayAttr([StringAttr(_twin(n)) for n in names])


def twin_decl(decl: Operation) -> Operation:
    """The declaration of the twin of ``decl``'s scope."""
    return scope_decl(_twin(decl.attributes[SCOPE_DECL].data))

