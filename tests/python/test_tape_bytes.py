"""How many bytes reverse mode writes to its tape per iteration, counted by the
program itself (``ZYMASE_TAPE_STATS=1`` at compile time adds the size of every tape
store to ``__zymase_tape_bytes``). The program is a Gaussian-mixture-style loop nest
over points and components with scratch arrays overwritten for every pair, so their
values cannot be re-read in the reverse sweep.

Per (point, component) the reverse sweep needs ``qx[i]`` (for the squared norm),
taped, and ``xc[i]`` and ``xc[j]``, which it rebuilds as ``x - mu`` from the one store
into ``xc`` (autodiff/forwarding.py) instead of taping them; ``exp(q[c][i])`` is written
too, into slots that do not depend on the point. ``L`` is never written, so the reverse
sweep re-reads it instead of taping one value per (j, i); ``x`` likewise. The test bounds
the bytes per point from the difference of two runs, so the per-call constant drops
out."""

from __future__ import annotations

import os
import subprocess

import pytest
from forking_cli import run_cli

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
extern long __zymase_tape_bytes;

__attribute__((noinline)) static double mixture(const double *mu, const double *q, const double *L,
                                              const double *x, int n, int k, int d) {
    double *xc = malloc(d * sizeof(double)), *qx = malloc(d * sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++)
        for (int c = 0; c < k; c++) {
            for (int i = 0; i < d; i++) xc[i] = x[p * d + i] - mu[c * d + i];
            for (int i = 0; i < d; i++) qx[i] = exp(q[c * d + i]) * xc[i];
            int pos = c * d * d;
            for (int j = 0; j < d; j++)
                for (int i = j + 1; i < d; i++) qx[i] += L[pos++] * xc[j];
            double s = 0.0;
            for (int i = 0; i < d; i++) s += qx[i] * qx[i];
            total += s;
        }
    free(xc);
    free(qx);
    return total;
}

int main(int argc, char **argv) {
    int n = atoi(argv[1]), k = atoi(argv[2]), d = atoi(argv[3]);
    double *mu = calloc(k * d, 8), *dmu = calloc(k * d, 8), *q = calloc(k * d, 8), *dq = calloc(k * d, 8);
    double *L = calloc(k * d * d, 8), *dL = calloc(k * d * d, 8), *x = calloc(n * d, 8);
    for (int i = 0; i < n * d; i++) x[i] = sin(i);
    long before = __zymase_tape_bytes;
    __enzyme_autodiff((void *)mixture, enzyme_dup, mu, dmu, enzyme_dup, q, dq, enzyme_dup, L, dL, enzyme_const, x,
                      enzyme_const, n, enzyme_const, k, enzyme_const, d);
    printf("%ld\n", __zymase_tape_bytes - before);
    return 0;
}
"""

K, D = 4, 8


def _build_counting(tmp, name: str, source: str, zymase_cli):
    """``source`` built with ``zymase cc -O2`` and ``ZYMASE_TAPE_STATS=1`` as ``tmp/name``."""
    src = tmp / f"{name}.c"
    src.write_text(source)
    exe = tmp / name
    env = dict(os.environ, ZYMASE_TAPE_STATS="1")
    build = run_cli(["cc", "-O2", str(src), "-o", str(exe)], env=env, cwd=tmp, timeout=300)
    assert build.returncode == 0, build.stderr
    return exe


@pytest.fixture(scope="module")
def program(tmp_path_factory, zymase_cli):
    return _build_counting(tmp_path_factory.mktemp("tape_bytes"), "mixture", SOURCE, zymase_cli)


def _tape_bytes(exe, n: int) -> int:
    run = subprocess.run([str(exe), str(n), str(K), str(D)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return int(run.stdout)


def test_values_the_same_across_a_loop_are_taped_once_per_iteration_of_the_others(program):
    per_point = (_tape_bytes(program, 9) - _tape_bytes(program, 1)) / 8
    needed = K * 2 * D * 8  # qx[i] and exp(q): D doubles each per (point, component)
    # plus bookkeeping (edge records, offsets and iteration counts of the inner loops: about
    # 130 bytes per (point, component)); taping xc[i] and xc[j] would add 2 D doubles, and
    # taping L per (j, i) D (D - 1) / 2 doubles
    assert needed <= per_point <= needed + K * 160, per_point


def test_tape_stores_of_loaded_values_stay_stores_not_memcpy_calls(tmp_path):
    # qx[i] is loaded for the squared norm and saved for the reverse sweep: a loop of
    # load-then-store-to-consecutive-slots, which LLVM's loop-idiom pass would make a
    # memcpy call per (point, component) (d doubles: a libc call costs more than that).
    # The only memcpy allowed is a LIFO stack's growth (byte-aligned, in its runtime); the
    # values saved once per call are in slots, so this program has no LIFO stack left.
    from zymase.frontends.c import Timings, compile_c

    src = tmp_path / "mixture.c"
    src.write_text(SOURCE[: SOURCE.index("int main")] + """
