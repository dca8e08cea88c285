"""OpenMP in C (issue 27 item 1): `zymase cc -fopenmp` differentiates parallel regions, and
the derivatives run in parallel. The self-checking programs in tests/c/openmp (a map, a
reduction, a stencil scattering into neighbours, nested loops, critical/barrier/single,
chunked and dynamic schedules and per-thread partial sums)
compare the parallel derivative with the serial twin's and with finite differences; each
is built at -O0 and -O2 and run with OMP_NUM_THREADS=1, 2 and 4 (each program prints the
team size it got, checked here). Then the refusals: the constructs the engine does not
handle stop the build with one `zymase: error:` line naming the construct and its source
line."""

from __future__ import annotations

import glob
import os
import re
import subprocess
from pathlib import Path

import pytest

from c_harness import COMPILE_TIMEOUT, RUN_TIMEOUT, builds
from forking_cli import run_cli

# LLVM's OpenMP runtime is a system package (libomp-19-dev, which .ci/run installs):
# without it clang has no omp.h and nothing to link, and these tests are skipped
_LIBOMP = (glob.glob("/usr/lib/llvm-*/lib/libomp.so") or glob.glob("/usr/lib/*/libomp.so")
           or glob.glob("/usr/lib/libomp.so"))
pytestmark = pytest.mark.skipif(not _LIBOMP, reason="libomp is not installed (apt-get install libomp-19-dev)")

_C = Path(__file__).resolve().parent / "c" / "openmp"
PROGRAMS = sorted(_C.glob("*.c"))
LEVELS = builds("-O0", "-O2")
THREADS = (1, 2, 4)
# programs that read the tape's byte counter to see which derivative ran (aliasing.c:
# the recomputed or the taped region, chosen by the run-time alias check)
_BUILD_ENV = {"aliasing": {"ZYMASE_TAPE_STATS": "1"}}


def test_corpus_is_there():
    assert {p.stem for p in PROGRAMS} >= {"map", "reduction", "stencil", "nested_loops", "critical"}


@pytest.mark.parametrize("flags", LEVELS, ids=[" ".join(f) for f in LEVELS])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_openmp_program(program: Path, flags: list[str], tmp_path: Path):
    # items 3, 4 and 6: forward and reverse derivatives of parallel regions, at 1, 2, 4 threads
    # (aliasing.c: item 1's performance, regions without restrict behind a run-time alias check)
    exe = tmp_path / program.stem
    build = run_cli(["cc", *flags, "-fopenmp", str(program), "-o", str(exe)], cwd=tmp_path, timeout=COMPILE_TIMEOUT,
                    env={**os.environ, **_BUILD_ENV.get(program.stem, {})})
    assert build.returncode == 0, build.stderr
    for threads in THREADS:
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env,
                             stdin=subprocess.DEVNULL)
        failed = [line for line in run.stdout.splitlines() if line.startswith("FAIL")][:20]
        assert run.returncode == 0, f"{threads} threads:\n" + "\n".join(failed) + run.stderr
        assert f"threads {threads}\n" in run.stdout


def test_reverse_sweep_forked_and_map_without_atomics(tmp_path: Path):
    # items 3 and 4: the derivative forks its own regions; a map (each iteration writes
    # and reads its own element) adds adjoints without atomics, a stencil with them
    ll = tmp_path / "map.ll"
    build = run_cli(["cc", "-O2", "-fopenmp", "-S", "-emit-llvm", str(_C / "map.c"), "-o", str(ll)],
                    cwd=tmp_path, timeout=COMPILE_TIMEOUT)
    assert build.returncode == 0, build.stderr
    text = ll.read_text()
    assert "@__kmpc_fork_call(ptr nonnull @" in text
    for forked in ("@augmentedmap_par.omp_outlined.omp_thread", "@diffemap_par.omp_outlined.omp_thread",
                   "@fwddiffemap_par.omp_outlined"):
        assert f"ptr nonnull {forked}" in text, forked
    assert "atomicrmw fadd" not in text
    ll = tmp_path / "stencil.ll"
    build = run_cli(["cc", "-O2", "-fopenmp", "-S", "-emit-llvm", str(_C / "stencil.c"), "-o", str(ll)],
                    cwd=tmp_path, timeout=COMPILE_TIMEOUT)
    assert build.returncode == 0, build.stderr
    assert "atomicrmw fadd" in ll.read_text()


