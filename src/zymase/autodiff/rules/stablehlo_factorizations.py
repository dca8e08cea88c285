"""Matrix-level rules for the LAPACK factorizations JAX emits on CPU, written as
StableHLO with the helpers of ``stablehlo_linalg.py``: LU (``lapack_?getrf_ffi``, under
``jnp.linalg.solve``, ``inv``, ``det``, ``slogdet`` and ``jax.scipy.linalg.lu``,
``lu_factor``, ``lu_solve``) and the SVD (``lapack_?gesdd_ffi``, ``lapack_?gesvd_ffi``:
``jnp.linalg.svd``, ``svdvals``, ``norm(ord=2)``, ``pinv``) and QR (``lapack_?geqrf_ffi``
with ``lapack_?orgqr_ffi``: ``jnp.linalg.qr``, differentiated as a pair, see
:class:`_Geqrf`).

* ``getrf`` writes ``P A = L U`` packed in one m x n matrix (L unit lower, U upper) and
  the pivots (LAPACK's 1-based row swaps, applied in order) and ``info``, integers
  without derivative. With ``X = L^-1 P dA U^-1`` (L extended to m x m and U to n x n by
  an identity block when A is not square): ``dLU = L tril(X, -1) + triu(X) U``; adjoint
  ``Abar = P^T L^-T (tril(L^T LUbar, -1) + triu(LUbar U^T)) U^-T``. The permutation is
  rebuilt from the pivots by a loop of row swaps (as JAX does) and applied by a row
  gather. The derivative of everything JAX computes from the factor (the
  solves, the determinant's logarithm, its sign from the pivots) is that of the ops
  JAX emits around the call.
* ``gesdd``/``gesvd`` (``mode`` S, or A on a square matrix) give ``A = U diag(s) V^T``
  with k = min(m, n) singular values (descending). With ``P = U^T dA V``:
  ``ds = diag(P)``, ``dU = U (F o (P S + S P^T)) + (I - U U^T) dA V S^-1`` (m > k),
  ``dV = V (F o (S P + P^T S)) + (I - V V^T) dA^T U S^-1`` (n > k),
  ``F_ij = 1 / (s_j^2 - s_i^2)`` off the diagonal: repeated singular values (and zero
  ones where m != n) give inf/NaN, as in JAX. The adjoint is the transpose of that
  map. Mode N (singular values only) has no U and V: the rule computes them with a
  mode-S call of the same kernel. Mode A on a non-square matrix is refused: the
  columns that complete U (or V) are not functions of A (JAX refuses it too).

Leading batch dimensions (``num_batch_dims``) are batch dimensions of every product,
solve and loop. Complex matrices carry no derivative here (refused by the engine).
"""

from __future__ import annotations

from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.registry import Rule
from zymase.autodiff.rules import stablehlo_regions as R
from zymase.autodiff.rules.stablehlo_linalg import (compare, masks, matmul, options, spread, transposed,
                                                    triangle, trsm, trsm_target)
from zymase.errors import ZymaseError
from zymase.ir import IntegerAttr, TensorType, i32, i64, location_of
from zymase.ir import stablehlo as hlo


def _refuse(op, message: str, hint: str):
    raise ZymaseError(message, construct=f"stablehlo.custom_call @{op.call_target_name.data}",
                      location=location_of(op), hint=hint)


def _identity(E, like):
    """Identity matrices of ``like``'s (square) matrix shape and type."""
    row, col = masks(E, like)
    return E.select(compare(E, "EQ", row, col), E.const_like(1.0, like), E.zero(like.type))


def _diagonal(E, x):
    """The diagonals of square matrices ``x``, as vectors."""
    row, col = masks(E, x)
    return T.reduce(E, E.select(compare(E, "EQ", row, col), x, E.zero(x.type)), [len(T.shape(x)) - 1])


