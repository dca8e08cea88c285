"""MPI in C (issue 27 items 3 and 5): `zymase cc` differentiates programs that call Open MPI.
The self-checking programs in tests/c/mpi (blocking point-to-point, collectives, non-blocking
point-to-point; vector mode, issue 25 item 2, in width.c) are built at -O0 and -O2 with the
flags of `mpicc --showme` and run under `mpirun -np 2` and `-np 3`; each rank checks its own
part of the global gradient. Every mpirun has a timeout, and a timeout kills the whole job: a
derivative message without its partner must fail a test, not hang the suite
(test_unmatched_adjoint_receive_times_out).
Then the refusals: MPI calls without a rule on floating-point data, one-sided
communication, other reductions and datatypes stop the build with one `zymase: error:`
line naming the call and its source line."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from c_harness import COMPILE_TIMEOUT, builds
from forking_cli import run_cli

# Open MPI is a system package (openmpi-bin, libopenmpi-dev: .ci/run installs them)
pytestmark = pytest.mark.skipif(shutil.which("mpicc") is None or shutil.which("mpirun") is None,
                                reason="Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev)")

_C = Path(__file__).resolve().parent / "c" / "mpi"
# lanes_once.c (width 4, its MPI calls counted) is built once, at -O0, by
# test_mpi_lanes_travel_in_one_message, which runs its checks too: the lanes-at-once code
# it exercises is width.c's at -O0 and -O2 (widths 2 and 3), and the suite's time is short
PROGRAMS = sorted(p for p in _C.glob("*.c") if p.stem != "lanes_once")
LEVELS = builds("-O0", "-O2")
RANKS = (2, 3)
MPI_TIMEOUT = 60


def mpi_flags() -> list[str]:
    """The include and link flags Open MPI's compiler wrapper adds (`mpicc --showme`)."""
    out = []
    for part in ("compile", "link"):
        out += subprocess.run(["mpicc", f"--showme:{part}"], capture_output=True, text=True, check=True).stdout.split()
    return out


def _session_processes(sid: int) -> list[int]:
    """The live (not zombie) processes of session ``sid``: mpirun and its ranks (Open MPI
    gives each rank a process group of its own, in mpirun's session)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            pids.append(int(stat.parent.name))
    return pids


def run_mpi(exe: Path, ranks: int, timeout: float, args: tuple[str, ...] = (),
            preload: Path | None = None) -> subprocess.CompletedProcess | None:
    """Run ``exe`` (with ``args``) on ``ranks`` processes, ``preload`` in LD_PRELOAD; None
    when it did not finish within ``timeout`` seconds, after stopping mpirun (SIGTERM: it
    kills its ranks) and killing whatever of its session is left."""
    env = ["-x", f"LD_PRELOAD={preload}"] if preload else []
    argv = ["mpirun", "--allow-run-as-root", "--oversubscribe", *env, "-np", str(ranks), str(exe), *args]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True, cwd=exe.parent)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for pid in _session_processes(proc.pid):
            os.kill(pid, signal.SIGKILL)
        proc.wait()
        return None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def test_corpus_is_there():
    assert {p.stem for p in PROGRAMS} == {"point_to_point", "collectives", "nonblocking", "width"}
    assert (_C / "lanes_once.c").is_file()


#: a PMPI shim preloaded into every rank: counts the MPI calls that move data (the program's
#: and the derivative runtime's alike), reported by each rank at MPI_Finalize
MPI_COUNTER = r"""
#include <mpi.h>
#include <stdio.h>
enum { SEND, RECV, SENDRECV, ISEND, IRECV, BCAST, REDUCE, ALLREDUCE, CALLS };
static const char *names[CALLS] = {"MPI_Send", "MPI_Recv", "MPI_Sendrecv", "MPI_Isend", "MPI_Irecv", "MPI_Bcast",
                                   "MPI_Reduce", "MPI_Allreduce"};
