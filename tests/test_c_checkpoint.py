"""Checkpointing under a tape limit (issue 27 item 4): time loops reversed by binomial
checkpointing give the gradient of the unlimited build, within the memory the limit
allows, and a loop whose state cannot be bounded is refused under a limit.

tests/c/checkpoint/time_loops.c holds a loop with an inner loop over swapped buffers, a
loop carrying registers and a local array together, both with a trip count known only at
run time; it checks every gradient against finite differences itself and prints them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from c_harness import builds
from forking_cli import run_cli

PROGRAM = Path(__file__).parent / "c" / "checkpoint" / "time_loops.c"
# per level, the limits built: 4K leaves room for a handful of snapshots (many
# recomputations), 1M for about a thousand at 100,000 steps; unlimited is the reference
LIMITS = {"-O0": ("4K",), "-O2": ("4K", "1M")}


def _build(flags: list[str], limit: str | None, tmp_path: Path) -> Path:
    exe = tmp_path / f"time_loops_{limit or 'unlimited'}"
    extra = [f"--tape-limit={limit}"] if limit else []
    build = run_cli(["cc", *flags, *extra, str(PROGRAM), "-o", str(exe), "-lm"], cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    return exe


def _run(exe: Path, nsteps: int) -> tuple[list[float], int]:
    run = subprocess.run([str(exe), str(nsteps)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr  # the finite-difference checks
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    grads = [float.fromhex(x) for x in lines["grad"].split()]
    return grads, int(lines["peak_rss_kib"])


def _refusal(tmp_path: Path, name: str, text: str, flags: list[str], *others: Path) -> str:
    """The one error line of building C program ``text`` (written to ``name``, with the
    sources ``others``) with ``flags``, which must be refused."""
    src = tmp_path / name
    src.write_text(text.lstrip())
    out = run_cli(["cc", *flags, str(src), *map(str, others), "-o", str(tmp_path / "refused"), "-lm"], cwd=tmp_path,
                  timeout=300)
    assert out.returncode == 1, out.stderr
    line = out.stderr.strip()
    assert line.startswith("zymase: error: ") and "\n" not in line and "hint:" in line, line
    return line


def _checkpointed(tmp_path: Path, name: str, text: str, level: str) -> Path:
    """The executable of C program ``text`` (written to ``name``) built at ``level`` under
    a 1K tape limit, which must build with a checkpointed loop."""
    src, exe = tmp_path / name, tmp_path / Path(name).stem
    src.write_text(text.lstrip())
    out = run_cli(["cc", level, "--tape-limit=1K", str(src), "-o", str(exe), "-lm"], cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert b"zymase: checkpointing: " in exe.read_bytes()  # (the runtime is linked only then)
    return exe


# issue 27 item 4: checkpointed gradients at several limits against the unlimited gradient
# (a loop with an inner loop, registers and an array carried together, trip counts known at
# run time), and peak memory measured (the program's own high-water mark, VmHWM) under the
# limit plus the snapshots where the unlimited tape takes tens of MB
@pytest.mark.parametrize("flags", builds("-O0", "-O2"), ids=lambda f: "".join(x.lstrip("-") for x in f))
def test_checkpointed_time_loops_match_unlimited_gradient(flags, tmp_path):
    limits = LIMITS.get(" ".join(flags), ("4K",))
    reference = _build(flags, None, tmp_path)
    limited = {limit: _build(flags, limit, tmp_path) for limit in limits}
    want, _ = _run(reference, 3000)
    got = {limit: _run(exe, 3000)[0] for limit, exe in limited.items()}
    for limit in limits:
        # recomputation is deterministic: every limit (every schedule) gives the same bits
        assert got[limit] == got[limits[0]]
        # against the unlimited build only the order of the sums over the iterations differs
        for g, w in zip(got[limit], want):
            assert g == pytest.approx(w, rel=1e-12, abs=1e-15)
    if "1M" in limited:
        want, rss_unlimited = _run(reference, 100_000)
        got, rss_limited = _run(limited["1M"], 100_000)
        for g, w in zip(got, want):
            assert g == pytest.approx(w, rel=1e-12, abs=1e-15)
        assert rss_unlimited > 30_000
        # the program (~1.5 MB) + 1 MiB: half for the snapshots, half for one iteration's tape
        assert rss_limited < 4_000


WIDTH_PROGRAM = Path(__file__).parent / "c" / "checkpoint" / "width.c"


def _build_and_run(sources: list[Path], flags: list[str], limit: str, tmp_path: Path, *args: str):
    """The program built under ``--tape-limit=limit`` (which must succeed), then run."""
    exe = tmp_path / sources[0].stem
    build = run_cli(["cc", *flags, f"--tape-limit={limit}", *map(str, sources), "-o", str(exe), "-lm"], cwd=tmp_path,
                    timeout=300)
    assert build.returncode == 0, build.stderr
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


# issue 25 item 2: reverse mode at width N through checkpointed loops (one schedule for all
# lanes): each lane against width 1 and finite differences, in the program itself
@pytest.mark.parametrize("flags", builds("-O0", "-O2"), ids=lambda f: "".join(x.lstrip("-") for x in f))
def test_checkpointed_time_loops_in_vector_mode(flags, tmp_path):
    run = _build_and_run([WIDTH_PROGRAM], flags, "4K", tmp_path, "300")
    assert run.returncode == 0 and run.stdout.strip().endswith("0 failures"), run.stdout + run.stderr


END_POINTERS = Path(__file__).parent / "c" / "checkpoint" / "end_pointers.c"


# session 29: a carried pointer one past the end of a stored-to local array, which on the
# stack was the start of the next one, was taken for a pointer into the next (its shadow
# rebuilt as the next one's: d/dx 0.057 for 0.720 at -O2, 0.012 without preopt); the
# stored-to stack objects of a checkpointed loop now have room after them (arrays of a
# fixed and of a run-time size). Values against finite differences in the program
@pytest.mark.parametrize("flags", builds("-O2", "-O2 --no-preopt"), ids=lambda f: "".join(x.lstrip("-") for x in f))
def test_end_pointer_of_adjacent_local_array_keeps_its_shadow(flags, tmp_path):
    run = _build_and_run([END_POINTERS], flags, "1K", tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


SIDE_BY_SIDE = [Path(__file__).parent / "c" / "checkpoint" / name
                for name in ("side_by_side_heap.c", "side_by_side_malloc.c")]


# session 29: heap blocks are not padded; two stored-to ones side by side (an allocator
# without headers) make a carried pointer at their boundary ambiguous: the runtime stops
# with one error line naming the function rather than guess (the guess was d/dx 0.050 for
# 1.385, silently)
def test_pointer_at_the_boundary_of_adjacent_heap_blocks_is_refused_at_run_time(tmp_path):
    run = _build_and_run(SIDE_BY_SIDE, ["-O2"], "1K", tmp_path)
    assert run.returncode != 0 and "FAIL" not in run.stdout and "ok" not in run.stdout, run.stdout + run.stderr
    line = run.stderr.strip()
    assert line.startswith("zymase: error: a checkpointed loop carries a pointer") and "\n" not in line
    assert "function 'ends'" in line and "hint:" in line


REFUSED = r"""
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
double relax(double *x, int n, int steps) {
    for (int s = 0; s < steps; s++)
        for (int i = 1; i < n; i++)
            x[i] = 0.5 * (x[i] + x[i - 1] * x[i - 1]);
    return x[n - 1];
}
int main(void) {
    double x[4] = {1, 2, 3, 4}, dx[4] = {0};
    __enzyme_autodiff((void *)relax, enzyme_dup, x, dx, enzyme_const, 4, enzyme_const, 10);
    return 0;
}
"""


# issue 27 item 4: a loop whose state the analysis cannot bound (it writes through a pointer
# argument of unknown extent) is one clear error under a limit, naming the loop's line;
# without a limit the same program builds
def test_unbounded_loop_state_is_refused_under_a_limit(tmp_path):
    src = tmp_path / "relax.c"
    src.write_text(REFUSED.lstrip())
    out = run_cli(["cc", "-O2", "--tape-limit=1M", str(src), "-o", str(tmp_path / "relax")], cwd=tmp_path, timeout=300)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert lines[0].startswith("zymase: error: ")
    assert lines[0].startswith("zymase: error: relax.c:4:")  # the time loop's line
    assert "cannot be checkpointed" in lines[0] and "pointer argument" in lines[0]
    assert "function 'relax'" in lines[0] and "hint:" in lines[0]
    ok = run_cli(["cc", "-O2", str(src), "-o", str(tmp_path / "relax")], cwd=tmp_path, timeout=300)
    assert ok.returncode == 0, ok.stderr


WALK = r"""
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
double walk(const double *x, int n) {
    double s = 0.0;
    for (const double *p = x; p < x + n; p += 2)
        s += p[0] * p[1];
    return s;
}
int main(void) {
    double x[6] = {1, 2, 3, 4, 5, 6}, dx[6] = {0};
    __enzyme_autodiff((void *)walk, enzyme_dup, x, dx, enzyme_const, 6);
    return dx[0] == 2.0 ? 0 : 1;
}
"""


# issue 27 item 4: a pointer the loop carries into memory it does not store to would keep a
# stale shadow across the checkpoints (the forward sweep's steps are primal): refused
# (found wrong, not refused, in tests/c/memory/loop_counts.c and pointer_walks.c)
def test_pointer_walk_into_unwritten_memory_is_refused_under_a_limit(tmp_path):
    line = _refusal(tmp_path, "walk.c", WALK, ["-O2", "--tape-limit=4K"])
    assert "walk.c:5:" in line and "carries a pointer" in line and "function 'walk'" in line


OVERWRITTEN = r"""
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
double f(double *x, double a, int n) {
    double t = 0.0;
    for (int i = 0; i < n; i++)
        t += x[i] * a * a;
    x[2] = a;
    return t;
}
int main(int argc, char **argv) {
    (void)argv;
    double x[8] = {0.5, -1.0, 2.0, 1.5, -0.5, 1.0, 0.25, 3.0}, dx[8] = {0};
    double da = __enzyme_autodiff((void *)f, enzyme_dup, x, dx, 1.5, argc + 5);
    return da > 0 ? 0 : 1;
}
"""


# a checkpointed loop's reverse sweep recomputes its iterations from the memory it only
# reads as that memory is then; here x[2] is overwritten after the loop, and d/da came out
# 3.43 instead of 2.90 (fuzz --lang c-ckpt seed 940001): refused until such memory is
# snapshotted too
@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_loop_reading_memory_written_after_it_is_refused_under_a_limit(level, tmp_path):
    line = _refusal(tmp_path, "overwritten.c", OVERWRITTEN, [level, "--tape-limit=1K"])
    assert "overwritten.c:5:" in line and "written after it" in line and "function 'f'" in line


ALIASED = r"""
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
double g(double *RESTRICT x, double *RESTRICT y, double a, int n) {
    double t = 0.0;
    for (int i = 0; i < n; i++)
        t += x[i] * a * a;
    y[2] = a;
    return t;
}
int main(int argc, char **argv) {
    (void)argv;
    double x[8] = {0.5, -1.0, 2.0, 1.5, -0.5, 1.0, 0.25, 3.0}, dx[8] = {0}, y[8] = {0}, dy[8] = {0};
    double da = __enzyme_autodiff((void *)g, enzyme_dup, x, dx, enzyme_dup, y, dy, 1.5, argc + 5);
    return da > 0 ? 0 : 1;
}
"""


# the same with the store through another pointer argument: the caller may pass x as y,
# so it is refused unless the arguments are restrict
def test_loop_reading_an_argument_another_may_write_after_it(tmp_path):
    for restrict, refused in (("", True), ("restrict", False)):
        src = tmp_path / "aliased.c"
        src.write_text(ALIASED.replace("RESTRICT", restrict).lstrip())
        out = run_cli(["cc", "-O2", "--tape-limit=1K", str(src), "-o", str(tmp_path / "a")], cwd=tmp_path, timeout=300)
        assert (out.returncode == 1) == refused, out.stderr
        if refused:
            assert "written after it" in out.stderr and "function 'g'" in out.stderr


# the write after the loop made by a call with a rule (BLAS's dscal scaling x in place):
# without the refusal d/da came out 21 instead of 10.5
def test_loop_reading_memory_a_blas_call_writes_after_it_is_refused(tmp_path):
    src = tmp_path / "scaled.c"
    src.write_text(OVERWRITTEN.replace("x[2] = a;", "cblas_dscal(n, 2.0, x, 1);").replace(
        "extern int enzyme_dup", "extern void cblas_dscal(int, double, double *, int);\nextern int enzyme_dup").lstrip())
    out = run_cli(["cc", "-O2", "--tape-limit=1K", "-c", str(src), "-o", str(tmp_path / "s.o")], cwd=tmp_path,
                  timeout=300)
    assert out.returncode == 1, out.stderr
    assert "written after it" in out.stderr and "function 'f'" in out.stderr


UNKNOWN_READ = r"""
#include <math.h>
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
struct view { double *data; int n; };
double f(struct view *v, double *x, double a) {
    double *q = v->data;
    double t = 0.0;
    for (int i = 0; i < v->n; i++)
        t += q[i] * a * a;
    AFTER
    return t;
}
static double primal(double a) {
    double x[8] = {0.5, -1.0, 2.0, 1.5, -0.5, 1.0, 0.25, 3.0};
    struct view v = {x, 6};
    return f(&v, x, a);
}
int main(void) {
    double x[8] = {0.5, -1.0, 2.0, 1.5, -0.5, 1.0, 0.25, 3.0}, dx[8] = {0};
    struct view v = {x, 6}, dv = {dx, 6};
    double da = __enzyme_autodiff((void *)f, enzyme_dup, &v, &dv, enzyme_dup, x, dx, 1.5);
    double h = 1e-6, fd = (primal(1.5 + h) - primal(1.5 - h)) / (2 * h);
    return fabs(da - fd) < 1e-6 * fabs(fd) ? 0 : 1;
}
"""


# the same through a pointer loaded from memory (q = v->data: the analysis cannot tell
# which object it points into, so the reads were not seen) into the array x that is
# overwritten after the loop: d/da came out 9 instead of 10.5 at -O2. Refused now; without
# the write after the loop it is checkpointed and right
@pytest.mark.parametrize("after, refused", [("x[2] = a;", True), ("", False)], ids=["overwritten", "unchanged"])
def test_loop_reading_through_an_unknown_pointer_memory_written_after_it(after, refused, tmp_path):
    program = UNKNOWN_READ.replace("AFTER", after)
    if refused:
        line = _refusal(tmp_path, "unknown.c", program, ["-O2", "--tape-limit=1K"])
        assert "unknown.c:8:" in line and "function 'f'" in line
        assert "through a pointer whose object the analysis cannot determine is written after it" in line
    else:
        exe = _checkpointed(tmp_path, "unknown.c", program, "-O2")
        assert subprocess.run([str(exe)], timeout=60).returncode == 0  # d/da against the difference


GLOBAL_RESET = r"""
#include <math.h>
extern double __enzyme_autodiff(void *, ...);
double G[8] = {0.5, -1.0, 2.0, 1.5, -0.5, 1.0, 0.25, 3.0};
extern void reset(void);
double f(double a, int n) {
    double t = 0.0;
    for (int i = 0; i < n; i++)
        t += G[i] * a * a;
    reset();
    return t;
}
int main(int argc, char **argv) {
    (void)argv;
    double a = 1.5, h = 1e-6;
    double da = __enzyme_autodiff((void *)f, a, argc + 5);
    G[2] = 2.0;
    double up = f(a + h, argc + 5);
    G[2] = 2.0;
    double fd = (up - f(a - h, argc + 5)) / (2 * h);
    return fabs(da - fd) < 1e-6 * fabs(fd) ? 0 : 1;
}
"""


# a call after the loop that writes a global the loop reads without being given its address
# (reset(), defined in another file): only pointer operands were counted, and d/da came out
# 25.5 (the reset G[2]) instead of 10.5 at -O0 and -O2
def test_loop_reading_a_global_a_call_writes_after_it_is_refused(tmp_path):
    other = tmp_path / "reset.c"
    other.write_text("extern double G[8];\nvoid reset(void) { G[2] = 7.0; }\n")
    # compiled apart (an object file), so that reset() stays out of sight: given as a
    # source, zymase cc would differentiate the two files together (frontends/c.compile_linked)
    # and refuse the loop for the store it then sees
    from zymase.llvm import toolchain

    subprocess.run([*toolchain.find_clang().argv, "-c", "-O2", str(other), "-o", str(tmp_path / "reset.o")],
                   check=True)
    line = _refusal(tmp_path, "glob.c", GLOBAL_RESET, ["-O2", "--tape-limit=1K"], tmp_path / "reset.o")
    assert "glob.c:7:" in line and "written after it" in line and "call @reset" in line and "function 'f'" in line


VLA_IN_BRANCHES = r"""
#include <math.h>
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
double f(double *x, int n) {
    double acc = 0.5;
    if (x[0] < 0.25) {
        for (int i = 0; i < n; i++)
            acc += 0.5 * x[2];
    }
    double v[n];
    for (int i = 0; i < n; i++)
        v[i] = sin(x[i] * (i + 1));
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += v[i] * v[(i + 1) % n];
    return acc + s * x[1];
}
int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 5, bad = 0;
    for (int p = 0; p < 2; p++) {
        double x[6] = {p ? 0.1 : 0.7, -1.0, 2.0, 1.5, -0.5, 1.0}, dx[6] = {0};
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n);
        for (int j = 0; j < n; j++) {
            double h = 1e-6, w[6];
            for (int i = 0; i < 6; i++) w[i] = x[i];
            w[j] += h; double up = f(w, n); w[j] -= 2 * h; double dn = f(w, n);
            double fd = (up - dn) / (2 * h);
            if (!(fabs(dx[j] - fd) < 1e-6 * (1 + fabs(fd)))) { printf("point %d d/dx%d %.12g fd %.12g\n", p, j, dx[j], fd); bad = 1; }
        }
    }
    printf("%s\n", bad ? "FAIL" : "ok");
    return bad;
}
"""


# clang -O2 allocates the variable-length array v in both branches of the if (jump
# threading), so neither alloca dominates the loop filling it: the call replacing the loop,
# which passes every object it stores to, gave invalid IR ("Instruction does not dominate
# all uses!", fuzz c-ckpt seed 940602). Each such object now reaches the call through local
# variables (null and size 0 on the other path); the gradient against central differences
# at both points (one through each branch)
def test_loop_storing_into_an_array_allocated_on_some_paths(tmp_path):
    exe = _checkpointed(tmp_path, "vla.c", VLA_IN_BRANCHES, "-O2")
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout


INDIRECT_AFTER = r"""
#include <math.h>
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
static double h1(double a) { return a * a; }
static double h2(double a) { return 2.0 * a; }
double f(double *x, double a, int n) {
    double t = 0.0;
    for (int i = 0; i < n; i++)
        t += x[i] * a * a;
    double (*fp)(double) = t > 1.0 ? h1 : h2;
    return fp(t) + lgamma(a);
}
int main(int argc, char **argv) {
    (void)argv;
    double x[8] = {0.5, -1.0, 2.0, 1.5, -0.5, 1.0, 0.25, 3.0}, dx[8] = {0};
    double a = 1.5, h = 1e-6;
    double da = __enzyme_autodiff((void *)f, enzyme_dup, x, dx, a, argc + 5);
    double fd = (f(x, a + h, argc + 5) - f(x, a - h, argc + 5)) / (2 * h);
    return fabs(da - fd) < 1e-6 * fabs(fd) ? 0 : 1;
}
"""


# what must stay accepted: after a loop reading the argument x, an indirect call, whose
# lowering has an error exit (write to stderr, abort) that may write memory the loop reads
# but never returns, so never runs before the reverse sweep (fuzz c-ckpt seed 950074 at -O0
# was refused while the check counted it); lgamma, which writes signgam only (the bench's
# gmm was refused while it counted as writing any global)
def test_loop_followed_by_calls_that_write_nothing_it_reads_is_checkpointed(tmp_path):
    exe = _checkpointed(tmp_path, "after.c", INDIRECT_AFTER, "-O0")
    assert subprocess.run([str(exe)], timeout=60).returncode == 0  # d/da against the difference


TWO_TIME_LOOPS = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
#define N 6
double evolve(double D, const double *u0, int nsteps) {
    double *u = malloc(sizeof(double) * N);
    double *v = malloc(sizeof(double) * N);
    memcpy(u, u0, sizeof(double) * N);
    for (int s = 0; s < nsteps; s++) {
        for (int i = 0; i < N; i++) {
            double l = i > 0 ? u[i - 1] : u[i], r = i < N - 1 ? u[i + 1] : u[i];
            v[i] = u[i] + 1e-2 * (D * (l - 2.0 * u[i] + r) + u[i] * (1.0 - u[i]));
        }
        double *t = u; u = v; v = t;
    }
    for (int s = 0; s < nsteps; s++)
        for (int i = 0; i < N; i++)
            u[i] = u[i] + 1e-2 * sin(u[i] * D);
    double out = 0.0;
    for (int i = 0; i < N; i++)
        out += u[i] * u[i] * (i + 1);
    free(u);
    free(v);
    return out;
}
int main(int argc, char **argv) {
    int ns = argc > 1 ? atoi(argv[1]) : 50;
    double u0[N] = {0.1, 0.5, 0.3, 0.9, 0.2, 0.7}, du0[N] = {0};
    double D = 0.8;
    double dD = __enzyme_autodiff((void *)evolve, D, enzyme_dup, u0, du0, enzyme_const, ns);
    int bad = 0;
    double h = 1e-6, fd = (evolve(D + h, u0, ns) - evolve(D - h, u0, ns)) / (2 * h);
    bad |= !(fabs(dD - fd) < 1e-6 * (1 + fabs(fd)));
    for (int j = 0; j < N; j++) {
        double w[N]; memcpy(w, u0, sizeof w);
        w[j] += h; double up = evolve(D, w, ns); w[j] -= 2 * h; double dn = evolve(D, w, ns);
        double f = (up - dn) / (2 * h);
        bad |= !(fabs(du0[j] - f) < 1e-6 * (1 + fabs(f)));
    }
    printf("dD %.15g fd %.15g bad %d\n", dD, fd, bad);
    return bad;
}
"""


