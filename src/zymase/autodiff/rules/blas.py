"""Call-level derivative rules of BLAS routines (CBLAS and Fortran spellings, d and s) and
of LAPACK routines (Fortran spelling: Cholesky, LU, symmetric eigendecomposition, SVD,
least squares).

A BLAS call is differentiated as a whole, as Enzyme does: its derivative is a few BLAS
calls (the adjoint of ``C = alpha op(A) op(B) + beta C`` is ``dA += alpha dC op(B)^T``,
``dB += alpha op(A)^T dC``, ``dC *= beta``, plus ``dalpha``/``dbeta`` when they are
active), written in C in ``blas_runtime.c`` (with ``blas_runtime_level3.h`` and the
LAPACK rules' ``lapack_runtime.h``, ``lapack_lu.h``, ``lapack_eigen.h``, ``lapack_svd.h``,
``lapack_lstsq.h``; linked into the module after AD by ``frontends/c.py``) and called
from here. :mod:`blas_signatures` says which parameters
are vectors and matrices, read or written, and what the reverse sweep needs.

Each spelling is a :class:`~zymase.autodiff.registry.CallMemoryRule`:

* activity: the arrays (and, for the Fortran spelling, the alpha/beta pointers) are
  read, the output arrays written; an output gets a shadow like any written memory;
* forward mode: ``<p><name>_fwd`` runs before the primal call (it reads the output's
  old value, e.g. ``beta * dC + dbeta * C``) and gives the output shadows their tangents;
  after it for a routine whose tangent needs what the call computed (``forward_after``:
  potrf's factor);
* reverse mode, forward sweep: an input the reverse sweep needs (``A`` for ``dB``) is
  read again when nothing may write it after the call; otherwise, and always for the
  call's own output read before it is written (``C`` for ``dbeta``), ``<p><name>_save``
  copies it at the call (counted as taped bytes) and the reverse sweep frees the copy;
* reverse mode, at the mirror point: ``<p><name>_dscalar`` per active alpha/beta, then
  ``<p><name>_rev`` for the array adjoints;
* LAPACK, right after the call (both modes): ``info`` read and checked by
  ``<p><name>_status`` (an illegal argument stops the program with a message); the
  reverse sweep receives that value (``int info``, not the pointer), and the outputs a
  routine ``keeps`` (gesv's factors and solution, potrf's factor) are copied there by
  ``_save`` unless nothing may write them later (then read in place).

The Fortran spelling's pointer arguments are read in the forward sweep right before the
call (the values the call saw), transposes turned into CBLAS's enumeration.
"""

from __future__ import annotations

from pathlib import Path

from zymase.autodiff.registry import REGISTRY, CallMemoryRule
from zymase.autodiff.rules.blas_signatures import PRECISIONS, Routine, fortran_params, spellings
from zymase.errors import ZymaseError
from zymase.ir import IntegerAttr, Operation, SSAValue, f32, f64, i8, i32, i64, llvm, location_of

PTR = llvm.LLVMPointerType()
_ELEMENT = {"f64": f64, "f32": f32}
COL_MAJOR = 102
#: Fortran's characters as CBLAS enumerations: kind -> (letter, value for it, value otherwise)
_CHARACTERS = {"trans": ("N", 111, 112), "uplo": ("U", 121, 122), "diag": ("U", 132, 131),
               "side": ("L", 141, 142), "jobz": ("V", 1, 0)}
#: parameter kinds passed to the derivative code as the pointers they are
_POINTERS = ("array", "info", "ints")
#: the prefix of the runtime functions (blas_runtime.c) the derivatives call
RUNTIME_PREFIX = "__zymase_blas_"
RUNTIME_SOURCE = Path(__file__).with_name("blas_runtime.c")


