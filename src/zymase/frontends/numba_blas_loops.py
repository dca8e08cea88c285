"""Loop definitions, in LLVM IR text, of the BLAS wrappers Numba's linear algebra calls
(``numba_xxdot``, ``numba_xxgemv``, ``numba_xxgemm``, ``numba_xxnrm2``): the kernel's
module gets them in place of the declarations, so AD differentiates them as loops where
no call-level rule serves (nested, vector-mode and sparsity-analysed kernels)."""

from __future__ import annotations

from zymase.frontends.numba_copy import _declared


def _dot_loop(p: str, t: str) -> str:
    """Blocks of a dot-product loop over element type ``t`` (value names prefixed ``p``),
    storing the sum to ``%out``."""
    return f"""{p}.pre:
  br i1 %pos, label %{p}.loop, label %{p}.done
{p}.loop:
  %{p}i = phi i64 [ 0, %{p}.pre ], [ %{p}i.next, %{p}.loop ]
  %{p}acc = phi {t} [ 0.0, %{p}.pre ], [ %{p}acc.next, %{p}.loop ]
  %{p}xp = getelementptr {t}, ptr %x, i64 %{p}i
  %{p}yp = getelementptr {t}, ptr %y, i64 %{p}i
  %{p}xv = load {t}, ptr %{p}xp
  %{p}yv = load {t}, ptr %{p}yp
  %{p}m = fmul {t} %{p}xv, %{p}yv
  %{p}acc.next = fadd {t} %{p}acc, %{p}m
  %{p}i.next = add nuw nsw i64 %{p}i, 1
  %{p}more = icmp slt i64 %{p}i.next, %n
  br i1 %{p}more, label %{p}.loop, label %{p}.done
{p}.done:
  %{p}res = phi {t} [ 0.0, %{p}.pre ], [ %{p}acc.next, %{p}.loop ]
  store {t} %{p}res, ptr %out
  ret i32 0
"""


def _gemv_loops(p: str, t: str) -> str:
    """Blocks of ``y = alpha op(A) x + beta y`` over element type ``t`` (value names
    prefixed ``p``), Fortran's gemv on a column-major ``m`` x ``n`` matrix ``a`` with
    leading dimension ``lda``: ``trans`` 'n' (110) sums ``a[i + j lda] x[j]`` over j for
    each of the m rows, 't' sums ``a[i + j lda] x[i]`` over i for each of the n columns
    (Numba's ``W @ x`` on a C-order W). With beta = 0, y is not read (BLAS's rule: Numba
    passes an uninitialized result). The sum is ``reassoc``, as BLAS's order is free
    too: LLVM vectorizes it and the derivatives' sums (measured: the Laplacian of a
    tanh layer 1.3-2x faster)."""
    return f"""{p}.pre:
  %{p}alpha = load {t}, ptr %alpha
  %{p}beta = load {t}, ptr %beta
  %{p}keep = fcmp une {t} %{p}beta, 0.0
  %{p}istr = icmp eq i8 %trans, 116
  %{p}rows = select i1 %{p}istr, i64 %n, i64 %m
  %{p}cols = select i1 %{p}istr, i64 %m, i64 %n
  %{p}rstep = select i1 %{p}istr, i64 %lda, i64 1
  %{p}cstep = select i1 %{p}istr, i64 1, i64 %lda
  %{p}anyrow = icmp sgt i64 %{p}rows, 0
  br i1 %{p}anyrow, label %{p}.row, label %{p}.done
{p}.row:
  %{p}r = phi i64 [ 0, %{p}.pre ], [ %{p}r.next, %{p}.put ]
  %{p}rbase = mul i64 %{p}r, %{p}rstep
  %{p}anycol = icmp sgt i64 %{p}cols, 0
  br i1 %{p}anycol, label %{p}.col, label %{p}.store
{p}.col:
  %{p}c = phi i64 [ 0, %{p}.row ], [ %{p}c.next, %{p}.col ]
  %{p}acc = phi {t} [ 0.0, %{p}.row ], [ %{p}acc.next, %{p}.col ]
  %{p}coff = mul i64 %{p}c, %{p}cstep
  %{p}aidx = add i64 %{p}rbase, %{p}coff
  %{p}ap = getelementptr {t}, ptr %a, i64 %{p}aidx
  %{p}xp = getelementptr {t}, ptr %x, i64 %{p}c
  %{p}av = load {t}, ptr %{p}ap
  %{p}xv = load {t}, ptr %{p}xp
  %{p}m = fmul {t} %{p}av, %{p}xv
  %{p}acc.next = fadd reassoc {t} %{p}acc, %{p}m
  %{p}c.next = add nuw nsw i64 %{p}c, 1
  %{p}morec = icmp slt i64 %{p}c.next, %{p}cols
  br i1 %{p}morec, label %{p}.col, label %{p}.store
{p}.store:
  %{p}sum = phi {t} [ 0.0, %{p}.row ], [ %{p}acc.next, %{p}.col ]
  %{p}yp = getelementptr {t}, ptr %y, i64 %{p}r
  %{p}scaled = fmul {t} %{p}alpha, %{p}sum
  br i1 %{p}keep, label %{p}.old, label %{p}.put
{p}.old:
  %{p}yold = load {t}, ptr %{p}yp
  %{p}by = fmul {t} %{p}beta, %{p}yold
  %{p}with = fadd {t} %{p}scaled, %{p}by
  br label %{p}.put
{p}.put:
  %{p}yv = phi {t} [ %{p}scaled, %{p}.store ], [ %{p}with, %{p}.old ]
  store {t} %{p}yv, ptr %{p}yp
  %{p}r.next = add nuw nsw i64 %{p}r, 1
  %{p}morer = icmp slt i64 %{p}r.next, %{p}rows
  br i1 %{p}morer, label %{p}.row, label %{p}.done
{p}.done:
  ret i32 0
"""