def test_vector_mode_differentiates_every_lane_in_one_region(tmp_path: Path):
    # issue 25 item 2 (tests/c/openmp/width.c): at width N the caller forks the region's
    # width-N derivatives once, and the region computes its primal once for all lanes;
    # a region recomputed at width 1 is recomputed at width N, an in-place one taped
    ll = tmp_path / "width.ll"
    build = run_cli(["cc", "-O0", "-fopenmp", "-S", "-emit-llvm", str(_C / "width.c"), "-o", str(ll)],
                    cwd=tmp_path, timeout=COMPILE_TIMEOUT)
    assert build.returncode == 0, build.stderr
    text = ll.read_text()

    def body(name: str) -> str:
        found = re.search(rf'^define [^\n]*@"?{re.escape(name)}"?\(.*?^}}', text, re.M | re.S)
        assert found, name
        return found.group(0)

    def calls(text: str, callee: str) -> int:
        return len(re.findall(rf'call [^\n]*@"?{re.escape(callee)}"?\(', text))

    taped = body("diffe3inplace_sum")
    for fork in ("augmented3scale_inplace.omp_outlined.omp_fork", "diffe3scale_inplace.omp_outlined.omp_fork"):
        assert calls(taped, fork) == 1, fork
    recomputed = body("diffe3stencil_par")  # behind the run-time alias check, as at width 1
    assert calls(recomputed, "diffe3stencil_par.omp_outlined.versioned") == 1
    assert calls(recomputed, "augmented3stencil_par.omp_outlined.versioned.nofwd") == 1
    for region in ("augmented3scale_inplace.omp_outlined", "augmented3stencil_par.omp_outlined",
                   "fwddiffe3stencil_par.omp_outlined"):
        assert calls(body(region), "sin") == 1, region
    assert body("fwddiffe3stencil_par").count("@__kmpc_fork_call(") == 1  # the forward derivative, forked once