class BlasRule(CallMemoryRule):
    """The rule of one spelling of one routine (``cblas_dgemm``, ``dgemm_``, ...)."""

    def __init__(self, function: str, routine: Routine, precision: str, fortran: bool):
        self.function = function
        self.routine = routine
        self.p = precision
        self.fortran = fortran
        self.T = _ELEMENT[PRECISIONS[precision]]
        # the call's parameters: (name, kind) per operand position
        self.params = fortran_params(routine) if fortran else routine.params

    # ---- what the call reads and writes ------------------------------------------------
    def _pos(self, name: str) -> int:
        return [p for p, _ in self.params].index(name)

    def check(self, op: Operation) -> None:
        """Refuse a call whose arguments are not those of the routine as the BLAS headers
        declare it (an ILP64 BLAS's 64-bit integers, a wrong prototype): the derivative
        code would read them wrongly."""
        n = len(self.params)
        wrong = None
        if len(op.operands) < n or (not self.fortran and len(op.operands) != n):
            missing = f" ({self.params[len(op.operands)][0]} missing)" if len(op.operands) < n else ""
            wrong = f"has {len(op.operands)} arguments, where {n} are expected{missing}"
        else:
            for (name, kind), v in zip(self.params, op.operands):
                want = PTR if self.fortran or kind == "array" else self.T if kind == "real" else i32
                if v.type != want:
                    wrong = f"passes {name} as {v.type}, where zymase's rule expects {want}"
                    break
            if wrong is None and self.routine.returns_real and (not op.results or op.results[0].type != self.T):
                wrong = f"returns {op.results[0].type if op.results else 'nothing'}, where zymase's rule expects {self.T}"
        if wrong is None:
            return
        if self.routine.fortran_only:
            library = "LAPACK"
            hint = "declare the routine as LAPACK does (lapack.h: every argument by pointer, 32-bit integers)"
        else:
            library = "BLAS"
            hint = "declare the routine as the BLAS headers do (cblas.h, f77blas.h; 32-bit integers)"
        raise ZymaseError(f"the call to the {library} routine '{self.function}' {wrong}",
                          construct=f"call @{self.function}", location=location_of(op), hint=hint)

    def reads(self, op):
        read = [self._pos(a) for a in self.routine.reads]
        if self.fortran:
            read += [self._pos(r) for r, k in self.params if k == "real"]
        return [i for i in read if i < len(op.operands)]

    def writes(self, op):
        status = [self._pos(p) for p, k in self.params if k == "info"]
        status += [self._pos(p) for p in self.routine.int_writes]
        return [i for i in (*self.float_outputs(op), *status) if i < len(op.operands)]

    def output_reads(self, op, index):
        output = self.params[index][0]
        inputs = dict(self.routine.depends).get(output)
        if inputs is None:
            return self.reads(op)
        return [i for i in (self._pos(a) for a in inputs) if i < len(op.operands)]

    def float_outputs(self, op):
        return [i for i in (self._pos(a) for a in self.routine.writes) if i < len(op.operands)]

    def scalar_inputs(self, op):
        scalars = [] if self.fortran else [self._pos(r) for r, k in self.params if k == "real"]
        return [i for i in scalars if i < len(op.operands)]

    def pointee_types(self, op):
        element = (PRECISIONS[self.p], 8 if self.p == "d" else 4)
        types = {self._pos(a): element for a in self.routine.of_kind("array")}
        if self.fortran:
            for name, kind in self.params:
                if kind in ("real", "cutoff"):
                    types[self._pos(name)] = element
                elif kind in ("int", "info", "ints"):
                    types[self._pos(name)] = ("int", 4)
        return types

    # ---- activity of the parameters ----------------------------------------------------
    def _active(self, g, op: Operation, name: str) -> bool:
        """Whether the derivative with respect to parameter ``name`` is wanted: an array
        (or a Fortran scalar pointer) with a shadow, or an active CBLAS alpha/beta."""
        v = op.operands[self._pos(name)]
        if self.fortran or dict(self.params)[name] == "array":
            return v in g.act.shadowed
        return g.act.is_active(v)

    def _outputs_shadowed(self, g, op: Operation) -> bool:
        """Whether the call writes memory with shadows or returns an active float (a call
        not shaped like the routine counts, so that :meth:`check` refuses it)."""
        if len(op.operands) < len(self.params):
            return True
        return any(op.operands[self._pos(a)] in g.act.shadowed for a in self.routine.writes) or (
            self.routine.returns_real and bool(op.results) and g.act.is_active(op.results[0]))

    # ---- the routine's arguments in CBLAS form, in the generated function ----------------
    def _cblas_values(self, g, op: Operation) -> list[SSAValue]:
        """The routine's arguments in CBLAS order, computed where the emitter stands (in
        the forward sweep, before the primal call)."""
        E = g.E
        out = []
        for name, kind in self.routine.params:
            if kind == "layout" and self.fortran:
                out.append(E.v(llvm.ConstantOp(IntegerAttr(COL_MAJOR, i32), i32)))
                continue
            v = g.vmap.get(op.operands[self._pos(name)], op.operands[self._pos(name)])
            if not self.fortran or kind in _POINTERS:
                out.append(v)
            elif kind == "int":
                out.append(E.v(llvm.LoadOp(v, i32)))
            elif kind in ("real", "cutoff"):
                out.append(E.v(llvm.LoadOp(v, self.T)))
            elif kind == "job":  # the character's upper-case code
                out.append(E.v(llvm.ZExtOp(self._upper_character(E, v), i32)))
            else:  # a character: the CBLAS value when it is `letter` (either case), else `other`
                letter, when, other = _CHARACTERS[kind]
                upper = self._upper_character(E, v)
                same = E.v(llvm.ICmpOp(upper, E.v(llvm.ConstantOp(IntegerAttr(ord(letter), i8), i8)),
                                       IntegerAttr(0, i64)))  # eq
                out.append(E.select(same, E.v(llvm.ConstantOp(IntegerAttr(when, i32), i32)),
                                    E.v(llvm.ConstantOp(IntegerAttr(other, i32), i32))))
        return out

    @staticmethod
    def _upper_character(E, ptr: SSAValue) -> SSAValue:
        """The Fortran character at ``ptr`` in upper case (an i8): LAPACK accepts both."""
        c = E.v(llvm.LoadOp(ptr, i8))
        return E.v(llvm.AndOp(c, E.v(llvm.ConstantOp(IntegerAttr(0xDF, i8), i8))))

    def _declare(self, g, suffix: str, inputs, output) -> str:
        name = f"{RUNTIME_PREFIX}{self.p}{self.routine.name}_{suffix}"
        g._declare(name, inputs, output)
        return name

    def _types(self, values) -> list:
        return [v.type for v in values]

    def _null(self, g) -> SSAValue:
        return g.E.v(llvm.ZeroOp.build(result_types=[PTR]))

    def lane_by_lane(self, op: Operation) -> bool:
        """BLAS and LAPACK at width N: the generators call the rule once per lane, with
        that lane's maps; the primal call, the copies kept for the reverse sweep
        (``_save``) and LAPACK's status check are made once for all lanes, the copies
        freed after the last lane. A BLAS lane's derivative is the routine's width-1
        derivative on that lane's shadows (Enzyme's, lane by lane). A LAPACK call's lanes
        are gathered and the last lane emits one ``_fwd_lanes``/``_rev_lanes`` call with
        every lane's shadows (:meth:`_lanes_at_once`), which factors or decomposes once and
        solves the lanes' right-hand sides together. Sound because every derivative
        function of blas_runtime.c and the lapack_*.h files takes the primal arrays and
        what ``_save`` kept ``const`` and writes only the lanes' shadows and temporaries
        of its own (LAPACK's factor copies: ``lu_of``, ``eig_of``, ``svd_of``; potrf's
        reverse does not transpose the factor in place)."""
        return True

    def _lanes_at_once(self, g) -> bool:
        """Whether this call's derivative takes every lane in one runtime call: a LAPACK
        routine at width > 1 (each has ``_fwd_lanes``/``_rev_lanes``; BLAS routines share
        nothing between lanes and stay lane by lane)."""
        return self.routine.fortran_only and g.width > 1

    def _gathered_lanes(self, g, op: Operation, shadows: list[SSAValue]) -> list[SSAValue] | None:
        """Record this lane's shadows of ``op``'s arrays; on the last lane, every lane's
        as one stack array argument list ``[lanes, d]`` (``d[a * lanes + k]``: array a,
        lane k, in the routine's order); None before the last lane."""
        lanes = g.gathered(op, shadows)
        if lanes is None:
            return None
        by_array = [lane[a] for a in range(len(shadows)) for lane in lanes]
        count = g.E.v(llvm.ConstantOp(IntegerAttr(g.width, i32), i32))
        return [count, g.pointer_array(by_array)]

    # ---- forward sweep -----------------------------------------------------------------
    def structure(self, g, op, clone, *, forward_mode):
        if not self._outputs_shadowed(g, op):
            return
        if not forward_mode and g.lane_index > 0:
            return  # reverse mode keeps the call's inputs once (lane 0) for every lane
        after = g.__dict__.setdefault("_blas_after", {})
        if forward_mode and g.lane_index > 0:  # another lane's tangent: the call's status was checked on lane 0
            if self.routine.forward_after:
                self._after_lanes(g, after[op])
            else:
                g.E.before(clone)
            values = g._blas_values[op] if self._lanes_at_once(g) else self._cblas_values(g, op)
            self._tangents(g, op, values)
            self._after_lanes(g, after[op])  # where lane 0 left the emitter
            return
        try:
            self.check(op)
        except ZymaseError as err:
            err.function = err.function or g.fname
            raise
        g.E.before(clone)
        values = self._cblas_values(g, op)
        if forward_mode and self._lanes_at_once(g):  # the last lane's call takes lane 0's values
            g.__dict__.setdefault("_blas_values", {})[op] = values
        if forward_mode and not self.routine.forward_after:
            self._tangents(g, op, values)
        elif not forward_mode:
            self._keep_for_reverse(g, op, values)
        after[op] = clone.next_op if clone.next_op is not None else clone.parent_block()  # later lanes go there
        self._after_lanes(g, after[op])
        status = self._status_after_call(g, op)
        if forward_mode and self.routine.forward_after:
            self._tangents(g, op, values)
        elif not forward_mode:
            self._keep_after_call(g, op, values, status)

    @staticmethod
    def _after_lanes(g, anchor) -> None:
        """The emitter right after the primal call and the code lanes before this one
        put there: before ``anchor``, the op that followed the call (or at the end of its
        block, ``anchor`` then the block)."""
        if isinstance(anchor, Operation):
            g.E.before(anchor)
        else:
            g.E.at_end(anchor)

    def _status_after_call(self, g, op: Operation) -> SSAValue | None:
        """LAPACK, right after the primal call: its ``info`` read (the reverse sweep gets
        this value, not the variable, which a later call may reuse) and checked by
        ``<p><name>_status``, which stops the program when the call refused an argument
        (``info < 0``: LAPACK did nothing, its derivative code would compute one anyway)."""
        info = [name for name, kind in self.params if kind == "info"]
        if not info:
            return None
        ptr = op.operands[self._pos(info[0])]
        status = g.E.v(llvm.LoadOp(g.vmap.get(ptr, ptr), i32))
        g.E.insert(llvm.CallOp(self._declare(g, "status", [i32], llvm.LLVMVoidType()), status))
        return status

    def _keep_after_call(self, g, op: Operation, values: list[SSAValue], status: SSAValue | None) -> None:
        """Reverse mode, right after the primal call: what the call computed that the
        reverse sweep reads (gesv's factors, pivots and solution, potrf's factor), so that it
        neither factors nor solves again: read in place when nothing may write it after the
        call, else copied here."""
        _, saved = g._blas_forward[op]
        for output, wanted_by in self.routine.keeps:
            if not any(self._active(g, op, w) for w in wanted_by):
                continue
            if g.unwritten_after(op, op.operands[self._pos(output)]):
                continue  # read in place by the reverse sweep
            which = g.E.v(llvm.ConstantOp(IntegerAttr(self.routine.index(output), i32), i32))
            args = [which, *values]
            name = self._declare(g, "save", self._types(args), PTR)
            saved[output] = g.E.v(llvm.CallOp(name, *args, return_type=PTR))
        g._blas_forward[op] = (values, saved, status)

    def _tangents(self, g, op: Operation, values: list[SSAValue]) -> None:
        """Forward mode, before the primal call: the output tangents (and the result's)."""
        E = g.E
        arrays = self.routine.of_kind("array")
        shadows = [g.shadow_of(op.operands[self._pos(a)]) if self._active(g, op, a) else self._null(g)
                   for a in arrays]
        tangents = []
        for r in self.routine.of_kind("real"):
            v = op.operands[self._pos(r)]
            if not self._active(g, op, r):
                tangents.append(E.zero(self.T))
            elif self.fortran:
                tangents.append(E.v(llvm.LoadOp(g.shadow_of(v), self.T)))
            else:
                tangents.append(g.tmap[v])
        if self._lanes_at_once(g):  # LAPACK: no scalar tangents, no float result
            lanes = self._gathered_lanes(g, op, shadows)
            if lanes is not None:
                args = [*values, *lanes]
                E.insert(llvm.CallOp(self._declare(g, "fwd_lanes", self._types(args), self.T), *args,
                                     return_type=self.T))
            return
        args = [*values, *shadows, *tangents]
        name = self._declare(g, "fwd", self._types(args), self.T)
        t = E.v(llvm.CallOp(name, *args, return_type=self.T))
        if self.routine.returns_real and g.act.is_active(op.results[0]):
            g.tmap[op.results[0]] = t

    def _keep_for_reverse(self, g, op: Operation, values: list[SSAValue]) -> None:
        """Reverse mode, before the primal call: copies of the inputs the reverse sweep
        needs that the call or a later op may overwrite."""
        saved = {}
        written = set(self.routine.writes)
        for array, wanted_by in self.routine.needs:
            if not any(self._active(g, op, w) for w in wanted_by):
                continue
            ptr = op.operands[self._pos(array)]
            outputs = [op.operands[self._pos(w)] for w in written]
            if array not in written and g.unwritten_after(op, ptr) and not g.shares_object_with(ptr, outputs):
                continue  # read again in the reverse sweep
            which = g.E.v(llvm.ConstantOp(IntegerAttr(self.routine.index(array), i32), i32))
            args = [which, *values]
            name = self._declare(g, "save", self._types(args), PTR)
            saved[array] = g.E.v(llvm.CallOp(name, *args, return_type=PTR))
        g.__dict__.setdefault("_blas_forward", {})[op] = (values, saved)

    # ---- reverse sweep -----------------------------------------------------------------
    def reverse_memory(self, g, op):
        if not self._outputs_shadowed(g, op):
            return
        E = g.E
        values, saved, status = g._blas_forward[op]
        lanes = None
        if self._lanes_at_once(g):  # LAPACK (no alpha/beta, no float result): the last lane calls for all
            lanes = self._gathered_lanes(g, op, self._reverse_shadows(g, op))
            if lanes is None:
                return
        home = op.parent_block()
        args = []
        for (name, kind), w in zip(self.routine.params, values):
            if name in saved:
                args.append(g.fetch_computed_in(home, saved[name]))
            elif kind == "info":  # the status the call returned, as a value
                args.append(g.fetch_computed_in(home, status))
            elif self.fortran and kind not in _POINTERS:
                args.append(g.fetch_computed_in(home, w))
            else:
                args.append(g.primal(op.operands[self._pos(name)]))
        if lanes is not None:
            call_args = [*args, *lanes]
            E.insert(llvm.CallOp(self._declare(g, "rev_lanes", self._types(call_args), llvm.LLVMVoidType()),
                                 *call_args))
            self._free_saved(g, saved, args)
            return
        shadows = self._reverse_shadows(g, op)
        if self.routine.returns_real and op.results:
            dr = g._take_adjoint(op.results[0]) if g.act.is_active(op.results[0]) else None
        else:
            dr = None
        if dr is None:
            dr = E.zero(self.T)
        for r in self.routine.of_kind("real"):
            if not self._active(g, op, r):
                continue
            which = E.v(llvm.ConstantOp(IntegerAttr(self.routine.index(r), i32), i32))
            call_args = [which, *args, *shadows, dr]
            name = self._declare(g, "dscalar", self._types(call_args), self.T)
            d = E.v(llvm.CallOp(name, *call_args, return_type=self.T))
            v = op.operands[self._pos(r)]
            if self.fortran:
                sp = g.fetch_shadow(v)
                E.insert(llvm.StoreOp(E.accumulate(E.v(llvm.LoadOp(sp, self.T)), d), sp))
            else:
                g._accumulate(v, d)
        call_args = [*args, *shadows, dr]
        name = self._declare(g, "rev", self._types(call_args), llvm.LLVMVoidType())
        E.insert(llvm.CallOp(name, *call_args))
        self._free_saved(g, saved, args)

    def _reverse_shadows(self, g, op: Operation) -> list[SSAValue]:
        """The selected lane's shadows of the routine's arrays in the reverse sweep (null
        for a constant one)."""
        return [g.fetch_shadow(op.operands[self._pos(a)]) if self._active(g, op, a) else self._null(g)
                for a in self.routine.of_kind("array")]

    def _free_saved(self, g, saved: dict, args: list[SSAValue]) -> None:
        """The copies kept for the reverse sweep freed, once every lane has read them."""
        if saved and g.lane_index == g.width - 1:
            g._declare("free", [PTR], llvm.LLVMVoidType())
            for array in saved:
                g.E.insert(llvm.CallOp("free", args[self.routine.index(array)]))


for _function, _routine, _p, _fortran in spellings():
    REGISTRY.register_call_rule(_function, BlasRule(_function, _routine, _p, _fortran))