def _gemm_loops(p: str, t: str) -> str:
    """Blocks of ``C = alpha op(A) op(B) + beta C`` over element type ``t`` (value names
    prefixed ``p``), Fortran's gemm on column-major operands (Numba's ``A @ B`` and 2-D
    ``np.dot``): for each column j < n and row i < m of C, the sum over l < k of
    ``op(A)[i, l] op(B)[l, j]``, where ``op(A)[i, l]`` is ``a[i + l lda]``, or
    ``a[l + i lda]`` when ``transa`` is 't' (116) or 'T' (84); likewise B. With beta = 0, C
    is not read (BLAS's rule). The sum is ``reassoc``, as for gemv."""
    return f"""{p}.pre:
  %{p}alpha = load {t}, ptr %alpha
  %{p}beta = load {t}, ptr %beta
  %{p}keep = fcmp une {t} %{p}beta, 0.0
  %{p}ta.t = icmp eq i8 %transa, 116
  %{p}ta.T = icmp eq i8 %transa, 84
  %{p}ta = or i1 %{p}ta.t, %{p}ta.T
  %{p}tb.t = icmp eq i8 %transb, 116
  %{p}tb.T = icmp eq i8 %transb, 84
  %{p}tb = or i1 %{p}tb.t, %{p}tb.T
  %{p}ai = select i1 %{p}ta, i64 %lda, i64 1
  %{p}al = select i1 %{p}ta, i64 1, i64 %lda
  %{p}bl = select i1 %{p}tb, i64 %ldb, i64 1
  %{p}bj = select i1 %{p}tb, i64 1, i64 %ldb
  %{p}anyj = icmp sgt i64 %n, 0
  %{p}anyi = icmp sgt i64 %m, 0
  %{p}anyl = icmp sgt i64 %k, 0
  %{p}work = and i1 %{p}anyj, %{p}anyi
  br i1 %{p}work, label %{p}.col, label %{p}.done
{p}.col:
  %{p}j = phi i64 [ 0, %{p}.pre ], [ %{p}j.next, %{p}.colend ]
  %{p}boff = mul i64 %{p}j, %{p}bj
  %{p}coff = mul i64 %{p}j, %ldc
  br label %{p}.row
{p}.row:
  %{p}i = phi i64 [ 0, %{p}.col ], [ %{p}i.next, %{p}.put ]
  %{p}aoff = mul i64 %{p}i, %{p}ai
  br i1 %{p}anyl, label %{p}.inner, label %{p}.store
{p}.inner:
  %{p}l = phi i64 [ 0, %{p}.row ], [ %{p}l.next, %{p}.inner ]
  %{p}acc = phi {t} [ 0.0, %{p}.row ], [ %{p}acc.next, %{p}.inner ]
  %{p}la = mul i64 %{p}l, %{p}al
  %{p}aidx = add i64 %{p}aoff, %{p}la
  %{p}lb = mul i64 %{p}l, %{p}bl
  %{p}bidx = add i64 %{p}boff, %{p}lb
  %{p}ap = getelementptr {t}, ptr %a, i64 %{p}aidx
  %{p}bp = getelementptr {t}, ptr %b, i64 %{p}bidx
  %{p}av = load {t}, ptr %{p}ap
  %{p}bv = load {t}, ptr %{p}bp
  %{p}m = fmul {t} %{p}av, %{p}bv
  %{p}acc.next = fadd reassoc {t} %{p}acc, %{p}m
  %{p}l.next = add nuw nsw i64 %{p}l, 1
  %{p}morel = icmp slt i64 %{p}l.next, %k
  br i1 %{p}morel, label %{p}.inner, label %{p}.store
{p}.store:
  %{p}sum = phi {t} [ 0.0, %{p}.row ], [ %{p}acc.next, %{p}.inner ]
  %{p}cidx = add i64 %{p}coff, %{p}i
  %{p}cp = getelementptr {t}, ptr %c, i64 %{p}cidx
  %{p}scaled = fmul {t} %{p}alpha, %{p}sum
  br i1 %{p}keep, label %{p}.old, label %{p}.put
{p}.old:
  %{p}cold = load {t}, ptr %{p}cp
  %{p}bc = fmul {t} %{p}beta, %{p}cold
  %{p}with = fadd {t} %{p}scaled, %{p}bc
  br label %{p}.put
{p}.put:
  %{p}cv = phi {t} [ %{p}scaled, %{p}.store ], [ %{p}with, %{p}.old ]
  store {t} %{p}cv, ptr %{p}cp
  %{p}i.next = add nuw nsw i64 %{p}i, 1
  %{p}morei = icmp slt i64 %{p}i.next, %m
  br i1 %{p}morei, label %{p}.row, label %{p}.colend
{p}.colend:
  %{p}j.next = add nuw nsw i64 %{p}j, 1
  %{p}morej = icmp slt i64 %{p}j.next, %n
  br i1 %{p}morej, label %{p}.col, label %{p}.done
{p}.done:
  ret i32 0
"""