void gradient(const double *mu, double *dmu, const double *q, double *dq, const double *L, double *dL,
              const double *x, int n, int k, int d) {
    __enzyme_autodiff((void *)mixture, enzyme_dup, mu, dmu, enzyme_dup, q, dq, enzyme_dup, L, dL,
                      enzyme_const, x, enzyme_const, n, enzyme_const, k, enzyme_const, d);
}
""")
    ll, _ = compile_c(str(src), [], 2, Timings())
    copies = [line for line in ll.splitlines() if "call void @llvm.memcpy" in line]
    assert all("ptr align 1 " in c and "align 8" not in c for c in copies), copies


def test_a_row_start_the_same_for_every_point_is_kept_once_per_component_and_column(tmp_path, monkeypatch, capsys):
    # pos, where row j of component c's triangle starts, is taped when the row loop exits;
    # it is the same for every point (it comes through the join after a row loop that may
    # be skipped, decided by j + 1 < d: the same for every point too), so one slot per
    # (component, column) serves all points instead of one per (point, component, column)
    from zymase.frontends.c import Timings, compile_c

    src = tmp_path / "mixture.c"
    src.write_text(SOURCE)
    monkeypatch.setenv("ZYMASE_DEBUG_TAPE", "1")
    compile_c(str(src), ["-g"], 2, Timings())
    lines = [line for line in capsys.readouterr().err.splitlines() if "mixture.c:19:" in line and "loop exit" in line]
    assert lines and all("indexed by 2 of 3 loops" in line for line in lines), lines


TRIANGLE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
extern long __zymase_tape_bytes;

/* ADBench's shape: x - mu into a scratch, then Q (lower triangular, packed by rows) times it */
__attribute__((noinline)) static double triangle(const double *mu, const double *Q, const double *x, int n, int d) {
    double *xc = malloc(d * sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < d; i++) xc[i] = x[p * d + i] - mu[i];
        const double *row = Q;
        for (int r = 0; r < d; r++) {
            double a = 0.0;
            for (int c = 0; c <= r; c++) a += row[c] * xc[c];
            row += r + 1;
            total += a * a;
        }
    }
    free(xc);
    return total;
}

int main(int argc, char **argv) {
    int n = atoi(argv[1]), d = atoi(argv[2]);
    double *mu = calloc(d, 8), *dmu = calloc(d, 8), *Q = calloc(d * d, 8), *dQ = calloc(d * d, 8);
    double *x = calloc(n * d, 8);
    for (int i = 0; i < n * d; i++) x[i] = sin(i);
    long before = __zymase_tape_bytes;
    __enzyme_autodiff((void *)triangle, enzyme_dup, mu, dmu, enzyme_dup, Q, dQ, enzyme_const, x, enzyme_const, n,
                      enzyme_const, d);
    printf("%ld\n", __zymase_tape_bytes - before);
    return 0;
}
"""


def test_a_scratch_read_by_a_triangular_loop_is_rebuilt_not_taped(tmp_path, zymase_cli):
    # xc[c] for c <= r is what the filling loop stored at c: x - mu, rebuilt in the reverse
    # sweep (autodiff/forwarding.py, _bound_within) instead of taping d (d + 1) / 2 values
    # per point. What stays: the row sums a (d doubles per point) and about 8 bytes of
    # bookkeeping per row.
    exe = _build_counting(tmp_path, "triangle", TRIANGLE, zymase_cli)
    d = 8
    runs = [subprocess.run([str(exe), str(n), str(d)], capture_output=True, text=True, timeout=60) for n in (1, 9)]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    per_point = (int(runs[1].stdout) - int(runs[0].stdout)) / 8
    assert d * 8 <= per_point <= 2 * d * 8 + 16, per_point  # taping xc would add 288 bytes


NOTHING_TAPED = r"""
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);
extern long __zymase_tape_bytes;
double square(double x) { return x * x; }
int main(void) {
    double g = __enzyme_autodiff((void *)square, 3.0);
    printf("%g %ld\n", g, __zymase_tape_bytes);
    return g != 6.0 || __zymase_tape_bytes != 0;
}
"""


def test_the_counter_links_when_no_derivative_tapes_anything(tmp_path, zymase_cli):
    # the counter used to be defined only along with the tape runtime: reading it in a
    # program whose derivatives tape nothing failed to link
    exe = _build_counting(tmp_path, "square", NOTHING_TAPED, zymase_cli)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.split() == ["6", "0"], run.stdout + run.stderr


def test_arguments_are_reread_although_lgamma_sets_signgam(tmp_path):
    # lgamma writes the int signgam, which no argument shows: that made every argument
    # count as written, and the GMM loop nest taped L per (point, component, entry) and
    # x - mu twice over. tests/c/memory/lgamma_rereads.c bounds the bytes per (point,
    # component) itself when built with -DCOUNT_TAPE (and checks the gradient)
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "c" / "memory" / "lgamma_rereads.c"
    exe = tmp_path / "lgamma_rereads"
    env = dict(os.environ, ZYMASE_TAPE_STATS="1")
    build = run_cli(["cc", "-O2", "-DCOUNT_TAPE", str(src), "-o", str(exe)], env=env, cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("level", [0, 2])
def test_lagged_induction_variables_are_rebuilt_not_taped(level, monkeypatch, capsys):
    # LLVM turns `for (i = 0; i + 1 < n; i++)` into two header phis, i taking the value
    # i + 1 had one iteration late, and `prev = i` at the end of a body is such a lagged
    # variable too (with its own start): the reverse sweep rebuilds both from its
    # iteration count (counted_loops._lagged_induction), and with them the addresses of
    # x[i] and x[prev], which it then re-reads: Rosenbrock's gradient and its HVP tape
    # nothing (they taped i and x[i] per iteration: 16 bytes, the HVP's forward sweep 24)
    from pathlib import Path

    from zymase.frontends.c import Timings, compile_c

    src = Path(__file__).resolve().parents[1] / "c" / "nested" / "lagged_inductions.c"
    monkeypatch.setenv("ZYMASE_DEBUG_TAPE", "1")
    compile_c(str(src), [], level, Timings())
    taped = [line for line in capsys.readouterr().err.splitlines() if "tape:" in line]
    assert taped == [], taped
