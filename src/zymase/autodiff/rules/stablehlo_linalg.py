"""Matrix-level rules for the LAPACK custom_calls JAX emits on CPU (``lapack_?potrf_ffi``
for ``jnp.linalg.cholesky``, ``lapack_?trsm_ffi`` for ``jax.scipy.linalg.solve_triangular``
and ``lax.linalg.triangular_solve``, ``lapack_?syevd_ffi`` for ``jnp.linalg.eigh``),
written as StableHLO: triangular solves are the same LAPACK custom_calls, products are
``dot_general``, triangles are ``select`` on iota masks.
LAPACK is never differentiated through; the formulas are those of the matrix functions
(Murray 2016 for the Cholesky factor), and they give JAX's own derivatives.

What the kernels compute, as functions of their operands (the derivative is of exactly
that):

* ``potrf`` (``uplo = L``) reads the lower triangle of A and writes ``L = chol(S)`` over
  it, ``S`` the symmetric matrix with that lower triangle; the strict upper triangle of
  the result is A's, untouched (JAX masks it to zero afterwards). Tangent
  ``dL = L phi(L^-1 S(dA) L^-T)`` (``phi``: the lower triangle, diagonal halved), adjoint
  ``G = L^-T phi(L^T Lbar) L^-1`` folded onto the lower triangle (``G + G^T`` below the
  diagonal, ``G`` on it); the second result (LAPACK's ``info``) is an integer.
* ``trsm`` solves ``op(A) X = B`` (``side = L``) or ``X op(A) = B`` (``side = R``),
  ``op`` the identity or the transpose (``trans_x`` N, or T/C: the same for real
  matrices), reading only A's ``uplo`` triangle (without the diagonal for
  ``diag = U``). Tangent: the same solve of ``dB - op(dA) X`` (or ``dB - X op(dA)``);
  adjoint ``Bbar`` the solve with ``op(A)^T``, ``Abar = -Bbar X^T`` (left) or
  ``-X^T Bbar`` (right), transposed for ``op = T``, kept on the triangle read.
* ``syevd`` (``mode = V``) reads the ``uplo`` triangle of A and writes its eigenvectors
  V over it, with the eigenvalues w (ascending): see :class:`_Syevd`.

Leading batch dimensions (``num_batch_dims``, from vmap or batched inputs) are batch
dimensions of every product and solve. Complex matrices have no rule (refused by the
engine: their tensors carry no derivative here).
"""

from __future__ import annotations

from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.registry import Rule
from zymase.errors import ZymaseError
from zymase.ir import IntegerAttr, TensorType, f32, i1, i32, i64, location_of
from zymase.ir import stablehlo as hlo


# ----- matrices of StableHLO: the last two dims are (row, column) ----------------------
def masks(E, like):
    """Row and column index tensors (i32) of ``like``'s shape, for triangle masks."""
    t = TensorType(i32, T.shape(like))
    rank = len(T.shape(like))
    row, col = (E.v(hlo.IotaOp.create(properties={"iota_dimension": IntegerAttr(d, i64)}, result_types=[t]))
                for d in (rank - 2, rank - 1))
    return row, col


def compare(E, direction: str, a, b):
    return E.v(hlo.CompareOp.create(operands=[a, b], result_types=[TensorType(i1, T.shape(a))],
                                    properties={"comparison_direction": hlo.comparison(direction),
                                                "compare_type": hlo.comparison_type("SIGNED")}))


def triangle(E, x, uplo: str, strict: bool):
    """``x`` with zeros outside its lower (``L``) or upper (``U``) triangle, the diagonal
    excluded when ``strict``."""
    row, col = masks(E, x)
    direction = {("L", False): "GE", ("L", True): "GT", ("U", False): "LE", ("U", True): "LT"}[uplo, strict]
    return E.select(compare(E, direction, row, col), x, E.zero(x.type))


def transposed(E, x):
    """The transpose of each matrix of ``x``."""
    rank = len(T.shape(x))
    return T.transpose(E, x, [*range(rank - 2), rank - 1, rank - 2])


def matmul(E, a, b, ta: bool = False, tb: bool = False):
    """``op(a) op(b)`` per batch element (``ta``/``tb``: transposed)."""
    rank = len(T.shape(a))
    batch = list(range(rank - 2))
    return T.dot_general(E, a, b, batch, batch, [rank - 2 if ta else rank - 1], [rank - 1 if tb else rank - 2])


def _phi(E, x):
    """The lower triangle of ``x`` with its diagonal halved."""
    row, col = masks(E, x)
    half = E.mul(x, E.const_like(0.5, x))
    return E.select(compare(E, "GT", row, col), x,
                    E.select(compare(E, "EQ", row, col), half, E.zero(x.type)))


def trsm(E, target: str, a, b, batch: int, side: str, uplo: str, trans: str, diag: str):
    """A triangular solve by jaxlib's LAPACK kernel ``target`` (its result: ``b``'s type)."""
    op = hlo.lapack_call(target, [a, b], [b.type], {"side": side, "uplo": uplo, "trans_x": trans, "diag": diag},
                         batch)
    return E.insert(op).results[0]