static long counts[CALLS];
int MPI_Send(const void *b, int n, MPI_Datatype t, int d, int g, MPI_Comm c) {
    counts[SEND]++;
    return PMPI_Send(b, n, t, d, g, c);
}
int MPI_Recv(void *b, int n, MPI_Datatype t, int s, int g, MPI_Comm c, MPI_Status *st) {
    counts[RECV]++;
    return PMPI_Recv(b, n, t, s, g, c, st);
}
int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype st, int d, int sg, void *rb, int rn, MPI_Datatype rt, int s,
                 int rg, MPI_Comm c, MPI_Status *status) {
    counts[SENDRECV]++;
    return PMPI_Sendrecv(sb, sn, st, d, sg, rb, rn, rt, s, rg, c, status);
}
int MPI_Isend(const void *b, int n, MPI_Datatype t, int d, int g, MPI_Comm c, MPI_Request *r) {
    counts[ISEND]++;
    return PMPI_Isend(b, n, t, d, g, c, r);
}
int MPI_Irecv(void *b, int n, MPI_Datatype t, int s, int g, MPI_Comm c, MPI_Request *r) {
    counts[IRECV]++;
    return PMPI_Irecv(b, n, t, s, g, c, r);
}
int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c) {
    counts[BCAST]++;
    return PMPI_Bcast(b, n, t, root, c);
}
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c) {
    counts[REDUCE]++;
    return PMPI_Reduce(s, r, n, t, o, root, c);
}
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c) {
    counts[ALLREDUCE]++;
    return PMPI_Allreduce(s, r, n, t, o, c);
}
int MPI_Finalize(void) {
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < CALLS; i++)
        printf("mpi-count rank %d %s %ld\n", rank, names[i], counts[i]);
    fflush(stdout);
    return PMPI_Finalize();
}
"""


def test_mpi_lanes_travel_in_one_message(tmp_path: Path):
    """Width 4 (issue 25 item 2): lanes_once.c's lanes against width-1 calls and central
    differences on 2 and 3 ranks, and each rank makes as many MPI calls in the derivative as
    at width 1, one message per primal message carrying the 4 lanes, forward and reverse
    (halo exchange by MPI_Sendrecv and MPI_Isend/MPI_Irecv/MPI_Waitall, a Sendrecv with
    MPI_PROC_NULL ends, MPI_Bcast, MPI_Allreduce with MPI_SUM and MPI_MAX, MPI_Reduce);
    before, 4 times width 1's."""
    exe = tmp_path / "lanes_once"
    build = run_cli(["cc", "-O0", str(_C / "lanes_once.c"), *mpi_flags(), "-o", str(exe)], cwd=tmp_path,
                    timeout=COMPILE_TIMEOUT)
    assert build.returncode == 0, build.stderr
    for ranks in RANKS:
        run = run_mpi(exe, ranks, MPI_TIMEOUT)
        assert run is not None, f"lanes_once.c on {ranks} ranks did not finish in {MPI_TIMEOUT} s"
        failed = [line for line in run.stdout.splitlines() if line.startswith("FAIL")][:20]
        assert run.returncode == 0 and "0 failures" in run.stdout, f"{ranks} ranks:\n" + "\n".join(failed) + run.stderr
    shim = tmp_path / "mpi_counter.so"
    (tmp_path / "mpi_counter.c").write_text(MPI_COUNTER)
    subprocess.run(["mpicc", "-shared", "-fPIC", "-O1", str(tmp_path / "mpi_counter.c"), "-o", str(shim)],
                   check=True, timeout=120)

    def counts(mode: str) -> dict[tuple[int, str], int]:
        run = run_mpi(exe, 2, MPI_TIMEOUT, args=(mode,), preload=shim)
        assert run is not None and run.returncode == 0, (mode, run and run.stderr)
        found = re.findall(r"mpi-count rank (\d+) (\w+) (\d+)", run.stdout)
        assert len(found) == 16, run.stdout
        return {(int(r), name): int(n) for r, name, n in found}

    primal = counts("primal")
    assert all(primal[r, call] == 1 for r in (0, 1) for call in ("MPI_Isend", "MPI_Irecv")), primal
    assert primal[0, "MPI_Sendrecv"] == 2, primal
    for mode in ("fwd", "rev"):
        one, four = counts(f"{mode}1"), counts(f"{mode}4")
        assert all(one[key] > primal[key] for key in primal if primal[key]), (mode, primal, one)  # derivative messages
        assert four == one, (mode, one, four)


@pytest.mark.parametrize("flags", LEVELS, ids=[" ".join(f) for f in LEVELS])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_mpi_program(program: Path, flags: list[str], tmp_path: Path):
    # item 3: forward and reverse derivatives across ranks, each rank its own part
    exe = tmp_path / program.stem
    build = run_cli(["cc", *flags, str(program), *mpi_flags(), "-o", str(exe)], cwd=tmp_path, timeout=COMPILE_TIMEOUT)
    assert build.returncode == 0, build.stderr
    for ranks in RANKS:
        run = run_mpi(exe, ranks, MPI_TIMEOUT)
        assert run is not None, f"{program.name} on {ranks} ranks did not finish in {MPI_TIMEOUT} s"
        failed = [line for line in run.stdout.splitlines() if line.startswith("FAIL")][:20]
        assert run.returncode == 0, f"{ranks} ranks:\n" + "\n".join(failed) + run.stderr
        assert sum(line.startswith("ok ") for line in run.stdout.splitlines()) >= 10 * ranks


