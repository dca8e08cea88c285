"""The BLAS routines zymase differentiates at the level of the call: their parameters,
which ones are vectors/matrices read or written, and what the reverse sweep reads.

Data only; :mod:`zymase.autodiff.rules.blas` turns it into rules. Parameters are listed
in CBLAS order (``cblas_dgemm(layout, transa, transb, m, n, k, alpha, A, lda, ...)``);
the Fortran spellings OpenBLAS exports (``dgemm_``) take the same parameters without
``layout`` (always column-major), each by pointer, transposes as characters (``"N"``,
``"T"``), followed by any hidden string lengths gfortran passes.

Parameter kinds: ``int`` (a dimension, increment or leading dimension), ``layout``,
``trans``, ``uplo``, ``diag``, ``side`` (CBLAS enumerations; characters in Fortran), ``real``
(alpha/beta: a float of the routine's precision), ``array`` (a pointer to the routine's
vector or matrix data), ``info`` (LAPACK's status, written), ``ints`` (a pointer to an
integer array: LU pivots, integer workspace; never active), ``jobz`` (LAPACK's
"compute eigenvectors?" character, 'V' or 'N') and ``job`` (a character with more choices,
gesdd's 'N', 'S', 'A', 'O': passed as its upper-case code) and ``cutoff`` (a float
threshold read through a pointer, gelsd's rcond: no derivative). LAPACK routines have only the Fortran
spelling (column-major).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Routine:
    name: str  # without the precision letter: "gemm"
    params: tuple[tuple[str, str], ...]  # (name, kind) in CBLAS order
    reads: tuple[str, ...]  # array parameters whose values the result depends on
    writes: tuple[str, ...]  # array parameters the call writes
    returns_real: bool = False  # the call returns a float (dot)
    # the spellings' format, {p} the precision letter (iamax: cblas_i{p}amax, i{p}amax_)
    spelled: str = "{p}{name}"
    fortran_only: bool = False  # LAPACK: no CBLAS spelling
    # input -> the parameters whose derivative needs that input's value as it was at the
    # call: the reverse sweep reads it only when one of them is active
    needs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    int_writes: tuple[str, ...] = ()  # integer arrays the call writes (pivots, workspace)
    # output -> the arrays it depends on, where not all of `reads` (gesv's factors)
    depends: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # output -> the parameters whose derivative needs it as the call left it: read in place
    # when nothing may write it after the call, else copied right after the call (gesv's LU
    # factors, pivots and solution, potrf's factor: no factorization again)
    keeps: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # forward mode: ``_fwd`` runs after the primal call, its tangent needing what the call
    # computed (potrf's factor), instead of before it (reading the output's old value)
    forward_after: bool = False

    def index(self, param: str) -> int:
        return [p for p, _ in self.params].index(param)

    def of_kind(self, kind: str) -> list[str]:
        return [p for p, k in self.params if k == kind]


_I, _L, _T, _R, _A, _U, _D, _S = "int", "layout", "trans", "real", "array", "uplo", "diag", "side"
_N = "info"  # LAPACK's status output (an int written through a pointer)
_IA, _J, _JOB, _C = "ints", "jobz", "job", "cutoff"

_TRIANGULAR_LEVEL3 = (("layout", _L), ("side", _S), ("uplo", _U), ("transa", _T), ("diag", _D), ("m", _I),
                      ("n", _I), ("alpha", _R), ("A", _A), ("lda", _I), ("B", _A), ("ldb", _I))

ROUTINES = {
    r.name: r
    for r in (
        Routine("dot", (("n", _I), ("x", _A), ("incx", _I), ("y", _A), ("incy", _I)),
                reads=("x", "y"), writes=(), returns_real=True, needs=(("x", ("y",)), ("y", ("x",)))),
        Routine("axpy", (("n", _I), ("alpha", _R), ("x", _A), ("incx", _I), ("y", _A), ("incy", _I)),
                reads=("x", "y"), writes=("y",), needs=(("x", ("alpha",)),)),
        Routine("scal", (("n", _I), ("alpha", _R), ("x", _A), ("incx", _I)),
                reads=("x",), writes=("x",), needs=(("x", ("alpha",)),)),
        Routine("copy", (("n", _I), ("x", _A), ("incx", _I), ("y", _A), ("incy", _I)),
                reads=("x",), writes=("y",)),
        Routine("gemv", (("layout", _L), ("trans", _T), ("m", _I), ("n", _I), ("alpha", _R), ("A", _A),
                         ("lda", _I), ("x", _A), ("incx", _I), ("beta", _R), ("y", _A), ("incy", _I)),
                reads=("A", "x", "y"), writes=("y",),
                needs=(("A", ("x", "alpha")), ("x", ("A", "alpha")), ("y", ("beta",)))),
        Routine("gemm", (("layout", _L), ("transa", _T), ("transb", _T), ("m", _I), ("n", _I), ("k", _I),
                         ("alpha", _R), ("A", _A), ("lda", _I), ("B", _A), ("ldb", _I), ("beta", _R),
                         ("C", _A), ("ldc", _I)),
                reads=("A", "B", "C"), writes=("C",),
                needs=(("A", ("B", "alpha")), ("B", ("A", "alpha")), ("C", ("beta",)))),
        # the norms need x for their own derivative; iamax (an index) has none
        Routine("nrm2", (("n", _I), ("x", _A), ("incx", _I)), reads=("x",), writes=(), returns_real=True,
                needs=(("x", ("x",)),)),
        Routine("asum", (("n", _I), ("x", _A), ("incx", _I)), reads=("x",), writes=(), returns_real=True,
                needs=(("x", ("x",)),)),
        Routine("iamax", (("n", _I), ("x", _A), ("incx", _I)), reads=(), writes=(), spelled="i{p}amax"),
        Routine("swap", (("n", _I), ("x", _A), ("incx", _I), ("y", _A), ("incy", _I)),
                reads=("x", "y"), writes=("x", "y")),
        Routine("ger", (("layout", _L), ("m", _I), ("n", _I), ("alpha", _R), ("x", _A), ("incx", _I), ("y", _A),
                        ("incy", _I), ("A", _A), ("lda", _I)),
                reads=("x", "y", "A"), writes=("A",), needs=(("x", ("y", "alpha")), ("y", ("x", "alpha")))),
        Routine("symv", (("layout", _L), ("uplo", _U), ("n", _I), ("alpha", _R), ("A", _A), ("lda", _I), ("x", _A),
                         ("incx", _I), ("beta", _R), ("y", _A), ("incy", _I)),
                reads=("A", "x", "y"), writes=("y",),
                needs=(("A", ("x", "alpha")), ("x", ("A", "alpha")), ("y", ("beta",)))),
        # x = op(A) x: dA needs x as it was (the call's own output); x = op(A)^-1 x likewise
        # (the reverse solves it again)
        Routine("trmv", (("layout", _L), ("uplo", _U), ("trans", _T), ("diag", _D), ("n", _I), ("A", _A),
                         ("lda", _I), ("x", _A), ("incx", _I)),
                reads=("A", "x"), writes=("x",), needs=(("A", ("x",)), ("x", ("A",)))),
        Routine("trsv", (("layout", _L), ("uplo", _U), ("trans", _T), ("diag", _D), ("n", _I), ("A", _A),
                         ("lda", _I), ("x", _A), ("incx", _I)),
                reads=("A", "x"), writes=("x",), needs=(("A", ("x", "A")), ("x", ("A",)))),
        Routine("symm", (("layout", _L), ("side", _S), ("uplo", _U), ("m", _I), ("n", _I), ("alpha", _R),
                         ("A", _A), ("lda", _I), ("B", _A), ("ldb", _I), ("beta", _R), ("C", _A), ("ldc", _I)),
                reads=("A", "B", "C"), writes=("C",),
                needs=(("A", ("B", "alpha")), ("B", ("A", "alpha")), ("C", ("beta",)))),
        Routine("syrk", (("layout", _L), ("uplo", _U), ("trans", _T), ("n", _I), ("k", _I), ("alpha", _R),
                         ("A", _A), ("lda", _I), ("beta", _R), ("C", _A), ("ldc", _I)),
                reads=("A", "C"), writes=("C",), needs=(("A", ("A", "alpha")), ("C", ("beta",)))),
        # B = alpha op(A) B and its solve: B's old value is the call's own output
        Routine("trmm", _TRIANGULAR_LEVEL3, reads=("A", "B"), writes=("B",),
                needs=(("A", ("B", "alpha")), ("B", ("A", "alpha")))),
        Routine("trsm", _TRIANGULAR_LEVEL3, reads=("A", "B"), writes=("B",),
                needs=(("A", ("B", "alpha", "A")), ("B", ("A", "alpha")))),
        # LAPACK: Cholesky, in place (both modes work from the factor the call computed),
        # and the solve with its factor (X solved again from the B kept at the call)
        Routine("potrf", (("layout", _L), ("uplo", _U), ("n", _I), ("A", _A), ("lda", _I), ("info", _N)),
                reads=("A",), writes=("A",), keeps=(("A", ("A",)),), forward_after=True, fortran_only=True),
        Routine("potrs", (("layout", _L), ("uplo", _U), ("n", _I), ("nrhs", _I), ("A", _A), ("lda", _I),
                          ("B", _A), ("ldb", _I), ("info", _N)),
                reads=("A", "B"), writes=("B",), needs=(("A", ("A", "B")), ("B", ("A",))), fortran_only=True),
        # LU in place, A = P L U (the reverse factors the input kept at the call again, the
        # forward reads the factors the call computed), the solve with its factors and pivots
        # (X solved again from the B kept at the call), and both at once (its factors, pivots
        # and solution kept after the call, or read by the forward right after it)
        Routine("getrf", (("layout", _L), ("m", _I), ("n", _I), ("A", _A), ("lda", _I), ("ipiv", _IA),
                          ("info", _N)),
                reads=("A",), writes=("A",), int_writes=("ipiv",), needs=(("A", ("A",)),), forward_after=True,
                fortran_only=True),
        Routine("getrs", (("layout", _L), ("trans", _T), ("n", _I), ("nrhs", _I), ("A", _A), ("lda", _I),
                          ("ipiv", _IA), ("B", _A), ("ldb", _I), ("info", _N)),
                reads=("A", "B"), writes=("B",),
                needs=(("A", ("A", "B")), ("ipiv", ("A", "B")), ("B", ("A",))), fortran_only=True),
        Routine("gesv", (("layout", _L), ("n", _I), ("nrhs", _I), ("A", _A), ("lda", _I), ("ipiv", _IA),
                         ("B", _A), ("ldb", _I), ("info", _N)),
                reads=("A", "B"), writes=("A", "B"), int_writes=("ipiv",), depends=(("A", ("A",)),),
                keeps=(("A", ("A", "B")), ("ipiv", ("A", "B")), ("B", ("A",))), forward_after=True,
                fortran_only=True),
        # symmetric eigendecomposition: w and (jobz 'V') the eigenvectors over A written, the
        # workspace written (its derivative zero); the reverse decomposes the kept input again
        Routine("syev", (("layout", _L), ("jobz", _J), ("uplo", _U), ("n", _I), ("A", _A), ("lda", _I),
                         ("w", _A), ("work", _A), ("lwork", _I), ("info", _N)),
                reads=("A",), writes=("A", "w", "work"), needs=(("A", ("A",)),), fortran_only=True),
        Routine("syevd", (("layout", _L), ("jobz", _J), ("uplo", _U), ("n", _I), ("A", _A), ("lda", _I),
                          ("w", _A), ("work", _A), ("lwork", _I), ("iwork", _IA), ("liwork", _I), ("info", _N)),
                reads=("A",), writes=("A", "w", "work"), int_writes=("iwork",), needs=(("A", ("A",)),),
                fortran_only=True),
        # singular value decomposition: s, U and V^T written (none of U, V^T for jobz 'N'),
        # A destroyed; the reverse decomposes the kept input again
        Routine("gesdd", (("layout", _L), ("jobz", _JOB), ("m", _I), ("n", _I), ("A", _A), ("lda", _I), ("s", _A),
                          ("U", _A), ("ldu", _I), ("VT", _A), ("ldvt", _I), ("work", _A), ("lwork", _I),
                          ("iwork", _IA), ("info", _N)),
                reads=("A",), writes=("A", "s", "U", "VT", "work"), int_writes=("iwork",), needs=(("A", ("A",)),),
                fortran_only=True),
        # least squares by the SVD: X over B, s written, A destroyed; the reverse takes the
        # SVD of the kept A again and solves again from the kept B
        Routine("gelsd", (("layout", _L), ("m", _I), ("n", _I), ("nrhs", _I), ("A", _A), ("lda", _I), ("B", _A),
                          ("ldb", _I), ("s", _A), ("rcond", _C), ("rank", _IA), ("work", _A), ("lwork", _I),
                          ("iwork", _IA), ("info", _N)),
                reads=("A", "B"), writes=("A", "B", "s", "work"), int_writes=("rank", "iwork"),
                depends=(("A", ("A",)), ("s", ("A",)), ("work", ())),
                needs=(("A", ("A", "B")), ("B", ("A",))), fortran_only=True),
    )
}

#: precision letter -> element type name (analysis/types.py's names)
PRECISIONS = {"d": "f64", "s": "f32"}


# BLAS and LAPACK names without a rule, recognized to word their refusal: the level 1-3
# BLAS bases and LAPACK's driver/computational prefixes (complex ones included)
_BLAS_BASES = ("dot", "dotu", "dotc", "axpy", "scal", "copy", "swap", "nrm2", "asum", "amax", "rot", "rotg", "rotm",
               "gemv", "gbmv", "ger", "geru", "gerc", "symv", "hemv", "sbmv", "spmv", "trmv", "tbmv", "tpmv", "trsv",
               "tbsv", "tpsv", "syr", "syr2", "her", "her2", "spr", "gemm", "symm", "hemm", "syrk", "herk",
               "syr2k", "her2k", "trmm", "trsm")
_LAPACK_BASES = ("potrf", "potrs", "getrf", "getrs", "gesv", "syev", "syevd", "syevr", "syevx", "heev", "heevd",
                 "gelsd", "gelss", "gelsy", "gels", "gesdd", "gesvd", "geqrf", "geqp3", "orgqr", "ormqr", "ungqr",
                 "trtrs", "trtri", "posv", "sysv", "sytrf", "sytrs", "getri", "potri", "geev", "gees", "gecon",
                 "pocon", "lange", "lansy", "laswp", "lacpy", "gtsv", "ptsv", "gbsv", "pbsv", "sygv", "ggev")


def is_blas_or_lapack(name: str) -> bool:
    """Whether ``name`` spells a BLAS or LAPACK routine (``cblas_zgemm``, ``dpotrf_``,
    ``LAPACKE_dgesv``), whether or not zymase has its rule."""
    import re

    m = re.fullmatch(r"(?:cblas_|LAPACKE_)?([sdcz]|i[sdcz]|[sd]z|sc|dz)([a-z0-9]+?)(?:_sub)?_?", name)
    return m is not None and (m.group(2) in _BLAS_BASES or m.group(2) in _LAPACK_BASES) and (
        name.startswith(("cblas_", "LAPACKE_")) or name.endswith("_"))


def supported_names() -> str:
    """The routines with rules, for messages: ``dot, axpy, ... (s and d)``."""
    blas = [n for n, r in ROUTINES.items() if not r.fortran_only]
    lapack = [n for n, r in ROUTINES.items() if r.fortran_only]
    return (", ".join(blas) + " (s and d, CBLAS and Fortran spellings); LAPACK " + ", ".join(lapack)
            + " (Fortran spelling)")


def spellings():
    """(function name, routine, precision letter, Fortran spelling?) for every spelling."""
    for name, routine in ROUTINES.items():
        for p in PRECISIONS:
            spelled = routine.spelled.format(p=p, name=name)
            if not routine.fortran_only:
                yield f"cblas_{spelled}", routine, p, False
            yield f"{spelled}_", routine, p, True


def fortran_params(routine: Routine) -> tuple[tuple[str, str], ...]:
    """The parameters of the Fortran spelling (no layout), each passed by pointer."""
    return tuple((p, k) for p, k in routine.params if k != _L)