def trsm_target(element_type) -> str:
    return "lapack_strsm_ffi" if element_type == f32 else "lapack_dtrsm_ffi"


def options(op, *names: str) -> dict[str, str]:
    """The LAPACK call's character options, refused when one of ``names`` is missing."""
    found = hlo.ffi_options(op)
    missing = [n for n in names if n not in found]
    if missing:
        raise ZymaseError(f"the LAPACK call has no '{missing[0]}' option in mhlo.backend_config",
                          construct=f"stablehlo.custom_call @{op.call_target_name.data}", location=location_of(op),
                          hint="pass the StableHLO jax.jit(f).lower(...) produces (JAX 0.10.2)")
    return found


# ----- Cholesky ------------------------------------------------------------------------
class _Potrf(Rule):
    """``lapack_?potrf_ffi``, lower triangle (what ``jnp.linalg.cholesky`` emits)."""

    def propagates(self, op, index):
        return index == 0 and hlo.is_float_tensor(op.operands[0].type)

    def _factor(self, ctx, op):
        if options(op, "uplo")["uplo"] != "L":
            raise ZymaseError("no derivative rule for an upper Cholesky factorization (JAX emits the lower one)",
                              construct=f"stablehlo.custom_call @{op.call_target_name.data}",
                              location=location_of(op), hint="factor with jnp.linalg.cholesky")
        factor = ctx.primal(op.results[0])  # its strict upper triangle is A's
        return factor, triangle(ctx.E, factor, "L", False), hlo.ffi_batch_dims(op)

    def forward(self, ctx, op, tangents):
        da = tangents[0]
        if da is None:
            return [None] * len(op.results)
        E = ctx.E
        factor, lower, batch = self._factor(ctx, op)
        target = trsm_target(da.type.element_type)
        row, col = masks(E, da)
        on_or_below = compare(E, "GE", row, col)
        symmetric = _symmetric_from(E, da, "L")
        y = trsm(E, target, factor, symmetric, batch, "L", "L", "N", "N")  # L^-1 S
        z = trsm(E, target, factor, y, batch, "R", "L", "T", "N")  # L^-1 S L^-T
        dl = matmul(E, lower, _phi(E, z))
        return [E.select(on_or_below, dl, da)] + [None] * (len(op.results) - 1)

    def reverse(self, ctx, op, dys):
        dl = dys[0]
        if dl is None or not ctx.wants(op.operands[0]):
            return [None]
        E = ctx.E
        factor, lower, batch = self._factor(ctx, op)
        target = trsm_target(dl.type.element_type)
        p = _phi(E, matmul(E, lower, triangle(E, dl, "L", False), ta=True))  # phi(L^T Lbar)
        q = trsm(E, target, factor, p, batch, "L", "L", "T", "N")  # L^-T phi(...)
        g = trsm(E, target, factor, q, batch, "R", "L", "N", "N")  # ... L^-1
        row, col = masks(E, g)
        return [E.select(compare(E, "GT", row, col), E.add(g, transposed(E, g)),
                         E.select(compare(E, "EQ", row, col), g, dl))]


# ----- triangular solves ---------------------------------------------------------------
class _Trsm(Rule):
    """``lapack_?trsm_ffi``: ``op(A) X = B`` or ``X op(A) = B`` for a triangular A."""

    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def _config(self, op):
        o = options(op, "side", "uplo", "trans_x", "diag")
        trans = "N" if o["trans_x"] == "N" else "T"  # C is T for real matrices
        return o["side"], o["uplo"], trans, o["diag"], hlo.ffi_batch_dims(op)

    def forward(self, ctx, op, tangents):
        da, db = tangents
        if da is None and db is None:
            return [None]
        E = ctx.E
        a, x = ctx.primal(op.operands[0]), ctx.primal(op.results[0])
        side, uplo, trans, diag, batch = self._config(op)
        rhs = db
        if da is not None:
            dop = triangle(E, da, uplo, diag == "U")
            term = matmul(E, dop, x, ta=trans == "T") if side == "L" else matmul(E, x, dop, tb=trans == "T")
            rhs = E.neg(term) if rhs is None else E.sub(rhs, term)
        return [trsm(E, op.call_target_name.data, a, rhs, batch, side, uplo, trans, diag)]

    def reverse(self, ctx, op, dys):
        dx = dys[0]
        out = [None, None]
        if dx is None:
            return out
        E = ctx.E
        a_value, b_value = op.operands
        a, x = ctx.primal(a_value), ctx.primal(op.results[0])
        side, uplo, trans, diag, batch = self._config(op)
        db = trsm(E, op.call_target_name.data, a, dx, batch, side, uplo, "N" if trans == "T" else "T", diag)
        if ctx.wants(b_value):
            out[1] = db
        if ctx.wants(a_value):
            if side == "L":  # -Bbar X^T, or its transpose for op = T
                da = matmul(E, x, db, tb=True) if trans == "T" else matmul(E, db, x, tb=True)
            else:  # -X^T Bbar, or its transpose
                da = matmul(E, db, x, ta=True) if trans == "T" else matmul(E, x, db, ta=True)
            out[0] = triangle(E, E.neg(da), uplo, diag == "U")
        return out