# rank 0 runs only the primal (it receives); rank 1 differentiates the same function, so
# the reverse of its send waits for an adjoint that rank 0 never sends
_UNMATCHED = r"""#include <mpi.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
void f(double *x, double *y, int rank) {
    if (rank == 1)
        MPI_Send(x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
    else
        MPI_Recv(y, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}
int main(int argc, char **argv) {
    int rank;
    double x = 2, dx = 0, y = 0, dy = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1)
        __enzyme_autodiff((void *)f, enzyme_dup, &x, &dx, enzyme_dup, &y, &dy, enzyme_const, rank);
    else
        f(&x, &y, rank);
    printf("finished rank %d\n", rank);
    MPI_Finalize();
    return 0;
}
"""


def test_unmatched_adjoint_receive_times_out(tmp_path: Path):
    # item 3: the adjoint's receive has no matching send; the run is stopped by the
    # timeout and its processes killed. Built the way the docs suggest for build systems,
    # with Open MPI's wrapper calling zymase (OMPI_CC="zymase cc" mpicc).
    (tmp_path / "unmatched.c").write_text(_UNMATCHED)
    env = {**os.environ, "OMPI_CC": "zymase cc"}
    build = subprocess.run(["mpicc", "-O2", "unmatched.c", "-o", "unmatched"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=COMPILE_TIMEOUT)
    assert build.returncode == 0, build.stderr
    before = {p for p in _all_processes() if _command(p).endswith("/unmatched")}
    assert run_mpi(tmp_path / "unmatched", 2, timeout=4) is None
    # a SIGKILLed process is gone once the kernel has torn it down, which a loaded machine
    # may take a moment to do: wait for that (bounded), then nothing may be left
    deadline = time.monotonic() + 20
    while True:
        left = [p for p in _all_processes() if p not in before and _command(p).endswith("/unmatched")]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, f"processes left after the timeout: {left}"


def _all_processes() -> list[int]:
    return [int(p.name) for p in Path("/proc").glob("[0-9]*")]


def _command(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return ""


_PRELUDE = """#include <mpi.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
"""
_CALL = """int main(int argc, char **argv) {
    double x[4] = {1, 2, 3, 4}, dx[4] = {0}, y[4] = {0}, dy[4] = {1, 1, 1, 1};
    MPI_Init(&argc, &argv);
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_dup, y, dy);
    MPI_Finalize();
    return 0;
}
"""
# (source of f, what the one error line names, the line it points to)
REFUSED = {
    "one_sided_put": (
        "void f(double *x, double *y) {\n"
        "    MPI_Win win;\n"
        "    MPI_Win_create(y, 4 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);\n"
        "    MPI_Win_fence(0, win);\n"
        "    MPI_Put(x, 4, MPI_DOUBLE, 0, 0, 4, MPI_DOUBLE, win);\n"
        "    MPI_Win_fence(0, win);\n"
        "    MPI_Win_free(&win);\n"
        "}\n", "'MPI_Win_create' (one-sided MPI communication)", 6),
    "no_rule_alltoall": (
        "void f(double *x, double *y) {\n"
        "    MPI_Alltoall(x, 1, MPI_DOUBLE, y, 1, MPI_DOUBLE, MPI_COMM_WORLD);\n"
        "}\n", "no derivative rule for 'MPI_Alltoall'", 5),
    "reduction_prod": (
        "void f(double *x, double *y) {\n"
        "    MPI_Allreduce(x, y, 4, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD);\n"
        "}\n", "'MPI_Allreduce' reduces with MPI_PROD", 5),
    "long_double_datatype": (
        "void f(double *x, double *y) {\n"
        "    long double t[4];\n"
        "    MPI_Recv(t, 4, MPI_LONG_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n"
        "    for (int i = 0; i < 4; i++) y[i] = x[i] * (double)t[i];\n"
        "}\n", "'MPI_Recv' moves data of the datatype 'ompi_mpi_long_double'", 6),
    "completed_by_test": (
        "void f(double *x, double *y) {\n"
        "    MPI_Request r;\n"
        "    int done = 0;\n"
        "    MPI_Irecv(y, 4, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, &r);\n"
        "    MPI_Send(x, 4, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);\n"
        "    while (!done) MPI_Test(&r, &done, MPI_STATUS_IGNORE);\n"
        "}\n", "'MPI_Test' completes a request", 9),
    "in_place": (
        "void f(double *x, double *y) {\n"
        "    for (int i = 0; i < 4; i++) y[i] = x[i] * x[i];\n"
        "    MPI_Allreduce(MPI_IN_PLACE, y, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);\n"
        "}\n", "'MPI_Allreduce' passes MPI_IN_PLACE", 6),
    # session 32: made and freed in every turn of a loop, a communicator cannot be freed
    # after the reverse sweep's messages (once per call it can: test_communicator_freed_...)
    "communicator_freed_in_loop": (
        "void f(double *x, double *y) {\n"
        "    for (int k = 0; k < 2; k++) {\n"
        "        MPI_Comm c;\n"
        "        MPI_Comm_dup(MPI_COMM_WORLD, &c);\n"
        "        MPI_Allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, c);\n"
        "        MPI_Comm_free(&c);\n"
        "    }\n"
        "}\n", "'MPI_Comm_free' frees a communicator", 9),
    "any_source": (
        "void f(double *x, double *y) {\n"
        "    MPI_Recv(y, 4, MPI_DOUBLE, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n"
        "    y[0] *= x[0];\n"
        "}\n", "'MPI_Recv' receives with MPI_ANY_SOURCE", 5),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unsupported_mpi_is_refused(case: str, tmp_path: Path):
    # item 5: one clear error naming the MPI call and its source line, never a wrong answer
    body, named, line = REFUSED[case]
    (tmp_path / f"{case}.c").write_text(_PRELUDE + body + _CALL)
    proc = run_cli(["cc", "-O2", "-c", f"{case}.c", *mpi_flags()], cwd=tmp_path, timeout=COMPILE_TIMEOUT)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"zymase: error: {case}.c:{line}:"), proc.stderr
    assert named in lines[0] and "function 'f'" in lines[0] and "hint:" in lines[0], lines[0]
    assert not list(tmp_path.glob("*.o"))


COMMUNICATOR_FREED = r"""#include <math.h>
#include <mpi.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
// a communicator of the even and of the odd ranks, made and freed in the function
static double f(double *x, int n) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    double s = 0, t;
    for (int i = 0; i < n; i++) s += x[i] * x[i] * (i + 1);
    MPI_Allreduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, half);
    MPI_Comm_free(&half);
    return t * t;
}
static double total(double *x, int n) {  // the loss summed over ranks
    double mine = f(x, n), all;
    MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return all;
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x[3], dx[3] = {0};
    for (int i = 0; i < 3; i++) x[i] = 0.4 + 0.1 * i + 0.2 * rank;
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, 3);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 3; i++) {
            double keep = x[i], h = 1e-6;
            if (rank == r) x[i] = keep + h;
            double up = total(x, 3);
            if (rank == r) x[i] = keep - h;
            double down = total(x, 3);
            x[i] = keep;
            double fd = (up - down) / (2 * h);
            if (rank == r && fabs(dx[i] - fd) > 1e-6 * fmax(1.0, fabs(fd))) {
                printf("FAIL rank %d x[%d]: %.12g, central difference %.12g\n", rank, i, dx[i], fd);
                failures++;
            }
        }
    printf("rank %d: %d failures\n", rank, failures);
    MPI_Finalize();
    return failures != 0;
}
"""


@pytest.mark.parametrize("flags", LEVELS, ids=[" ".join(f) for f in LEVELS])
def test_communicator_freed_in_the_function_outlives_the_reverse_sweep(flags: list[str], tmp_path: Path):
    # session 32: a segfault at every level (the reverse sweep's MPI_Allreduce used the
    # communicator the forward sweep had freed); the free now runs after the reverse sweep
    (tmp_path / "freed.c").write_text(COMMUNICATOR_FREED)
    exe = tmp_path / "freed"
    build = run_cli(["cc", *flags, "freed.c", *mpi_flags(), "-o", str(exe)], cwd=tmp_path, timeout=COMPILE_TIMEOUT)
    assert build.returncode == 0, build.stderr
    for ranks in RANKS:
        run = run_mpi(exe, ranks, MPI_TIMEOUT)
        assert run is not None, f"{ranks} ranks did not finish in {MPI_TIMEOUT} s"
        assert run.returncode == 0 and run.stdout.count(": 0 failures") == ranks, run.stdout + run.stderr