# a second time loop updating the buffer the first one left in u (its pointer read back from
# the first loop's record, known to point into the swapped buffers) was refused ("stores
# through a pointer whose object the analysis cannot determine"); both are checkpointed
# now, every derivative against central differences, with recomputation (500 steps) and
# without (7) (at -O0 too, checked by hand: the suite's budget)
def test_second_time_loop_over_the_buffers_the_first_swapped(tmp_path):
    exe = _checkpointed(tmp_path, "two.c", TWO_TIME_LOOPS, "-O2")
    for steps in ("500", "7"):
        run = subprocess.run([str(exe), steps], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stdout


def test_tape_limit_flag_rejects_a_bad_size(tmp_path):
    src = tmp_path / "relax.c"
    src.write_text(REFUSED)
    out = run_cli(["cc", "--tape-limit=lots", str(src)], cwd=tmp_path, timeout=60)
    assert out.returncode == 1
    assert out.stderr.strip() == ("zymase: error: --tape-limit: 'lots' is not a size; hint: give a positive "
                                  "number of bytes with an optional unit, e.g. 16M or 1G")


UNOPTIMIZED = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
#define NCELL 4
/* u and v swapped through local pointer variables, D and the constant w read through
   theirs: without preopt every one of them is an alloca slot */
double rd(double D, const double *u0, const double *w, int nsteps) {
    double *u = malloc(sizeof(double) * NCELL);
    double *v = malloc(sizeof(double) * NCELL);
    memcpy(u, u0, sizeof(double) * NCELL);
    for (int s = 0; s < nsteps; s++) {
        for (int i = 0; i < NCELL; i++)
            v[i] = u[i] + 0.1 * (D * (u[(i + 1) % NCELL] - u[i]) * w[i] + u[i] * (1.0 - u[i]));
        double *t = u;
        u = v;
        v = t;
    }
    double out = 0.0;
    for (int i = 0; i < NCELL; i++)
        out += w[i] * u[i];
    free(u);
    free(v);
    return out;
}
/* the same swap with a dup input and a constant trip count */
double swap(double D, const double *u0, int nsteps) {
    double *u = malloc(sizeof(double) * NCELL);
    double *v = malloc(sizeof(double) * NCELL);
    memcpy(u, u0, sizeof(double) * NCELL);
    for (int s = 0; s < nsteps; s++) {
        for (int i = 0; i < NCELL; i++)
            v[i] = u[i] + D * u[(i + 1) % NCELL] * u[i];
        double *t = u;
        u = v;
        v = t;
    }
    double out = u[0];
    free(u);
    free(v);
    return out;
}
/* v copied back into u (no swap): u and v only read from their slots, u freed through its
   slot after the loop (the free must wait for the reverse sweep) */
double copyback(double D, const double *u0, int nsteps) {
    double *u = malloc(sizeof(double) * NCELL);
    double *v = malloc(sizeof(double) * NCELL);
    memcpy(u, u0, sizeof(double) * NCELL);
    for (int s = 0; s < nsteps; s++) {
        for (int i = 0; i < NCELL; i++)
            v[i] = u[i] + 0.1 * D * (u[(i + 1) % NCELL] - u[i]);
        memcpy(u, v, sizeof(double) * NCELL);
    }
    double out = u[0] * u[1];
    free(u);
    free(v);
    return out;
}
int main(void) {
    double u0[NCELL] = {0.1, 0.2, 0.3, 0.4}, du0[NCELL] = {0}, w[NCELL] = {1.0, 0.5, 2.0, 1.5};
    double gc = __enzyme_autodiff((void *)copyback, 0.7, enzyme_const, u0, enzyme_const, 30);
    double fc = (copyback(0.7 + 1e-6, u0, 30) - copyback(0.7 - 1e-6, u0, 30)) / 2e-6;
    printf("copyback d/dD %.12g fd %.12g\n", gc, fc);
    int n = 40, bad = !(gc - fc < 1e-6 && fc - gc < 1e-6);
    double du[NCELL] = {0};
    double gs = __enzyme_autodiff((void *)swap, 0.3, enzyme_dup, u0, du, enzyme_const, 10);
    double fs = (swap(0.3 + 1e-6, u0, 10) - swap(0.3 - 1e-6, u0, 10)) / 2e-6;
    bad += !(gs - fs < 1e-6 && fs - gs < 1e-6);
    printf("swap d/dD %.12g fd %.12g\n", gs, fs);
    double g = __enzyme_autodiff((void *)rd, 0.3, enzyme_dup, u0, du0, enzyme_const, w, enzyme_const, n);
    const double h = 1e-6;
    double fd = (rd(0.3 + h, u0, w, n) - rd(0.3 - h, u0, w, n)) / (2 * h);
    bad += !(g - fd < 1e-6 && fd - g < 1e-6);
    printf("d/dD %.12g fd %.12g\n", g, fd);
    for (int i = 0; i < NCELL; i++) {
        double keep = u0[i];
        u0[i] = keep + h;
        double fp = rd(0.3, u0, w, n);
        u0[i] = keep - h;
        double fm = rd(0.3, u0, w, n);
        u0[i] = keep;
        bad += !(du0[i] - (fp - fm) / (2 * h) < 1e-6 && (fp - fm) / (2 * h) - du0[i] < 1e-6);
        printf("d/du0[%d] %.12g fd %.12g\n", i, du0[i], (fp - fm) / (2 * h));
    }
    return bad;
}
"""


# session 29: without preopt (`--no-preopt`, Enzyme's "AD before optimization") a time loop
# keeps its pointers in local variables (alloca slots): the analysis follows a pointer
# loaded from one to the pointers stored into it, the runtime rebuilds the shadows of the
# slots the loop stores to, and a slot holding only a constant argument's pointer is
# constant memory, and a free through a slot frees the allocation itself (kept alive for
# the reverse sweep). A slot the loop only reads (D's) keeps the shadow the caller stored:
# rebuilt as the stored-to slots are, it was taken for a pointer one past the end of the
# slot just before it on the stack (d/dD 0). Refused before ("a pointer whose object the
# analysis cannot determine"); values against finite differences in the program
def test_unoptimized_time_loop_keeps_pointers_in_local_variables(tmp_path):
    src = tmp_path / "rd.c"
    src.write_text(UNOPTIMIZED.lstrip())
    exe = tmp_path / "rd"
    build = run_cli(["cc", "-O2", "--no-preopt", "--tape-limit=1K", str(src), "-o", str(exe)], cwd=tmp_path,
                    timeout=300)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