def _diagonal_matrix(E, v, like):
    """Square matrices of ``like``'s shape with the vectors ``v`` on their diagonals."""
    row, col = masks(E, like)
    return E.select(compare(E, "EQ", row, col), spread(E, v, like, 0), E.zero(like.type))


# ----- LU ------------------------------------------------------------------------------
def _row_iota(E, shape):
    """i32 indices along the last dim of ``shape``."""
    return E.v(hlo.IotaOp.create(properties={"iota_dimension": IntegerAttr(len(shape) - 1, i64)},
                                 result_types=[TensorType(i32, list(shape))]))


def _permutation(E, pivots, m: int):
    """``perm`` with ``(P A)[i] = A[perm[i]]``: LAPACK's 1-based row swaps (row j with
    row ``pivots[j] - 1``, for j in order) applied to ``0..m-1``, by a ``stablehlo.while``
    (each swap reads the previous ones' result), batch by batch at once."""
    *batch, k = T.shape(pivots)
    shape = [*batch, m]
    last = len(batch)
    zero64 = E.v(T.splat(0, R.I64))

    def column(B, v, j):
        """``v[..., j]`` as a (batch..., 1) tensor."""
        zeros = [B.v(T.splat(0, R.I64)) for _ in batch]
        return T.emit(B, hlo.DynamicSliceOp, [v, *zeros, j], TensorType(i32, [*batch, 1]),
                      slice_sizes=hlo.array([*batch, 1]))

    def body(B, args):
        j, perm, piv = args
        index = _row_iota(B, shape)
        one = B.v(T.splat(1, TensorType(i32, [*batch, 1])))
        row = T.broadcast(B, T.emit(B, hlo.SubtractOp, [column(B, piv, j), one], one.type), shape,
                          list(range(last + 1)))  # the row swapped with row j
        here = T.broadcast(B, column(B, perm, j), shape, list(range(last + 1)))
        at_row = B.icmp_eq(index, row)
        there = T.reduce(B, B.select(at_row, perm, B.v(T.splat(0, perm.type))), [last], init=0)
        there = T.broadcast(B, there, shape, list(range(last)))
        j32 = T.broadcast(B, T.emit(B, hlo.ConvertOp, [j], TensorType(i32, [])), shape, [])
        swapped = B.select(B.icmp_eq(index, j32), there, B.select(at_row, here, perm))
        return [R.step(B, j, 1), swapped, piv]

    def cond(B, args):
        return [R.compare(B, args[0], B.v(T.splat(k, R.I64)), "LT")]

    return R.while_(E, [zero64, _row_iota(E, shape), pivots], cond, body)[1]


def _rows(E, x, perm):
    """``x[..., perm[i], :]`` for each row i (a gather, batch by batch)."""
    *batch, m, n = T.shape(x)
    nb = len(batch)
    indices = T.reshape(E, perm, [*batch, m, 1])
    fields = {"offset_dims": [nb + 1], "collapsed_slice_dims": [nb], "operand_batching_dims": list(range(nb)),
              "start_indices_batching_dims": list(range(nb)), "start_index_map": [nb], "index_vector_dim": nb + 1}
    return T.emit(E, hlo.GatherOp, [x, indices], x.type, dimension_numbers=hlo.structured(hlo.GatherAttr, fields),
                  slice_sizes=hlo.array([1] * (nb + 1) + [n]))


def _inverse(E, perm):
    """The inverse permutation: ``inverse[perm[i]] = i`` (an m x m comparison: small
    next to the factorization's m^3)."""
    *batch, m = T.shape(perm)
    square = [*batch, m, m]
    at = T.broadcast(E, perm, square, list(range(len(batch) + 1)))  # [i, c] = perm[i]
    position = E.v(hlo.IotaOp.create(properties={"iota_dimension": IntegerAttr(len(batch) + 1, i64)},
                                     result_types=[TensorType(i32, square)]))  # [i, c] = c
    row = E.v(hlo.IotaOp.create(properties={"iota_dimension": IntegerAttr(len(batch), i64)},
                                result_types=[TensorType(i32, square)]))  # [i, c] = i
    hits = E.select(compare(E, "EQ", at, position), row, E.v(T.splat(0, row.type)))
    return T.reduce(E, hits, [len(batch)], init=0)


