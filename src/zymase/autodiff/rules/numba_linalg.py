"""Call-level derivative rules of Numba's BLAS/LAPACK helpers (``numba_xxgemm``, ...).

In njit code, NumPy's linear algebra on float arrays lowers to calls of C helpers that
Numba exports (``numba/_lapack.c``): ``a @ b`` and ``np.dot`` on 2-D arrays call
``numba_xxgemm``, matrix-vector products ``numba_xxgemv``, ``np.linalg.cholesky``
``numba_xxpotrf``, ``np.linalg.solve`` ``numba_xgesv``, ``np.linalg.norm`` ``numba_xxnrm2``. Each takes a ``kind`` letter
first ('s', 'd', 'c', 'z': the element type), works column-major (Numba passes C-order
arrays as their transposes) and returns a status. They are differentiated as a whole,
like the CBLAS spellings in :mod:`blas` (the same :class:`CallMemoryRule` hook), by C
code of their own, ``numba_linalg_runtime.c``, which calls the BLAS/LAPACK routines
SciPy exports to Cython, the ones Numba's helpers call (``register_scipy_symbols``
publishes their addresses under ``__zymase_scipy_<routine>``).

Per helper, :data:`HELPERS` says which operands are arrays read and written, and when
the rule's runtime runs:

* forward mode: ``<p><helper>_fwd`` before the primal call (products: the output's
  tangent needs only the inputs) or after it (factorizations and solves: the tangent
  needs the factor or solution the call computed);
* reverse mode: what the reverse sweep needs is copied by ``<p><helper>_save`` at the
  call (before it for a product's inputs, when a later op may overwrite them, and for
  the inputs a decomposition overwrites, always; after it for a factorization's factor
  or a solve's solution, always) and freed after ``<p><helper>_rev`` at the mirror point.

The LU, eigen, SVD and least-squares helpers (``np.linalg.inv``, ``det``, ``slogdet``,
``eigh``, ``eigvalsh``, ``svd``, ``pinv``, ``lstsq``) use the matrix-level rules of the C
path's LAPACK routines (``lapack_lu.h``, ``lapack_eigen.h``, ``lapack_svd.h``,
``lapack_lstsq.h``), compiled into the same runtime over SciPy's routines
(``numba_lapack_runtime.h``): their derivatives factor the input again, as the C rules
do, so the input is what the reverse sweep keeps.

``np.linalg.qr`` is Numba's pair ``numba_ez_geqrf`` (A overwritten by its Householder
form) and ``numba_ez_xxgqr`` (Q from it), with R copied out of A in between. The form in
between has no matrix-level derivative, so the pair is differentiated as one QR
(``numba_qr_runtime.h``): geqrf's runtime computes both outputs' derivatives (dR over
A's upper trapezoid, where the copy reads it) and hands what belongs to Q to the xxgqr
call on the same array through a state pointer (:attr:`Helper.hands_state`,
:attr:`Helper.state_from`): dQ in forward mode, the kept Householder form and Q's
adjoint in reverse mode.

Complex kinds and helpers without a rule are refused naming the NumPy function
(:data:`NUMPY_NAMES`), not the helper.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zymase.analysis.trip_count import constant_int
from zymase.autodiff.lane_blocks import claim_spare_slot, whole_block
from zymase.autodiff.registry import REGISTRY, CallMemoryRule
from zymase.errors import ZymaseError
from zymase.ir import IntegerAttr, Operation, SSAValue, f32, f64, i32, i64, llvm, location_of

PTR = llvm.LLVMPointerType()
#: the prefix of the runtime functions (numba_linalg_runtime.c) the derivatives call
RUNTIME_PREFIX = "__zymase_nblas_"
RUNTIME_SOURCE = Path(__file__).with_name("numba_linalg_runtime.c")
#: the prefix under which the SciPy BLAS/LAPACK routines the runtime calls are published
SCIPY_PREFIX = "__zymase_scipy_"
#: the SciPy routines the runtime calls (both precisions)
SCIPY_ROUTINES = {"cython_blas": ("gemm", "gemv", "trsm", "trmm"),
                  "cython_lapack": ("getrs", "getrf", "laswp", "syev", "syevd", "gesdd", "orgqr")}

#: Numba's helpers -> the NumPy functions that call them (for messages)
NUMPY_NAMES = {
    "numba_xxgemm": "'@' / np.dot / np.matmul on 2-D arrays",
    "numba_xxgemv": "'@' / np.dot / np.matmul of a matrix and a vector",
    "numba_xxdot": "np.dot / np.vdot of two vectors",
    "numba_xxnrm2": "np.linalg.norm",
    "numba_xxpotrf": "np.linalg.cholesky",
    "numba_xgesv": "np.linalg.solve",
    "numba_xxgetrf": "np.linalg.det / np.linalg.slogdet / np.linalg.inv",
    "numba_ez_xxgetri": "np.linalg.inv",
    "numba_ez_xxxevd": "np.linalg.eigh / np.linalg.eigvalsh",
    "numba_ez_rgeev": "np.linalg.eig / np.linalg.eigvals",
    "numba_ez_cgeev": "np.linalg.eig / np.linalg.eigvals",
    "numba_ez_gesdd": "np.linalg.svd (also np.linalg.pinv, cond, matrix_rank and norm with ord=2)",
    "numba_ez_geqrf": "np.linalg.qr",
    "numba_ez_xxgqr": "np.linalg.qr",
    "numba_ez_gelsd": "np.linalg.lstsq",
}

#: for messages: what has a rule
LINALG_WITH_RULES = ("'@' and np.dot (1-D and 2-D), np.linalg.cholesky, solve, norm, inv, det, slogdet, eigh, "
                     "eigvalsh, svd, pinv, lstsq and qr, and what Numba writes as loops (np.outer, np.trace, np.kron)")

_KINDS = {ord("d"): ("d", f64, "f64", 8), ord("s"): ("s", f32, "f32", 4)}
_COMPLEX_KINDS = {ord("c"): "complex64", ord("z"): "complex128"}


@dataclass(frozen=True)
class Helper:
    name: str
    # (name, kind) per operand: "kind" (the element letter), "char" (a transpose or
    # triangle letter), "int" (a dimension), "scalar" (a pointer to alpha/beta: a
    # constant slot of Numba's), "array" (float data), "ipiv" (pivot indices, written)
    params: tuple[tuple[str, str], ...]
    reads: tuple[str, ...]  # arrays the outputs depend on
    writes: tuple[str, ...]  # float arrays the call writes
    forward_after: bool  # the tangent needs what the call computed
    # reverse mode: input -> arrays whose derivative needs it as it was at the call
    # (copied before the call when a later op may write it)
    needs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # reverse mode: what the call computed that the reverse sweep reads (copied after the call)
    keeps: tuple[str, ...] = ()
    # reverse mode: inputs the call itself overwrites, whose derivative reads them as they
    # were (copied before the call, always)
    inputs_kept: tuple[str, ...] = ()
    # the first of a pair of calls differentiated as one: the runtime's ``_fwd`` returns
    # a state pointer (its ``_save`` of ``keeps`` is the reverse sweep's state) that the
    # pair's second call receives first; the state is freed by the second call's ``_fwd``
    # (forward mode) and after this call's ``_rev`` (reverse mode)
    hands_state: bool = False
    # the second of such a pair: the helper whose latest call on the same ``A`` operand
    # hands this call its state
    state_from: str = ""

    def pos(self, param: str) -> int:
        return [p for p, _ in self.params].index(param)

    def of_kind(self, kind: str) -> list[str]:
        return [p for p, k in self.params if k == kind]


_K, _C, _I, _S, _A, _P = "kind", "char", "int", "scalar", "array", "ipiv"
_Q = "pivots"  # integer array the call only reads (getri's pivot indices)
_V = "value"  # a float passed by value (gelsd's rcond: a threshold, no derivative)

HELPERS = {
    h.name: h
    for h in (
        # C = alpha op(A) op(B) + beta C (column-major)
        Helper("numba_xxgemm", (("kind", _K), ("transa", _C), ("transb", _C), ("m", _I), ("n", _I), ("k", _I),
                                ("alpha", _S), ("A", _A), ("lda", _I), ("B", _A), ("ldb", _I), ("beta", _S),
                                ("C", _A), ("ldc", _I)),
               reads=("A", "B", "C"), writes=("C",), forward_after=False,
               needs=(("A", ("B",)), ("B", ("A",)))),
        # y = alpha op(A) x + beta y, unit increments
        Helper("numba_xxgemv", (("kind", _K), ("trans", _C), ("m", _I), ("n", _I), ("alpha", _S), ("A", _A),
                                ("lda", _I), ("x", _A), ("beta", _S), ("y", _A)),
               reads=("A", "x", "y"), writes=("y",), forward_after=False,
               needs=(("A", ("x",)), ("x", ("A",)))),
        # result[0] = ||x||_2 (np.linalg.norm with ord None or 2: vectors, and the
        # Frobenius norm of a matrix seen as one vector)
        Helper("numba_xxnrm2", (("kind", _K), ("n", _I), ("x", _A), ("incx", _I), ("result", _A)),
               reads=("x",), writes=("result",), forward_after=True, keeps=("x", "result")),
        # the stored triangle of A overwritten by its Cholesky factor
        Helper("numba_xxpotrf", (("kind", _K), ("uplo", _C), ("n", _I), ("A", _A), ("lda", _I)),
               reads=("A",), writes=("A",), forward_after=True, keeps=("A",)),
        # A X = B: A overwritten by its LU factors (scratch in np.linalg.solve), B by X
        Helper("numba_xgesv", (("kind", _K), ("n", _I), ("nrhs", _I), ("A", _A), ("lda", _I), ("ipiv", _P),
                               ("B", _A), ("ldb", _I)),
               reads=("A", "B"), writes=("A", "B"), forward_after=True, keeps=("A", "ipiv", "B")),
        # A (m x n) = P L U in place (np.linalg.det, slogdet, inv); the derivative factors
        # the input again (lapack_lu.h)
        Helper("numba_xxgetrf", (("kind", _K), ("m", _I), ("n", _I), ("A", _A), ("lda", _I), ("ipiv", _P)),
               reads=("A",), writes=("A",), forward_after=False, inputs_kept=("A",)),
        # A's LU factors (and pivots) overwritten by A^-1 (np.linalg.inv, after getrf)
        Helper("numba_ez_xxgetri", (("kind", _K), ("n", _I), ("A", _A), ("lda", _I), ("ipiv", _Q)),
               reads=("A", "ipiv"), writes=("A",), forward_after=False, inputs_kept=("A", "ipiv")),
        # eigenvalues w of the symmetric A (the triangle uplo) and, for jobz 'V', the
        # eigenvectors over A; for 'N' the triangle is destroyed (lapack_eigen.h)
        Helper("numba_ez_xxxevd", (("kind", _K), ("jobz", _C), ("uplo", _C), ("n", _I), ("A", _A), ("lda", _I),
                                   ("w", _A)),
               reads=("A",), writes=("A", "w"), forward_after=False, inputs_kept=("A",)),
        # s, U (m x ucols), V^T (vrows x n) of A, jobz 'S' (thin) or 'A' (full); A
        # destroyed (np.linalg.svd, pinv; lapack_svd.h)
        Helper("numba_ez_gesdd", (("kind", _K), ("jobz", _C), ("m", _I), ("n", _I), ("A", _A), ("lda", _I),
                                  ("s", _A), ("U", _A), ("ldu", _I), ("VT", _A), ("ldvt", _I)),
               reads=("A",), writes=("A", "s", "U", "VT"), forward_after=False, inputs_kept=("A",)),
        # the first n rows of B (ldb x nrhs) overwritten by X = A^+ B, s the singular values
        # of A, rank written, A destroyed (np.linalg.lstsq; lapack_lstsq.h)
        Helper("numba_ez_gelsd", (("kind", _K), ("m", _I), ("n", _I), ("nrhs", _I), ("A", _A), ("lda", _I),
                                  ("B", _A), ("ldb", _I), ("s", _A), ("rcond", _V), ("rank", _P)),
               reads=("A", "B"), writes=("A", "B", "s"), forward_after=False, inputs_kept=("A", "B")),
        # np.linalg.qr: A (m x n) overwritten by R on and above the diagonal and Householder
        # reflectors below it, tau their scales (numba_qr_runtime.h)
        Helper("numba_ez_geqrf", (("kind", _K), ("m", _I), ("n", _I), ("A", _A), ("lda", _I), ("tau", _A)),
               reads=("A",), writes=("A", "tau"), forward_after=True, keeps=("A",), hands_state=True),
        # ... then A's first n (= min(m, n)) columns overwritten by Q, from the reflectors
        Helper("numba_ez_xxgqr", (("kind", _K), ("m", _I), ("n", _I), ("k", _I), ("A", _A), ("lda", _I),
                                  ("tau", _A)),
               reads=("A", "tau"), writes=("A",), forward_after=True, state_from="numba_ez_geqrf"),
    )
}


class NumbaHelperRule(CallMemoryRule):
    """The rule of one of Numba's BLAS/LAPACK helpers."""

    def __init__(self, helper: Helper):
        self.h = helper

    # ---- what the call reads and writes ------------------------------------------------
    def _precision(self, op: Operation):
        """(letter, element type, type name, size) of the call's ``kind`` operand."""
        kind = constant_int(op.operands[0]) if op.operands else None
        if kind in _KINDS:
            return _KINDS[kind]
        numpy = NUMPY_NAMES[self.h.name]
        what = (f"on {_COMPLEX_KINDS[kind]} arrays" if kind in _COMPLEX_KINDS
                else "with an element type zymase cannot read from the call")
        raise ZymaseError(
            f"{numpy} {what} has no derivative in zymase",
            construct=f"{numpy} (call @{self.h.name})",
            location=location_of(op),
            hint="zymase differentiates NumPy linear algebra on float32 and float64 arrays",
        )

    def check(self, op: Operation) -> None:
        n = len(self.h.params)
        if len(op.operands) != n:
            raise ZymaseError(
                f"the call to Numba's helper '{self.h.name}' ({NUMPY_NAMES[self.h.name]}) has "
                f"{len(op.operands)} arguments, where zymase's rule expects {n}",
                construct=f"call @{self.h.name}",
                location=location_of(op),
                hint="this Numba version lowers NumPy's linear algebra differently; use numba>=0.68,<0.69",
            )
        self._precision(op)

    def reads(self, op):
        return [self.h.pos(a) for a in (*self.h.reads, *self.h.of_kind(_S)) if self.h.pos(a) < len(op.operands)]

    def writes(self, op):
        return [i for i in (*self.float_outputs(op), *(self.h.pos(p) for p in self.h.of_kind(_P)))
                if i < len(op.operands)]

    def float_outputs(self, op):
        return [i for i in (self.h.pos(a) for a in self.h.writes) if i < len(op.operands)]

    def pointee_types(self, op):
        kind = constant_int(op.operands[0]) if op.operands else None
        if kind not in _KINDS:
            return {}
        _, _, name, size = _KINDS[kind]
        types = {self.h.pos(a): (name, size) for a in (*self.h.of_kind(_A), *self.h.of_kind(_S))}
        types.update({self.h.pos(p): ("int", 4) for p in (*self.h.of_kind(_P), *self.h.of_kind(_Q))})
        return types

    # ---- activity ----------------------------------------------------------------------
    def _shadowed(self, g, op: Operation, name: str) -> bool:
        return op.operands[self.h.pos(name)] in g.act.shadowed

    def _outputs_shadowed(self, g, op: Operation) -> bool:
        if len(op.operands) != len(self.h.params):
            return True  # check() refuses it
        return any(self._shadowed(g, op, a) for a in self.h.writes)

    def _refuse_active_scalars(self, g, op: Operation) -> None:
        """Numba passes alpha and beta as constant slots; active ones would be another
        program than the one this rule was written for."""
        for s in self.h.of_kind(_S):
            if self._shadowed(g, op, s):
                raise ZymaseError(
                    f"the {s} of a call to '{self.h.name}' ({NUMPY_NAMES[self.h.name]}) holds active data, "
                    "which zymase's rule for it does not differentiate",
                    construct=f"call @{self.h.name}",
                    function=g.fname,
                    location=location_of(op),
                )

    # ---- the call's values in the generated function -------------------------------------
    def _values(self, g, op: Operation) -> list[SSAValue]:
        """The helper's operands but ``kind``, alpha/beta read from their slots, computed
        where the emitter stands (in the forward sweep)."""
        T = self._precision(op)[1]
        out = []
        for name, kind in self.h.params[1:]:
            v = g.vmap.get(op.operands[self.h.pos(name)], op.operands[self.h.pos(name)])
            out.append(g.E.v(llvm.LoadOp(v, T)) if kind == _S else v)
        return out

    def _declare(self, g, op: Operation, suffix: str, args, output) -> str:
        p = self._precision(op)[0]
        name = f"{RUNTIME_PREFIX}{p}{self.h.name.removeprefix('numba_')}_{suffix}"
        g._declare(name, [a.type for a in args], output)
        return name

    def _shadows(self, g, op: Operation, fetch) -> list[SSAValue]:
        return [fetch(op.operands[self.h.pos(a)]) if self._shadowed(g, op, a)
                else g.E.v(llvm.ZeroOp.build(result_types=[PTR])) for a in self.h.of_kind(_A)]

    def _check_in(self, g, op) -> None:
        """The call's own refusals, named in the function being differentiated."""
        try:
            self.check(op)
            self._refuse_active_scalars(g, op)
        except ZymaseError as err:
            err.function = err.function or g.fname
            raise

    def _which(self, g, param: str) -> SSAValue:
        return g.E.v(llvm.ConstantOp(IntegerAttr(self.h.pos(param), i32), i32))

    # ---- forward sweep -----------------------------------------------------------------
    def structure(self, g, op, clone, *, forward_mode):
        if not self._outputs_shadowed(g, op):
            return
        self._check_in(g, op)
        after = self.h.forward_after
        if not after:
            g.E.before(clone)
        values = self._values(g, op)
        status = [clone.results[0]] if after and clone.results else []
        states = g.__dict__.setdefault("_numba_linalg_states", {})
        handed = [self._state_handed(g, op, states, forward_mode)] if self.h.state_from else []
        if forward_mode:
            args = [*handed, *values, *status, *self._shadows(g, op, g.shadow_of)]
            output = PTR if self.h.hands_state else llvm.LLVMVoidType()
            call = llvm.CallOp(self._declare(g, op, "fwd", args, output), *args,
                               **({"return_type": PTR} if self.h.hands_state else {}))
            g.E.insert(call)
            if self.h.hands_state:
                states[op] = (self.h.name, call.results[0])
        else:
            saved = {}
            for array, wanted_by in self.h.needs:
                if any(self._shadowed(g, op, w) for w in wanted_by) and not g.unwritten_after(
                        op, op.operands[self.h.pos(array)]):
                    saved[array] = self._save(g, op, array, values)
            for kept in (*self.h.inputs_kept, *self.h.keeps):
                saved[kept] = self._save(g, op, kept, values)
            if self.h.hands_state:
                states[op] = (self.h.name, saved[self.h.keeps[0]])
            g.__dict__.setdefault("_numba_linalg_forward", {})[op] = (values, status, saved, handed)
        if not after:
            if clone.next_op is not None:
                g.E.before(clone.next_op)
            else:
                g.E.at_end(clone.parent_block())

    # ---- vector forward mode (and Laplacian mode) -------------------------------------
    def forwards_lanes(self, op: Operation) -> bool:
        """Whether this helper has a lanes-at-once forward rule (vector mode)."""
        return self.h.name == "numba_xxgemv"

    def forward_lanes(self, g, op: Operation, clone: Operation) -> None:
        """The tangents of every lane in one runtime call, before the primal call:
        ``<p>xxgemv_fwd_lanes`` packs the lanes' x tangents into one matrix and runs one
        gemm. In Laplacian mode the last lane is the summed second-order term, which a
        linear map carries like a tangent; a product of two active operands (W and x both
        depending on the input) would add a term of its own and is refused."""
        if not self._outputs_shadowed(g, op):
            return
        self._check_in(g, op)
        if getattr(g, "laplacian", False) and self._shadowed(g, op, "A") and self._shadowed(g, op, "x"):
            raise ZymaseError(
                f"Laplacian mode does not differentiate {NUMPY_NAMES[self.h.name]} when both the matrix and "
                "the vector depend on the input (their product's second-order term)",
                construct=f"call @{self.h.name}", function=g.fname, location=location_of(op),
                hint="the Taylor-mode laplacian handles it (zymase.laplacian falls back to it)")
        E = g.E
        E.before(clone)
        values = self._values(g, op)
        lanes, blocks = [], []
        for a in ("A", "x", "y"):
            if self._shadowed(g, op, a):
                ptrs = [g.shadow_of(op.operands[self.h.pos(a)]) for _ in g.each_lane()]
                blocks.append(whole_block(g, ptrs))
                lanes.append(g.pointer_array(ptrs))
            else:
                blocks.append(None)
                lanes.append(E.v(llvm.ZeroOp.build(result_types=[PTR])))
        count = E.v(llvm.ConstantOp(IntegerAttr(g.width, 64), i64))
        args = [*values, count, *lanes]
        if blocks[0] is None and blocks[1] is not None and blocks[2] is not None and blocks[1] is not blocks[2]:
            # x's and y's lanes each a whole lane block (autodiff/lane_blocks.py): the
            # primal product can be one more column of the lanes' gemm, in the blocks'
            # spare slots; this call replaces Numba's, returning its status
            for mi in blocks[1:]:
                claim_spare_slot(g, mi)
            status = E.v(llvm.CallOp(self._declare(g, op, "fwd_lanes_value", args, i32), *args, return_type=i32))
            g.vmap[op.results[0]] = status
            g.primal_copies.pop(clone, None)
            after, block = clone.next_op, clone.parent_block()
            clone.detach()
            clone.erase()
            if after is not None:
                E.before(after)
            else:
                E.at_end(block)
            return
        E.insert(llvm.CallOp(self._declare(g, op, "fwd_lanes", args, llvm.LLVMVoidType()), *args))
        if clone.next_op is not None:
            E.before(clone.next_op)
        else:
            E.at_end(clone.parent_block())

    def _state_handed(self, g, op: Operation, states: dict, forward_mode: bool):
        """The state the latest call of ``state_from`` on this call's ``A`` handed on; in
        reverse mode the forward sweep's value, with the block it was computed in."""
        array = op.operands[self.h.pos("A")]
        first = HELPERS[self.h.state_from]
        for partner, (name, state) in reversed(list(states.items())):
            if name == first.name and partner.operands[first.pos("A")] == array:
                return state if forward_mode else (partner.parent_block(), state)
        raise ZymaseError(
            f"the call to Numba's helper '{self.h.name}' ({NUMPY_NAMES[self.h.name]}) is not preceded by the "
            f"'{first.name}' call on the same array, which zymase's rule differentiates it with",
            construct=f"{NUMPY_NAMES[self.h.name]} (call @{self.h.name})",
            function=g.fname,
            location=location_of(op),
            hint="this Numba version lowers np.linalg.qr differently; use numba>=0.68,<0.69",
        )

    def _save(self, g, op: Operation, param: str, values: list[SSAValue]) -> SSAValue:
        args = [self._which(g, param), *values]
        return g.E.v(llvm.CallOp(self._declare(g, op, "save", args, PTR), *args, return_type=PTR))

    # ---- reverse sweep -----------------------------------------------------------------
    def reverse_memory(self, g, op):
        if not self._outputs_shadowed(g, op):
            return
        values, status, saved, handed = g._numba_linalg_forward[op]
        home = op.parent_block()
        args = [g.fetch_computed_in(block, state) for block, state in handed]
        for (name, kind), w in zip(self.h.params[1:], values):
            if name in saved:
                args.append(g.fetch_computed_in(home, saved[name]))
            elif kind == _S:
                args.append(g.fetch_computed_in(home, w))
            else:
                args.append(g.primal(op.operands[self.h.pos(name)]))
        args += [g.fetch_computed_in(home, s) for s in status]
        args += self._shadows(g, op, g.fetch_shadow)
        g.E.insert(llvm.CallOp(self._declare(g, op, "rev", args, llvm.LLVMVoidType()), *args))
        if saved:
            g._declare("free", [PTR], llvm.LLVMVoidType())
            for name in saved:
                g.E.insert(llvm.CallOp("free", args[len(handed) + self.h.pos(name) - 1]))


def register_scipy_symbols() -> None:
    """Publish the addresses of the SciPy BLAS/LAPACK routines the runtime calls under
    ``__zymase_scipy_<p><routine>`` (once per process), for the JIT to resolve; they are
    the routines Numba's own helpers call."""
    global _registered
    if _registered:
        return
    import llvmlite.binding as ll
    from numba.core.extending import get_cython_function_address
    from numba.np import linalg

    if linalg._LAPACK_ILP64:
        raise ZymaseError(
            "this Numba calls a BLAS/LAPACK with 64-bit integers (ILP64), which zymase's derivatives "
            "of NumPy's linear algebra do not support",
            hint="install the usual (LP64) builds of SciPy and Numba")
    for module, routines in SCIPY_ROUTINES.items():
        for routine in routines:
            for p in "ds":
                addr = get_cython_function_address(f"scipy.linalg.{module}", p + routine)
                ll.add_symbol(f"{SCIPY_PREFIX}{p}{routine}", addr)
    _registered = True


_registered = False

for _name, _helper in HELPERS.items():
    REGISTRY.register_call_rule(_name, NumbaHelperRule(_helper))