def test_regions_recomputed_without_tape_only_when_safe(tmp_path: Path):
    # gradient speed (issue 27, OpenMP performance): a region reading only memory that
    # nothing overwrites before the reverse sweep (restrict arrays) is forked as it is
    # and its reverse recomputes it (no augmented region, no tape); a region whose input
    # may be its output (no restrict, called in place), whose input or output the caller
    # overwrites after it keeps the taped split pair (recomputed.c checks the values)
    ll = tmp_path / "recomputed.ll"
    build = run_cli(["cc", "-O2", "-fopenmp", "-S", "-emit-llvm", str(_C / "recomputed.c"), "-o", str(ll)],
                    cwd=tmp_path, timeout=COMPILE_TIMEOUT, env={**os.environ, "ZYMASE_DEBUG_TAPE": "1"})
    assert build.returncode == 0, build.stderr
    # item 2: clang -O2 ends a worksharing loop with trunc(i + 1) == upper + 1; counted
    # (the guard before it rules out wrapping), the values the recomputed map's reverse
    # needs from each iteration (sin, exp) are stored at the iteration's index instead of
    # pushed on a stack per iteration
    taped = [line for line in build.stderr.splitlines()
             if line.startswith("zymase: tape: map_restrict.omp_outlined:") and ("@sin" in line or "@exp" in line)]
    assert len(taped) == 2 and all("indexed by 1 of 1 loops" in line for line in taped), build.stderr
    forked = {line.split(", ptr nonnull @")[1].split(",")[0].split(")")[0]
              for line in ll.read_text().splitlines() if "@__kmpc_fork_call(" in line and "call void" in line}
    for region in ("map_restrict", "stencil_restrict", "two_loops", "critical_sum"):
        assert f"diffe{region}.omp_outlined" in forked, forked
        assert f"augmented{region}.omp_outlined.omp_thread" not in forked
    for region in ("map_maybe_inplace", "input_overwritten", "output_overwritten", "thread_scaled"):
        assert f"augmented{region}.omp_outlined.omp_thread" in forked, forked
        assert f"diffe{region}.omp_outlined.omp_thread" in forked
    # a recomputed region whose results nothing after it reads (a sum only returned) is
    # not forked in the gradient's forward sweep: its one fork of the primal region is in
    # the primal function; a sum read after its region (critical_sum) is forked by both
    text = ll.read_text()

    def primal_forks(region):
        return sum(f"ptr nonnull @{region}.omp_outlined," in line or f"ptr nonnull @{region}.omp_outlined)" in line
                   for line in text.splitlines() if "@__kmpc_fork_call(" in line)

    assert primal_forks("returned_sum") == 1 and primal_forks("critical_sum") == 2
    # item 1 (performance): the recomputed stencil's worksharing loop is split into its
    # chunk's edges, whose adds stay atomic (3 loads, 2 edge copies), and its interior,
    # whose adds are plain (no branch per add, no atomics) and gathered, one element per
    # iteration (autodiff/stencil_gather.py: no unordered moves left);
    # chunk_edges.c checks the values with chunks of 0 to 3 iterations
    start = text.index("define internal void @diffestencil_restrict.omp_outlined(")
    body = text[start:text.index("\n}\n", start)]
    assert body.count("atomicrmw fadd") >= 6, body
    assert "load atomic double" not in body and "store atomic double" not in body, body
    assert "__zymase_omp_add" not in body  # no add testing the chunk's bounds
    # item 1 (performance): the recomputation in the reverse fork stores no primal output
    # nobody reads (transforms/omp_dead_stores.py), so it does not compute it either: the
    # forward sweep's primal fork wrote it (the caller reads it after the region), or it is
    # enzyme_dupnoneed; sin and cos are then not called for the outputs (their
    # derivatives call the other one). (recomputed.c checks the values, and that an
    # output nobody reads in the gradient but the user's caller keeps its stores.)
    for region, unneeded in (("stencil_read_after", "@sin("), ("stencil_unneeded", "@cos(")):
        start = text.index(f"define internal void @diffe{region}.omp_outlined(")
        body = text[start:text.index("\n}\n", start)]
        assert unneeded not in body, (region, body)
    assert primal_forks("stencil_read_after") == 2 and primal_forks("stencil_unneeded") == 1
    # a reduction into a local of the caller is recomputed too (reduction.c checks the values)
    ll = tmp_path / "reduction.ll"
    build = run_cli(["cc", "-O2", "-fopenmp", "-S", "-emit-llvm", str(_C / "reduction.c"), "-o", str(ll)],
                    cwd=tmp_path, timeout=COMPILE_TIMEOUT)
    assert build.returncode == 0, build.stderr
    text = ll.read_text()
    assert "ptr nonnull @diffeenergy_par.omp_outlined," in text and "@augmentedenergy_par" not in text