class _Getrf(Rule):
    """``lapack_?getrf_ffi``: ``P A = L U`` packed, with the pivots and ``info``."""

    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[0].type)

    def _factors(self, ctx, op):
        """The row permutation; L and U as trsm reads them (unit lower m x m, upper
        n x n); L and U as explicit matrices; the batch dim count."""
        E = ctx.E
        lu = ctx.primal(op.results[0])
        *batch, m, n = T.shape(lu)
        nb = len(batch)
        perm = _permutation(E, ctx.primal(op.results[1]), m)
        if m > n:  # L's columns completed by those of the identity (trsm supplies the unit diagonal)
            l_solve = T.pad(E, lu, [0] * (nb + 2), [0] * (nb + 1) + [m - n], [0] * (nb + 2))
        else:
            l_solve = T.slice_(E, lu, [0] * (nb + 2), [*batch, m, m])
        if n > m:  # U's rows completed by those of the identity
            padded = T.pad(E, lu, [0] * (nb + 2), [0] * nb + [n - m, 0], [0] * (nb + 2))
            row, col = masks(E, padded)
            below = compare(E, "GE", row, E.v(T.splat(m, row.type)))
            u_solve = E.select(below, _identity(E, padded), padded)
        else:
            u_solve = T.slice_(E, lu, [0] * (nb + 2), [*batch, n, n])
        lower = E.add(triangle(E, l_solve, "L", True), _identity(E, l_solve))
        upper = triangle(E, u_solve, "U", False)
        return perm, l_solve, u_solve, lower, upper, hlo.ffi_batch_dims(op)

    def forward(self, ctx, op, tangents):
        da = tangents[0]
        if da is None:
            return [None] * len(op.results)
        E = ctx.E
        perm, l_solve, u_solve, lower, upper, batch = self._factors(ctx, op)
        target = trsm_target(da.type.element_type)
        y = trsm(E, target, l_solve, _rows(E, da, perm), batch, "L", "L", "N", "U")  # L^-1 P dA
        x = trsm(E, target, u_solve, y, batch, "R", "U", "N", "N")  # ... U^-1
        dlu = E.add(matmul(E, lower, triangle(E, x, "L", True)), matmul(E, triangle(E, x, "U", False), upper))
        return [dlu] + [None] * (len(op.results) - 1)

    def reverse(self, ctx, op, dys):
        g = dys[0]
        if g is None or not ctx.wants(op.operands[0]):
            return [None]
        E = ctx.E
        perm, l_solve, u_solve, lower, upper, batch = self._factors(ctx, op)
        target = trsm_target(g.type.element_type)
        xbar = E.add(triangle(E, matmul(E, lower, g, ta=True), "L", True),
                     triangle(E, matmul(E, g, upper, tb=True), "U", False))
        w = trsm(E, target, u_solve, xbar, batch, "R", "U", "T", "N")  # Xbar U^-T
        v = trsm(E, target, l_solve, w, batch, "L", "L", "T", "U")  # L^-T ...
        return [_rows(E, v, _inverse(E, perm))]  # P^T ...


# ----- SVD -----------------------------------------------------------------------------
def _inverse_square_gaps(E, s, like):
    """``F_ij = 1 / (s_j^2 - s_i^2)`` off the diagonal, 0 on it."""
    row, col = masks(E, like)
    sj, si = spread(E, s, like, 1), spread(E, s, like, 0)
    gaps = E.mul(E.add(sj, si), E.sub(sj, si))
    return E.select(compare(E, "EQ", row, col), E.zero(like.type), E.div(E.const_like(1.0, gaps), gaps))