# ----- symmetric eigendecomposition ----------------------------------------------------
def _symmetric_from(E, x, uplo: str):
    """The symmetric matrix whose ``uplo`` triangle is ``x``'s (what LAPACK reads)."""
    row, col = masks(E, x)
    return E.select(compare(E, "GE" if uplo == "L" else "LE", row, col), x, transposed(E, x))


def _onto_triangle(E, g, uplo: str):
    """The adjoint of :func:`_symmetric_from`: ``g + g^T`` off the diagonal, ``g`` on it,
    on the ``uplo`` triangle (the other one is not read)."""
    row, col = masks(E, g)
    return E.select(compare(E, "GT" if uplo == "L" else "LT", row, col), E.add(g, transposed(E, g)),
                    E.select(compare(E, "EQ", row, col), g, E.zero(g.type)))


def spread(E, w, like, dim: int):
    """The vectors ``w`` (..., n) broadcast over matrices of ``like``'s shape along the
    matrix dim ``dim`` (0: w[i] in row i, 1: w[j] in column j)."""
    rank = len(T.shape(like))
    return T.broadcast(E, w, T.shape(like), [*range(rank - 2), rank - 2 + dim])


def _gaps(E, w, like):
    """``F_ij = 1 / (w_j - w_i)`` off the diagonal, 0 on it: repeated eigenvalues give
    inf there (the eigenvectors they mix are not functions of A; JAX gives inf/NaN too)."""
    row, col = masks(E, like)
    gaps = E.sub(spread(E, w, like, 1), spread(E, w, like, 0))
    return E.select(compare(E, "EQ", row, col), E.zero(like.type), E.div(E.const_like(1.0, gaps), gaps))


class _Syevd(Rule):
    """``lapack_?syevd_ffi`` (``jnp.linalg.eigh``, ``eigvalsh``): ``A = V diag(w) V^T``
    from the ``uplo`` triangle of A, eigenvalues ascending. Tangent ``M = V^T dS V``,
    ``dw = diag(M)``, ``dV = V (F o M)``; adjoint ``V (diag(wbar) + F o V^T Vbar) V^T``
    folded onto the triangle read. The third result (``info``) is an integer."""

    def propagates(self, op, index):
        return index == 0 and hlo.is_float_tensor(op.operands[0].type)

    def _decomposition(self, ctx, op):
        found = options(op, "mode", "uplo")
        if found["mode"] != "V":
            raise ZymaseError("no derivative rule for eigenvalues computed without eigenvectors (mode 'N')",
                              construct=f"stablehlo.custom_call @{op.call_target_name.data}",
                              location=location_of(op), hint="use jnp.linalg.eigh or eigvalsh (they compute both)")
        return ctx.primal(op.results[0]), ctx.primal(op.results[1]), found["uplo"]

    def forward(self, ctx, op, tangents):
        da = tangents[0]
        if da is None:
            return [None] * len(op.results)
        E = ctx.E
        v, w, uplo = self._decomposition(ctx, op)
        m = matmul(E, matmul(E, v, _symmetric_from(E, da, uplo), ta=True), v)  # V^T dS V
        row, col = masks(E, m)
        diagonal = E.select(compare(E, "EQ", row, col), m, E.zero(m.type))
        dw = T.reduce(E, diagonal, [len(T.shape(m)) - 1])
        dv = matmul(E, v, E.mul(_gaps(E, w, m), m))
        return [dv, dw] + [None] * (len(op.results) - 2)

    def reverse(self, ctx, op, dys):
        dv, dw = dys[0], dys[1]
        if (dv is None and dw is None) or not ctx.wants(op.operands[0]):
            return [None]
        E = ctx.E
        v, w, uplo = self._decomposition(ctx, op)
        inner = E.mul(_gaps(E, w, v), matmul(E, v, dv, ta=True)) if dv is not None else E.zero(v.type)
        if dw is not None:
            row, col = masks(E, v)
            inner = E.select(compare(E, "EQ", row, col), spread(E, dw, v, 0), inner)
        g = matmul(E, matmul(E, v, inner), v, tb=True)
        return [_onto_triangle(E, g, uplo)]


POTRF, TRSM, SYEVD = _Potrf(), _Trsm(), _Syevd()
LINALG_RULES: dict[str, Rule] = {
    "lapack_spotrf_ffi": POTRF, "lapack_dpotrf_ffi": POTRF,
    "lapack_strsm_ffi": TRSM, "lapack_dtrsm_ffi": TRSM,
    "lapack_ssyevd_ffi": SYEVD, "lapack_dsyevd_ffi": SYEVD,
}