_PRELUDE = """#include <math.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
"""
_CALL = """int main(void) {
    double x[8] = {0}, dx[8] = {0}, out[64] = {0}, dout[64] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_dup, out, dout, enzyme_const, 8);
    return 0;
}
"""
# (source of f, the construct the error names, the line it points to)
REFUSED = {
    "dynamic_schedule_in_reverse": (
        "void f(const double *x, double *out, int n) {\n"
        "#pragma omp parallel for schedule(dynamic)\n"
        "    for (int i = 0; i < n; i++) out[i] = sin(x[i]);\n"
        "}\n", "'schedule(dynamic)'", 5),
    "task": (
        "void f(const double *x, double *out, int n) {\n"
        "#pragma omp parallel\n"
        "#pragma omp single\n"
        "    for (int i = 0; i < n; i++) {\n"
        "#pragma omp task\n"
        "        out[i] = sin(x[i]);\n"
        "    }\n"
        "}\n", "'task'", 8),
    "ordered": (
        "void f(const double *x, double *out, int n) {\n"
        "#pragma omp parallel for ordered\n"
        "    for (int i = 0; i < n; i++) {\n"
        "#pragma omp ordered\n"
        "        out[i] = sin(x[i]);\n"
        "    }\n"
        "}\n", "'ordered'", 7),
    "nested_parallel": (
        "void f(const double *x, double *out, int n) {\n"
        "#pragma omp parallel for\n"
        "    for (int i = 0; i < n; i++) {\n"
        "#pragma omp parallel for\n"
        "        for (int j = 0; j < n; j++) out[i * n + j] = sin(x[j]);\n"
        "    }\n"
        "}\n", "'parallel' nested", 7),
    "firstprivate_float": (
        "void f(const double *x, double *out, int n) {\n"
        "    double a = x[0] * x[1];\n"
        "#pragma omp parallel for firstprivate(a)\n"
        "    for (int i = 0; i < n; i++) out[i] = a * x[i];\n"
        "}\n", "'firstprivate'", 7),
    "memcpy_from_shared": (
        "struct block { double a[4]; };\n"
        "void f(const double *x, double *out, int n) {\n"
        "    const struct block *b = (const struct block *)x;\n"
        "#pragma omp parallel for\n"
        "    for (int i = 0; i < n; i++) { struct block c = *b; out[i] = c.a[i % 4] * c.a[0]; }\n"
        "}\n", "memory copy (memcpy) from shared memory", 8),
    "critical_not_a_sum": (
        "void f(const double *x, double *out, int n) {\n"
        "#pragma omp parallel for\n"
        "    for (int i = 0; i < n; i++) {\n"
        "#pragma omp critical\n"
        "        out[0] = 0.5 * out[0] + x[i];\n"
        "    }\n"
        "}\n", "'critical' section", 8),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unsupported_openmp_is_refused(case: str, tmp_path: Path):
    # item 5: a clear error naming the construct and its source line, never a wrong answer
    body, construct, line = REFUSED[case]
    (tmp_path / f"{case}.c").write_text(_PRELUDE + body + _CALL)
    proc = run_cli(["cc", "-O2", "-fopenmp", "-c", f"{case}.c"], cwd=tmp_path, timeout=COMPILE_TIMEOUT)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"zymase: error: {case}.c:{line}:"), proc.stderr
    assert construct in lines[0] and "function 'f'" in lines[0] and "hint:" in lines[0]
    assert not list(tmp_path.glob("*.o"))


def test_firstprivate_float_is_refused_at_O0(tmp_path: Path):
    # session 32: at -O0 a firstprivate variable the loop updates is carried by the
    # loop as the integer bits clang passed, a block argument, where the float read from
    # them was not seen: its derivative was dropped (silently)
    body = ("void f(const double *x, double *out, int n) {\n"
            "    double a = x[0] * x[1];\n"
            "#pragma omp parallel for firstprivate(a)\n"
            "    for (int i = 0; i < n; i++) { out[i] = a * x[i]; a += 0.0; }\n"
            "}\n")
    construct, line = "'firstprivate'", 7
    (tmp_path / "fp.c").write_text(_PRELUDE + body + _CALL)
    proc = run_cli(["cc", "-O0", "-fopenmp", "-c", "fp.c"], cwd=tmp_path, timeout=COMPILE_TIMEOUT)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"zymase: error: fp.c:{line}:"), proc.stderr
    assert construct in lines[0] and "function 'f'" in lines[0] and "hint:" in lines[0]