class _Gesdd(Rule):
    """``lapack_?gesdd_ffi`` / ``lapack_?gesvd_ffi``: results (A overwritten, s, U, V^T,
    info)."""

    def propagates(self, op, index):
        return index == 0 and hlo.is_float_tensor(op.operands[0].type)

    def _check(self, op) -> str:
        """The mode, refused where the rule does not apply."""
        mode = options(op, "mode")["mode"]
        *batch, m, n = T.shape(op.operands[0])
        if op.results[0].uses:  # LAPACK's workspace; JAX never reads it
            _refuse(op, "the matrix a LAPACK SVD overwrites is read after the call",
                    "use the singular values and vectors jnp.linalg.svd returns")
        if mode == "A" and m != n:
            _refuse(op, f"no derivative rule for the full SVD of a non-square ({m}x{n}) matrix: the columns that "
                        "complete U or V are not functions of A",
                    "use jnp.linalg.svd(a, full_matrices=False)")
        if mode not in ("S", "A", "N"):
            _refuse(op, f"no derivative rule for the LAPACK SVD mode '{mode}'", "use jnp.linalg.svd")
        return mode

    def _decomposition(self, ctx, op, replace_primal: bool = False):
        """``(s, U, V, values_only)``: the singular values and the reduced factors. Mode N
        computes no vectors: a mode-S call of the same kernel does, and with
        ``replace_primal`` (reverse mode, the user's own op) it replaces the primal call,
        as JAX's linearization does (the unused call is then dead code XLA drops); in
        forward mode the sweep reads tangents by the primal results, so it is added."""
        mode = self._check(op)
        *batch, m, n = T.shape(op.operands[0])
        E = ctx.E
        if mode != "N":
            s, u, vt = (ctx.primal(op.results[i]) for i in (1, 2, 3))
        else:  # values only: the vectors the derivative needs, from the same kernel
            a, k = ctx.primal(op.operands[0]), min(m, n)
            element = a.type.element_type
            types = [a.type, op.results[1].type, TensorType(element, [*batch, m, k]),
                     TensorType(element, [*batch, k, n]), op.results[4].type]
            call = hlo.lapack_call(op.call_target_name.data, [a], types, {"mode": "S"}, hlo.ffi_batch_dims(op),
                                   vector_results=(1,))
            if replace_primal and ctx.primal_ops is not None and op in ctx.primal_ops:
                op.parent_block().insert_op_before(call, op)
                ctx.primal_ops.add(call)
                for i in (1, 4):  # s and info (U and V^T of mode N are placeholders JAX never reads)
                    op.results[i].replace_all_uses_with(call.results[i])
            else:
                E.insert(call)
            s, u, vt = call.results[1], call.results[2], call.results[3]
        return s, u, transposed(E, vt), mode == "N"

    def forward(self, ctx, op, tangents):
        self._check(op)
        da = tangents[0]
        if da is None:
            return [None] * len(op.results)
        E = ctx.E
        s, u, v, values_only = self._decomposition(ctx, op)
        *_, m, n = T.shape(da)
        p = matmul(E, matmul(E, u, da, ta=True), v)  # U^T dA V
        ds = _diagonal(E, p)
        if values_only:
            return [None, ds, None, None, None]
        f = _inverse_square_gaps(E, s, p)
        ps = E.mul(p, spread(E, s, p, 1))  # P S
        sp = E.mul(spread(E, s, p, 0), p)  # S P
        du = matmul(E, u, E.mul(f, E.add(ps, transposed(E, ps))))
        dv = matmul(E, v, E.mul(f, E.add(sp, transposed(E, sp))))
        k = min(m, n)
        if m > k:  # the part of dA V outside U's span
            rest = E.sub(matmul(E, da, v), matmul(E, u, p))
            du = E.add(du, E.div(rest, spread(E, s, rest, 1)))
        if n > k:
            rest = E.sub(matmul(E, da, u, ta=True), matmul(E, v, p, tb=True))
            dv = E.add(dv, E.div(rest, spread(E, s, rest, 1)))
        return [None, ds, du, transposed(E, dv), None]

    def reverse(self, ctx, op, dys):
        self._check(op)
        sbar, ubar, vtbar = dys[1], dys[2], dys[3]
        if (sbar is None and ubar is None and vtbar is None) or not ctx.wants(op.operands[0]):
            return [None]
        E = ctx.E
        s, u, v, values_only = self._decomposition(ctx, op, replace_primal=True)
        *batch, m, n = T.shape(op.operands[0])
        k = min(m, n)
        square = TensorType(u.type.element_type, [*batch, k, k])
        pbar = _diagonal_matrix(E, sbar, E.zero(square)) if sbar is not None else E.zero(square)
        extra = []
        if ubar is not None and not values_only:
            j = matmul(E, u, ubar, ta=True)  # U^T Ubar
            f = _inverse_square_gaps(E, s, j)
            pbar = E.add(pbar, E.mul(E.mul(f, E.sub(j, transposed(E, j))), spread(E, s, j, 1)))
            if m > k:  # (I - U U^T) Ubar S^-1 V^T
                rest = E.sub(ubar, matmul(E, u, j))
                extra.append(matmul(E, E.div(rest, spread(E, s, rest, 1)), v, tb=True))
        if vtbar is not None and not values_only:
            vbar = transposed(E, vtbar)
            kk = matmul(E, v, vbar, ta=True)  # V^T Vbar
            f = _inverse_square_gaps(E, s, kk)
            pbar = E.add(pbar, E.mul(spread(E, s, kk, 0), E.mul(f, E.sub(kk, transposed(E, kk)))))
            if n > k:  # U S^-1 ((I - V V^T) Vbar)^T
                rest = E.sub(vbar, matmul(E, v, kk))
                extra.append(matmul(E, u, E.div(rest, spread(E, s, rest, 1)), tb=True))
        abar = matmul(E, matmul(E, u, pbar), v, tb=True)
        for term in extra:
            abar = E.add(abar, term)
        return [abar]