def _nrm2_loop(p: str, t: str) -> str:
    """Blocks of ``*out = sqrt(sum x[i * incx]^2)`` over element type ``t`` (Numba's
    ``np.linalg.norm`` of a real vector). A non-positive increment (a reversed view,
    which Numba hands to BLAS as it is and BLAS does not read as NumPy does) gives NaN,
    as the call rule's derivatives are (rules/numba_linalg_runtime.c): the square root
    of ``-1 - sum``, so that the derivatives with respect to the view are NaN too."""
    sqrt = "llvm.sqrt.f64" if t == "double" else "llvm.sqrt.f32"
    return f"""{p}.pre:
  %{p}pos = icmp sgt i64 %n, 0
  br i1 %{p}pos, label %{p}.loop, label %{p}.store
{p}.loop:
  %{p}i = phi i64 [ 0, %{p}.pre ], [ %{p}i.next, %{p}.loop ]
  %{p}acc = phi {t} [ 0.0, %{p}.pre ], [ %{p}acc.next, %{p}.loop ]
  %{p}off = mul i64 %{p}i, %incx
  %{p}xp = getelementptr {t}, ptr %x, i64 %{p}off
  %{p}xv = load {t}, ptr %{p}xp
  %{p}sq = fmul {t} %{p}xv, %{p}xv
  %{p}acc.next = fadd reassoc {t} %{p}acc, %{p}sq
  %{p}i.next = add nuw nsw i64 %{p}i, 1
  %{p}more = icmp slt i64 %{p}i.next, %n
  br i1 %{p}more, label %{p}.loop, label %{p}.store
{p}.store:
  %{p}sum = phi {t} [ 0.0, %{p}.pre ], [ %{p}acc.next, %{p}.loop ]
  %{p}backward = icmp slt i64 %incx, 1
  %{p}unread = and i1 %{p}pos, %{p}backward
  %{p}negative = fsub {t} -1.0, %{p}sum
  %{p}arg = select i1 %{p}unread, {t} %{p}negative, {t} %{p}sum
  %{p}r = call {t} @{sqrt}({t} %{p}arg)
  store {t} %{p}r, ptr %out
  ret i32 0
"""


