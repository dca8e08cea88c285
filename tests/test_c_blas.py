"""BLAS calls differentiated at the level of the call (issue 26 items 1 and 4; LAPACK,
item 2: Cholesky in lapack.c, LU in lu.c, the symmetric eigendecomposition in eigen.c, the
SVD in svd.c, least squares in lstsq.c; every LAPACK rule in vector mode, issue 25 item 2, in
lapack_width.c): the
self-checking programs in tests/c/blas, linked with OpenBLAS (``-lopenblas``, installed by
.ci/run), each at -O0 and -O2 (the suite's time: gemm at -O3 alone costs 15 s of CPU);
ZYMASE_TEST_ALL_LEVELS=1 builds every program at every level.

``caching.c`` is built with ``ZYMASE_TAPE_STATS=1`` and checks the bytes the derivatives
keep: none for inputs nothing overwrites, a copy for one overwritten later (item 1's
"must cache" and "no copy"). A complex routine stays a refusal naming it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from c_harness import ALL_LEVELS, build_and_run, build_ids, builds, emit_llvm, function_ir
from forking_cli import run_cli

BLAS_DIR = Path(__file__).resolve().parent / "c" / "blas"


def _levels(program: str) -> list[list[str]]:
    return [[*flags, "-lopenblas"] for flags in builds("-O0", "-O2")]


CASES = [(name, flags) for name in ("level1", "level2", "level3", "gemv", "gemm", "lapack", "lu", "eigen", "svd", "lstsq",
                                    "lapack_width", "same_array")
         for flags in _levels(name)]


@pytest.mark.parametrize("program,flags", CASES, ids=[f"{n}-{build_ids([f[:-1]])[0]}" for n, f in CASES])
def test_c_blas_program(program: str, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    # issue 26 items 1 and 4: every activity combination against finite differences
    build_and_run(BLAS_DIR / f"{program}.c", flags, tmp_path, zymase_cli)


CACHING_LEVELS = ["-O2"] if not ALL_LEVELS else ["-O0", "-O1", "-O2", "-O3"]


@pytest.mark.parametrize("level", CACHING_LEVELS)
def test_blas_inputs_copied_only_when_overwritten(level: str, tmp_path: Path):
    # issue 26 item 1 (caching): no copy when nothing overwrites an input, a copy otherwise
    exe = tmp_path / "caching"
    env = {**os.environ, "ZYMASE_TAPE_STATS": "1"}
    build = run_cli(["cc", level, str(BLAS_DIR / "caching.c"), "-o", str(exe), "-lopenblas"], cwd=tmp_path,
                    env=env, timeout=300)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stdout + run.stderr


def test_lapack_lanes_share_the_primal_side_work(tmp_path: Path, zymase_cli: list[str]):
    """LAPACK at width N (issue 25 item 2; the lanes' values are checked in lapack_width.c):
    each of the 9 LAPACK calls runs once, its status is checked once and what the reverse
    sweep reads is kept once (as many ``_save`` calls as at width 1), and its derivative is
    one runtime call for every lane (``_fwd_lanes``, ``_rev_lanes``: one factorization, the
    lanes solved together; the run-time count is test_lapack_lanes_factor_once), not the
    width-1 ``_fwd``/``_rev`` once per lane."""
    ll = emit_llvm(BLAS_DIR / "lapack_width.c", ["-O0", "-lopenblas"], tmp_path, zymase_cli)

    def count(text: str, pattern: str) -> int:
        return len(re.findall(rf"call [^\n]*@{pattern}\(", text))

    for width in ("", "2", "3"):
        lanes = int(width or 1)
        fwd, rev = function_ir(ll, f"fwddiffe{width}model"), function_ir(ll, f"diffe{width}model")
        for text in (fwd, rev):
            assert [count(text, f) for f in ("dpotrf_", "dgetrf_", "dgesv_", "dsyev_", "dgesdd_", "dgelsd_")] == [1] * 6
            assert count(text, r"__zymase_blas_d\w+_status") == 9, (width, text)
        suffix = "_lanes" if lanes > 1 else ""
        assert count(fwd, rf"__zymase_blas_d\w+_fwd{suffix}") == 9, (width, fwd)
        assert count(rev, r"__zymase_blas_d\w+_save") == 9 and count(rev, rf"__zymase_blas_d\w+_rev{suffix}") == 9
        if lanes > 1:
            assert count(fwd, r"__zymase_blas_d\w+_fwd") == 0 and count(rev, r"__zymase_blas_d\w+_rev") == 0


#: a shim preloaded into the program (LD_PRELOAD): counts the calls of the LAPACK routines
#: that factor, decompose or solve (the program's and the derivative runtime's alike) and
#: passes them on; every argument of these routines is a pointer
LAPACK_COUNTER = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#define P void *
static const char *names[] = {"dgetrf_", "dgetrs_", "dpotrf_", "dpotrs_", "dsyevd_", "dgesdd_"};
static int counts[6];
static void *next(int i) { counts[i]++; return dlsym(RTLD_NEXT, names[i]); }
void dgetrf_(P a, P b, P c, P d, P e, P f) { ((void (*)(P, P, P, P, P, P))next(0))(a, b, c, d, e, f); }
void dgetrs_(P a, P b, P c, P d, P e, P f, P g, P h, P i) {
    ((void (*)(P, P, P, P, P, P, P, P, P))next(1))(a, b, c, d, e, f, g, h, i);
}
void dpotrf_(P a, P b, P c, P d, P e) { ((void (*)(P, P, P, P, P))next(2))(a, b, c, d, e); }
void dpotrs_(P a, P b, P c, P d, P e, P f, P g, P h) { ((void (*)(P, P, P, P, P, P, P, P))next(3))(a, b, c, d, e, f, g, h); }
void dsyevd_(P a, P b, P c, P d, P e, P f, P g, P h, P i, P j, P k) {
    ((void (*)(P, P, P, P, P, P, P, P, P, P, P))next(4))(a, b, c, d, e, f, g, h, i, j, k);
}
void dgesdd_(P a, P b, P c, P d, P e, P f, P g, P h, P i, P j, P k, P l, P m, P n) {
    ((void (*)(P, P, P, P, P, P, P, P, P, P, P, P, P, P))next(5))(a, b, c, d, e, f, g, h, i, j, k, l, m, n);
}
__attribute__((destructor)) static void report(void) {
    for (int i = 0; i < 6; i++)
        fprintf(stderr, "lapack-count %s %d\n", names[i], counts[i]);
}
"""


def test_lapack_lanes_factor_once(tmp_path: Path):
    """LAPACK at width 4 (issue 25 item 2): each lane against a width-1 call and a central
    difference (lapack_lanes_once.c, the matrix of one dgesv_ constant), and, counted at run
    time, as many factorizations, decompositions and solves in the derivative as at width
    1: one for all lanes (before: one per lane, 4 times width 1's); in forward mode no LU
    factorization at all (the rules read the factors the calls computed). Built at -O0 only (the
    suite's time): the lanes-at-once runtime is compiled at -O2 whatever the program's level,
    and lapack_width.c runs it at widths 2 and 3 at -O0 and -O2."""
    exe = tmp_path / "lanes_once"
    build = run_cli(["cc", "-O0", str(BLAS_DIR / "lapack_lanes_once.c"), "-o", str(exe), "-lopenblas"],
                    cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env)
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stdout + run.stderr
    shim = tmp_path / "counter.so"
    (tmp_path / "counter.c").write_text(LAPACK_COUNTER)
    subprocess.run(["clang-19", "-shared", "-fPIC", "-O1", str(tmp_path / "counter.c"), "-o", str(shim), "-ldl"],
                   check=True, timeout=120)

    def counts(mode: str) -> dict[str, int]:
        out = subprocess.run([str(exe), mode], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                             env={**env, "LD_PRELOAD": str(shim)})
        assert out.returncode == 0, out.stderr
        return {m[0]: int(m[1]) for m in re.findall(r"lapack-count (\w+) (\d+)", out.stderr)}

    primal = counts("primal")
    assert primal["dgetrf_"] == 1 and primal["dsyevd_"] == 1, primal  # the shim sees the program's calls
    for mode in ("fwd", "rev"):
        one, four = counts(f"{mode}1"), counts(f"{mode}4")
        derivative = {name: one[name] - primal[name] for name in one}
        # forward mode reads the factors dgetrf_/dgesv_ computed (session 29): no LU again
        assert (derivative["dgetrf_"] == 0) == (mode == "fwd"), (mode, primal, one)
        assert derivative["dsyevd_"] > 0 and derivative["dgesdd_"] > 0, (mode, one)
        assert derivative["dgetrs_"] > 0 and derivative["dpotrs_"] > 0, (mode, one)
        assert four == one, (mode, primal, one, four)


ZGEMM = r"""
#include <cblas.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
void f(const double *A, const double *B, double *C, int n) {
    double one[2] = {1, 0}, zero[2] = {0, 0};
    cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, one, A, n, B, n, zero, C, n);
}
double A[8], dA[8], B[8], C[8], dC[8];
int main(void) { __enzyme_autodiff((void *)f, enzyme_dup, A, dA, enzyme_const, B, enzyme_dup, C, dC, 2); return 0; }
"""


def test_complex_blas_routine_is_refused_by_name(tmp_path: Path):
    # issue 26 item 5: a routine without a rule is one clear error naming it
    src = tmp_path / "zgemm.c"
    src.write_text(ZGEMM)
    out = run_cli(["cc", "-O2", str(src), "-o", str(tmp_path / "z"), "-lopenblas"], cwd=tmp_path, timeout=300)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zymase: error: "), out.stderr
    assert "no derivative rule for the BLAS/LAPACK routine 'cblas_zgemm'" in lines[0], lines[0]
    assert "zgemm.c:7" in lines[0] and "Traceback" not in out.stderr


ILP64_DOT = r"""
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup;
double cblas_ddot(long n, const double *x, long incx, const double *y, long incy);
double f(double *x, double *y) { return cblas_ddot(3, x, 1, y, 1); }
int main(void) { double x[3], dx[3], y[3], dy[3]; __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_dup, y, dy); return 0; }
"""


def test_blas_call_with_other_integer_width_is_refused(tmp_path: Path):
    # issue 26 item 5: arguments the rule would read wrongly (64-bit integers) are refused
    src = tmp_path / "ilp64.c"
    src.write_text(ILP64_DOT)
    out = run_cli(["cc", "-O2", str(src), "-o", str(tmp_path / "d"), "-lopenblas"], cwd=tmp_path, timeout=300)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zymase: error: "), out.stderr
    assert "'cblas_ddot' passes n as i64" in lines[0] and "in function 'f'" in lines[0], lines[0]


REFUSED_ARGUMENT = r"""
/* LAPACK calls that refuse an argument (info < 0) and do nothing: dgesv_ with lda < n,
   dsyevd_ with a workspace too small (not a query); argv[1] picks the call and the mode */
#include <stdio.h>
#include <string.h>
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup;
void dgesv_(const int *, const int *, double *, const int *, int *, double *, const int *, int *);
void dsyevd_(const char *, const char *, const int *, double *, const int *, double *, double *, const int *, int *,
             const int *, int *);
double solve(double *A, double *B) {
    int n = 3, nrhs = 1, lda = 2, ipiv[3], info; /* lda < n: argument 4 illegal */
    dgesv_(&n, &nrhs, A, &lda, ipiv, B, &n, &info);
    return B[0] + 2 * B[1] + 3 * B[2];
}
double eigen(double *A) {
    int n = 3, lwork = 1, iwork[20], liwork = 20, info; /* lwork = 1: argument 8 illegal */
    double w[3], work[1];
    dsyevd_("V", "L", &n, A, &n, w, work, &lwork, iwork, &liwork, &info);
    return w[0] + 2 * w[2] + A[1];
}
int main(int argc, char **argv) {
    double A[9] = {4, 1, 0, 1, 5, 2, 0, 2, 6}, dA[9] = {0}, B[3] = {1, 2, 3}, dB[3] = {0};
    const char *which = argc > 1 ? argv[1] : "";
    if (!strcmp(which, "gesv"))
        __enzyme_autodiff((void *)solve, enzyme_dup, A, dA, enzyme_dup, B, dB);
    else if (!strcmp(which, "gesv-forward")) {
        dA[0] = 1;
        dB[0] = __enzyme_fwddiff((void *)solve, enzyme_dup, A, dA, enzyme_dup, B, dB);
    } else if (!strcmp(which, "syevd"))
        __enzyme_autodiff((void *)eigen, enzyme_dup, A, dA);
    printf("derivative %g %g %g\n", dA[0], dA[1], dB[0]);
    return 0;
}
"""


def test_lapack_call_that_refused_an_argument_stops_its_derivative(tmp_path: Path):
    # issue 26 item 2 (LAPACK info check): info < 0 means LAPACK did nothing; the derivative
    # code used to compute a plausible derivative anyway with its own copies and workspace
    src = tmp_path / "refused.c"
    src.write_text(REFUSED_ARGUMENT)
    exe = tmp_path / "refused"
    build = run_cli(["cc", "-O1", str(src), "-o", str(exe), "-lopenblas"], cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    for which, call, argument in (("gesv", "dgesv_", 4), ("gesv-forward", "dgesv_", 4), ("syevd", "dsyevd_", 8)):
        run = subprocess.run([str(exe), which], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert run.returncode != 0 and "derivative" not in run.stdout, (which, run.stdout, run.stderr)
        assert (f"zymase: error: the LAPACK call {call} refused its argument {argument} (info = -{argument})"
                in run.stderr), (which, run.stderr)


OVERLAPPING = r"""
#include <cblas.h>
#include <stdio.h>
#include <string.h>
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;
double f(double *x, int n, int which) {
    if (which == 0)
        cblas_daxpy(n - 1, 0.5, x, 1, x + 1, 1); /* y is x shifted by one: overlapping */
    else if (which == 1)
        cblas_dcopy(n / 2, x, 1, x + 1, 1);
    else
        cblas_dcopy(n / 2, x, 2, x + 1, 2); /* interleaved: no element shared, allowed */
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}
int main(int argc, char **argv) {
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dx[8] = {0};
    int which = argv[1][0] - '0';
    if (argc > 2) {
        dx[0] = 1;
        dx[1] = __enzyme_fwddiff((void *)f, enzyme_dup, x, dx, enzyme_const, 8, enzyme_const, which);
    } else
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 8, enzyme_const, which);
    printf("derivative %g %g\n", dx[0], dx[1]);
    return 0;
}
"""


def test_blas_call_with_partly_overlapping_vectors_stops_its_derivative(tmp_path: Path):
    # session 32: daxpy(n - 1, a, x, 1, x + 1, 1) (forbidden by BLAS; what it computes
    # depends on the kernel's loop order) got the derivative of a call on separate arrays,
    # silently wrong; now the derivative stops there. Interleaved vectors sharing no
    # element, and the same vector twice (tests/c/blas/same_array.c), are differentiated.
    src = tmp_path / "overlap.c"
    src.write_text(OVERLAPPING)
    exe = tmp_path / "overlap"
    build = run_cli(["cc", "-O1", str(src), "-o", str(exe), "-lopenblas"], cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    for args, call in ((["0"], "cblas_daxpy"), (["0", "forward"], "cblas_daxpy"), (["1"], "cblas_dcopy"),
                       (["1", "forward"], "cblas_dcopy")):
        run = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert run.returncode != 0 and "derivative" not in run.stdout, (args, run.stdout, run.stderr)
        assert f"zymase: error: the BLAS call {call} was given input and output vectors that partly overlap" in (
            run.stderr), (args, run.stderr)
    for args in (["2"], ["2", "forward"]):
        run = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert run.returncode == 0 and "derivative" in run.stdout, (args, run.stdout, run.stderr)