# ----- QR ------------------------------------------------------------------------------
def _orgqr_of(taus):
    """The ``orgqr`` calls that build Q from these reflector scales."""
    return [use.operation for use in taus.uses if _is_orgqr(use.operation) and use.index == 1]


def _is_orgqr(op) -> bool:
    return isinstance(op, hlo.CustomCallOp) and op.call_target_name.data in ("lapack_sorgqr_ffi", "lapack_dorgqr_ffi")


def _refuse_wide(op, m: int, n: int) -> None:
    if m < n:
        _refuse(op, f"no derivative rule for the QR decomposition of a wide ({m}x{n}) matrix: R's last "
                    "columns do not determine Q's derivative (JAX refuses it too)",
                "factor the transpose, or a square or tall matrix")


class _Geqrf(Rule):
    """``lapack_?geqrf_ffi`` with the ``lapack_?orgqr_ffi`` that builds Q from its
    reflectors (``jnp.linalg.qr``, reduced, m >= n): ``A = Q R``. The packed result holds
    R on and above its diagonal and the reflectors below it, which are not a matrix
    function one would differentiate: the pair is differentiated as one QR. With
    ``Y = dA R^-1``, ``C = Q^T Y``, ``w = tril(C, -1) - tril(C, -1)^T``:
    ``dQ = Q (w - C) + Y`` (given to the orgqr result, see :class:`_Orgqr`) and
    ``dR = (C - w) R`` (the tangent of the packed result's upper triangle). Adjoint
    (the transpose): ``M = Rbar R^T - Q^T Qbar``, ``Abar = (Qbar + Q (M - tril(M - M^T,
    -1))) R^-T``. The reflectors' part of the packed result carries NaN as its tangent
    (and a nonzero adjoint reaching it gives NaN): only the orgqr call reads it in what
    JAX emits; the reflector scales may be read by orgqr alone (``mode='raw'``, which
    returns them, is refused)."""

    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[0].type)

    def _check(self, op):
        *batch, m, n = T.shape(op.operands[0])
        _refuse_wide(op, m, n)
        for use in op.results[1].uses:
            if not (_is_orgqr(use.operation) and use.index == 1):
                _refuse(op, "the Householder reflectors of a QR factorization are read directly (mode='raw'): "
                            "they have no derivative rule", "use jnp.linalg.qr(a) (mode 'reduced')")
            _same_block(use.operation, op)

    def _parts(self, ctx, op):
        *batch, m, n = T.shape(op.operands[0])
        taus = op.results[1]
        E = ctx.E
        packed = ctx.primal(op.results[0])
        users = [q for q in _orgqr_of(taus) if T.shape(q.results[0]) == (*batch, m, n)]
        if users:
            q = ctx.primal(users[0].results[0])
        else:  # R alone (mode='r'): Q from the same reflectors
            target = "lapack_sorgqr_ffi" if op.call_target_name.data.startswith("lapack_s") else "lapack_dorgqr_ffi"
            call = hlo.lapack_call(target, [packed, ctx.primal(taus)], [packed.type], {}, hlo.ffi_batch_dims(op),
                                   vector_operands=(1,))
            q = E.insert(call).results[0]
        r = T.slice_(E, packed, [0] * (len(batch) + 2), [*batch, n, n])  # trsm reads its upper triangle
        return q, r, triangle(E, r, "U", False), hlo.ffi_batch_dims(op), m, n

    def _packed(self, E, dr, like, m, n):
        """``dr`` (n x n, upper) over the packed result's shape, NaN below the diagonal."""
        nb = len(T.shape(like)) - 2
        padded = T.pad(E, dr, [0] * (nb + 2), [0] * nb + [m - n, 0], [0] * (nb + 2))
        row, col = masks(E, padded)
        return E.select(compare(E, "GT", row, col), E.const_like(float("nan"), padded), padded)

    def forward(self, ctx, op, tangents):
        self._check(op)
        da = tangents[0]
        if da is None:
            return [None, None]
        E = ctx.E
        q, r, upper, batch, m, n = self._parts(ctx, op)
        y = trsm(E, trsm_target(da.type.element_type), r, da, batch, "R", "U", "N", "N")  # dA R^-1
        c = matmul(E, q, y, ta=True)
        low = triangle(E, c, "L", True)
        w = E.sub(low, transposed(E, low))
        dq = E.add(matmul(E, q, E.sub(w, c)), y)
        dr = matmul(E, E.sub(c, w), upper)
        _stash(ctx, "qr_tangents")[op.results[1]] = dq
        return [self._packed(E, dr, da, m, n), None]

    def reverse(self, ctx, op, dys):
        self._check(op)
        gbar = dys[0]
        qbar = _stash(ctx, "qr_adjoints").get(op.results[1])
        if (gbar is None and qbar is None) or not ctx.wants(op.operands[0]):
            return [None]
        E = ctx.E
        q, r, upper, batch, m, n = self._parts(ctx, op)
        *dims, _, _ = T.shape(q)
        nb = len(dims)
        square = TensorType(q.type.element_type, [*dims, n, n])
        m_ = E.zero(square)
        if gbar is not None:
            rbar = triangle(E, T.slice_(E, gbar, [0] * (nb + 2), [*dims, n, n]), "U", False)
            m_ = matmul(E, rbar, upper, tb=True)  # Rbar R^T
        if qbar is not None:
            m_ = E.sub(m_, matmul(E, q, qbar, ta=True))
        cbar = E.sub(m_, triangle(E, E.sub(m_, transposed(E, m_)), "L", True))
        ybar = matmul(E, q, cbar)
        if qbar is not None:
            ybar = E.add(qbar, ybar)
        abar = trsm(E, trsm_target(q.type.element_type), r, ybar, batch, "R", "U", "T", "N")  # ... R^-T
        if gbar is not None:  # the reflectors' part must have no adjoint (see the class doc)
            stray = T.reduce(E, E.mul(triangle(E, gbar, "L", True), triangle(E, gbar, "L", True)), [nb, nb + 1])
            zero = E.zero(stray.type)
            poison = E.select(E.fcmp("oeq", stray, zero), zero, E.const_like(float("nan"), stray))
            abar = E.add(abar, T.broadcast(E, poison, T.shape(abar), list(range(nb))))
        return [abar]