#: Definitions of the BLAS wrappers Numba calls for 1-D ``np.dot``/``vdot``, for a
#: matrix times a vector (``W @ x``, ``x @ W``) and for a product of matrices (``A @ B``,
#: nested and vector-mode kernels only): plain loops in IR, which AD
#: differentiates like any loop (the real ones live in a C library).
#: ``kind`` is the BLAS letter: 'd' (100) double, 's' (115) float; others are refused.
_BLAS_LOOPS = {
    "numba_xxdot": "define internal i32 @numba_xxdot(i8 %kind, i8 %conj, i64 %n, ptr %x, ptr %y, ptr %out) {\n"
    "entry:\n"
    "  %isd = icmp eq i8 %kind, 100\n"
    "  %iss = icmp eq i8 %kind, 115\n"
    "  %pos = icmp sgt i64 %n, 0\n"
    "  br i1 %isd, label %d.pre, label %s.check\n"
    "s.check:\n"
    "  br i1 %iss, label %s.pre, label %unsupported\n"
    + _dot_loop("d", "double")
    + _dot_loop("s", "float")
    + "unsupported:\n  ret i32 -1\n}\n",
    "numba_xxgemv": "define internal i32 @numba_xxgemv(i8 %kind, i8 %trans, i64 %m, i64 %n, ptr %alpha, ptr %a, "
    "i64 %lda, ptr %x, ptr %beta, ptr %y) {\n"
    "entry:\n"
    "  %isd = icmp eq i8 %kind, 100\n"
    "  %iss = icmp eq i8 %kind, 115\n"
    "  br i1 %isd, label %d.pre, label %s.check\n"
    "s.check:\n"
    "  br i1 %iss, label %s.pre, label %unsupported\n"
    + _gemv_loops("d", "double")
    + _gemv_loops("s", "float")
    + "unsupported:\n  ret i32 -1\n}\n",
    "numba_xxnrm2": "declare double @llvm.sqrt.f64(double)\ndeclare float @llvm.sqrt.f32(float)\n"
    "define internal i32 @numba_xxnrm2(i8 %kind, i64 %n, ptr %x, i64 %incx, ptr %out) {\n"
    "entry:\n"
    "  %isd = icmp eq i8 %kind, 100\n"
    "  %iss = icmp eq i8 %kind, 115\n"
    "  br i1 %isd, label %d.pre, label %s.check\n"
    "s.check:\n"
    "  br i1 %iss, label %s.pre, label %unsupported\n"
    + _nrm2_loop("d", "double")
    + _nrm2_loop("s", "float")
    + "unsupported:\n  ret i32 -1\n}\n",
    "numba_xxgemm": "define internal i32 @numba_xxgemm(i8 %kind, i8 %transa, i8 %transb, i64 %m, i64 %n, i64 %k, "
    "ptr %alpha, ptr %a, i64 %lda, ptr %b, i64 %ldb, ptr %beta, ptr %c, i64 %ldc) {\n"
    "entry:\n"
    "  %isd = icmp eq i8 %kind, 100\n"
    "  %iss = icmp eq i8 %kind, 115\n"
    "  br i1 %isd, label %d.pre, label %s.check\n"
    "s.check:\n"
    "  br i1 %iss, label %s.pre, label %unsupported\n"
    + _gemm_loops("d", "double")
    + _gemm_loops("s", "float")
    + "unsupported:\n  ret i32 -1\n}\n",
}


# wrappers that also have a call-level rule (autodiff/rules/numba_linalg.py): the rule
# (BLAS speed) serves first-order kernels; their loops serve nested (second-order, Taylor)
# and vector-mode kernels, which call-level rules do not support
_RULE_BACKED_LOOPS = frozenset({"numba_xxgemv", "numba_xxgemm", "numba_xxnrm2"})


def define_blas_loops(text: str, *, rules: bool = False) -> str:
    """Replace declarations of the BLAS wrappers that have loop definitions (with
    ``rules``, not those a call-level rule differentiates)."""
    out = []
    added = []
    for ln in text.splitlines():
        name = _declared(ln)
        if name in _BLAS_LOOPS and not (rules and name in _RULE_BACKED_LOOPS):
            added.append(_BLAS_LOOPS[name])
            continue
        out.append(ln)
    text = "\n".join(out)
    # (a loop's intrinsic declarations, unless the module declares them already)
    added = ["\n".join(ln for ln in body.splitlines()
                       if not (ln.startswith("declare ") and f"@{_declared(ln)}(" in text))
             for body in added]
    return text + "\n" + "\n".join(added)