def _same_block(orgqr, geqrf) -> None:
    """The pair passes values through the sweep's context: one sweep, one block (JAX
    emits them together; a region op's body is swept on its own)."""
    if orgqr.parent_block() is not geqrf.parent_block():
        _refuse(orgqr, "a QR factorization whose Q is built in another region than its factorization",
                "call jnp.linalg.qr where its result is used")


def _stash(ctx, name: str) -> dict:
    """Values one rule of a sweep leaves for another (the QR pair), per sweep."""
    if not hasattr(ctx, name):
        setattr(ctx, name, {})
    return getattr(ctx, name)


class _Orgqr(Rule):
    """``lapack_?orgqr_ffi`` on the reflectors of a ``geqrf``: Q's tangent is the one
    :class:`_Geqrf` computed (the sweep reaches geqrf first); its adjoint is left for
    geqrf (reached after it in reverse). Reflectors from anywhere else are refused."""

    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def _check(self, op):
        factor = op.operands[1].owner
        if not (isinstance(factor, hlo.CustomCallOp) and factor.call_target_name.data in
                ("lapack_sgeqrf_ffi", "lapack_dgeqrf_ffi")):
            _refuse(op, "no derivative rule for Householder reflectors that do not come from a QR factorization "
                        "(lax.linalg.householder_product)", "use jnp.linalg.qr")
        _same_block(op, factor)
        *batch, m, n = T.shape(factor.operands[0])
        _refuse_wide(op, m, n)
        if T.shape(op.results[0]) != (*batch, m, n):
            _refuse(op, f"no derivative rule for the complete Q of a QR decomposition of a {m}x{n} matrix: its last "
                        "columns are not functions of A (JAX refuses it too)", "use jnp.linalg.qr(a) (mode 'reduced')")
        return factor

    def forward(self, ctx, op, tangents):
        factor = self._check(op)
        dq = _stash(ctx, "qr_tangents").get(factor.results[1])
        if dq is None:
            _refuse(op, "the QR factorization's tangent was not computed before its Q", "use jnp.linalg.qr")
        return [dq]

    def reverse(self, ctx, op, dys):
        self._check(op)
        if dys[0] is not None:
            _stash(ctx, "qr_adjoints")[op.operands[1]] = dys[0]
        # a zero adjoint for the reflectors, so that the sweep goes on to the geqrf
        return [ctx.E.zero(op.operands[0].type), None]


GETRF, GESDD, GEQRF, ORGQR = _Getrf(), _Gesdd(), _Geqrf(), _Orgqr()
FACTORIZATION_RULES: dict[str, Rule] = {
    "lapack_sgetrf_ffi": GETRF, "lapack_dgetrf_ffi": GETRF,
    "lapack_sgesdd_ffi": GESDD, "lapack_dgesdd_ffi": GESDD,
    "lapack_sgesvd_ffi": GESDD, "lapack_dgesvd_ffi": GESDD,
    "lapack_sgeqrf_ffi": GEQRF, "lapack_dgeqrf_ffi": GEQRF,
    "lapack_sorgqr_ffi": ORGQR, "lapack_dorgqr_ffi": ORGQR,
}
