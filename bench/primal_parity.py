"""Primal parity (issue 29 item 0): the code around the derivatives, built by ``zymase cc -O2``,
against ``clang -O2`` building the same file with the ``__enzyme_*`` calls going to an opaque
stub (a separate object file, so clang knows nothing of what the call does).

Programs: every bench workload with a harness (src/zymase/bench/workloads/*.c, one size
each), the parity programs in bench/parity/ (Enzyme's normalization loop at n = 4,000
and 16,000, a reaction-diffusion step loop), each run with ``BENCH_MODE=primal``
(bench_common.h: the primal only, best per-call time of a few batches); and the C programs
of bench/ that time a primal, with the time they print (licm_normalize.c: one call, noisy;
blas_chain.c: OpenBLAS; openmp_scaling.c: the sum of its three kernels at one thread) or
the process's wall time (stencil_memory.c). tape_bytes.c times nothing. Builds use the same
flags (``-O2 -march=<cpu>`` and the program's own); runs alternate clang, zymase, clang ...
for ``--rounds`` rounds, so that the load of a shared machine falls on both alike. Prints
per program the best time of each build, their ratio zymase / clang (the target is at
most 1.05) and, in brackets, the median of the per-round ratios (the two agree when the
machine is quiet; on a loaded one the ratio of the best times is the steadier).

With ``--instructions`` the builds are not timed but run once under valgrind's callgrind,
counting the instructions executed inside the primal (the function named by
``Program.counted``: two primal calls for the harness programs): deterministic, so it
compares the builds on a loaded machine, though an instruction is not a cycle (a vector
instruction does several scalar ones' work, a division costs more than an add).
Run from the repository root:

  python bench/primal_parity.py --rounds 5
  python bench/primal_parity.py --zymase before=/work/main/src --zymase after=src --only normalize_loop
  python bench/primal_parity.py --instructions
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "src" / "zymase" / "bench" / "workloads"
PARITY = ROOT / "bench" / "parity"

#: what the marker calls become in the clang build: defined in another object file, so the
#: optimizer sees an unknown call that may read and write what it is given (the primal runs
#: never call it)
STUB_GLOBALS = "int enzyme_dup, enzyme_const, enzyme_out, enzyme_dupnoneed;\n"
STUB_FUNCTION = "double {name}(void *f, ...) {{ (void)f; return 0; }}\n"


def stub_source(source: Path) -> str:
    """The stub for one program: every ``__enzyme_*`` function it names (Enzyme's custom
    names too, such as ode.c's ``__enzyme_autodiff_kpp``)."""
    names = set(re.findall(r"\b(__enzyme_\w+)\s*\(", source.read_text())) | {"__enzyme_autodiff"}
    return STUB_GLOBALS + "".join(STUB_FUNCTION.format(name=n) for n in sorted(names))


#: timing batches per run (bench_common.h keeps the best): many short batches, so that on
#: a loaded machine some fall into quiet moments
BATCHES = 10


@dataclass
class Program:
    name: str
    source: Path
    flags: tuple[str, ...] = ()
    #: runs (argument lists) timed; the bench workloads' inputs are written by
    #: zymase.bench.cases (generated, ADBench's format)
    runs: tuple[tuple[str, ...], ...] = ((),)
    #: how a run reports its primal time: None for bench_common.h's JSON line; else a
    #: function of (stdout, wall seconds of the process) for the programs with their own output
    timing: Callable[[str, float], float] | None = None
    #: flags for the link (libraries) and environment of the runs
    link: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    #: the function whose instructions --instructions counts (None: not counted)
    counted: str | None = "run_primal"


def _printed(pattern: str, scale: float) -> Callable[[str, float], float]:
    """The sum of the numbers ``pattern`` matches in a program's output, times ``scale``."""
    return lambda out, wall: scale * sum(float(m) for m in re.findall(pattern, out))


def _wall(out: str, wall: float) -> float:
    return wall


def programs(work: Path) -> list[Program]:
    sys.path.insert(0, str(ROOT / "src"))
    from zymase.bench.cases import suite

    found: list[Program] = []
    seen = set()
    for case in suite(quick=True):  # the first quick size of each workload
        if case.workload.name in seen:
            continue
        seen.add(case.workload.name)
        args, _ = case.prepare(work, None)
        found.append(Program(case.workload.name, case.workload.source, case.workload.flags, (tuple(args),)))
    found.append(Program("normalize_loop", PARITY / "normalize_loop.c", ("-fno-math-errno",),
                         (("4000",), ("16000",))))
    found.append(Program("reaction_diffusion", PARITY / "reaction_diffusion.c", (), (("4096", "50"),)))
    # bench/*.c time their primal their own way (tape_bytes.c times nothing: it counts bytes)
    bench = ROOT / "bench"
    found.append(Program("licm_normalize", bench / "licm_normalize.c", ("-fno-math-errno",), (("16000",),),
                         _printed(r"primal ([\d.e+-]+) s", 1.0), counted="normalize"))
    found.append(Program("stencil_memory", bench / "stencil_memory.c", (), (("primal", "100000", "200"),),
                         _wall, counted="heat"))
    found.append(Program("blas_chain", bench / "blas_chain.c", (), (("256", "10"),),
                         _printed(r"primal ([\d.e+-]+) s", 1.0), ("-lopenblas",), (("OPENBLAS_NUM_THREADS", "1"),),
                         counted=None))
    found.append(Program("openmp_scaling", bench / "openmp_scaling.c", ("-fopenmp",), (("200000", "5"),),
                         _printed(r"primal ([\d.]+) /", 1e-3), counted=None))
    return found


def _clang() -> str:
    for name in ("clang-19", "clang"):
        if shutil.which(name):
            return name
    sys.exit("no clang-19 or clang on PATH")


def _run(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
         check: bool = True) -> str:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stderr}")
    return proc.stdout


def build_clang(prog: Program, flags: list[str], out: Path) -> None:
    clang = _clang()
    obj = out.with_suffix(".o")
    stub_c, stub = out.with_suffix(".stub.c"), out.with_suffix(".stub.o")
    stub_c.write_text(stub_source(prog.source))
    _run([clang, "-O2", *flags, "-c", str(stub_c), "-o", str(stub)])
    _run([clang, "-O2", *flags, *prog.flags, "-I", str(WORKLOADS), "-c", str(prog.source), "-o", str(obj)])
    _run([clang, "-O2", *flags, *prog.flags, str(obj), str(stub), "-o", str(out), *prog.link, "-lm"])


def build_zymase(prog: Program, flags: list[str], out: Path, src: str) -> None:
    env = {**os.environ, "PYTHONPATH": src}
    _run([sys.executable, "-m", "zymase.cli", "cc", "--no-cache", "-O2", *flags, *prog.flags,
          "-I", str(WORKLOADS), str(prog.source), "-o", str(out), *prog.link, "-lm"], env=env)


def primal_seconds(prog: Program, exe: Path, args: tuple[str, ...], min_s: float, stubbed: bool) -> float:
    """The primal time of one run. The stubbed build of a program that also checks its
    gradient (blas_chain.c) fails that check: its exit status is not looked at."""
    env = {**os.environ, **dict(prog.env), "BENCH_MODE": "primal", "BENCH_MIN_S": str(min_s),
           "BENCH_REPEATS": str(BATCHES)}
    t0 = time.perf_counter()
    out = _run([str(exe), *args], env=env, check=not (stubbed and prog.timing is not None))
    wall = time.perf_counter() - t0
    if prog.timing is not None:
        return prog.timing(out, wall)
    return json.loads(out.strip().splitlines()[-1])["primal_s"]


def primal_instructions(prog: Program, exe: Path, args: tuple[str, ...], stubbed: bool) -> float:
    """Instructions executed inside ``prog.counted`` in one run under callgrind."""
    env = {**os.environ, **dict(prog.env), "BENCH_MODE": "primal", "BENCH_MIN_S": "0", "BENCH_REPEATS": "1"}
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           f"--toggle-collect={prog.counted}", str(exe), *args],
                          env=env, capture_output=True, text=True)
    match = re.search(r"Collected : (\d+)", proc.stderr)
    if match is None or (proc.returncode != 0 and not stubbed):
        sys.exit(f"failed: valgrind {exe} {' '.join(args)}\n{proc.stderr}")
    return float(match.group(1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--zymase", action="append", default=[], metavar="LABEL=SRC",
                   help="a zymase source tree to build with (repeatable); default: this checkout's src")
    p.add_argument("--march", default="native", help="-march= for every build (default native)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-s", type=float, default=0.02, help="seconds per timing batch")
    p.add_argument("--only", nargs="*", help="programs to time (default: all)")
    p.add_argument("--instructions", action="store_true",
                   help="count the primal's instructions under callgrind instead of timing it")
    ns = p.parse_args()
    trees = [z.split("=", 1) for z in ns.zymase] or [["zymase", str(ROOT / "src")]]
    flags = [f"-march={ns.march}"]
    with tempfile.TemporaryDirectory(prefix="zymase-parity-") as tmp:
        work = Path(tmp)
        progs = [pr for pr in programs(work) if (not ns.only or pr.name in ns.only)
                 and (pr.counted or not ns.instructions)]
        if ns.instructions:
            ns.rounds = 1  # deterministic
        what = "instructions (callgrind)" if ns.instructions else "time"
        print(f"primal {what}, clang -O2 {' '.join(flags)} (markers stubbed) vs zymase cc -O2; "
              f"{ns.rounds} alternating rounds; ratio of the best [median of per-round ratios]\n")
        labels = [label for label, _ in trees]
        print(f"{'program':<34} {'clang':>10} " + " ".join(f"{lab:>10} {'ratio':>14}" for lab in labels))
        worst = {lab: 0.0 for lab in labels}
        for prog in progs:
            exes = {"clang": work / f"{prog.name}.clang"}
            build_clang(prog, flags, exes["clang"])
            for label, src in trees:
                exes[label] = work / f"{prog.name}.{label}"
                build_zymase(prog, flags, exes[label], str(Path(src).resolve()))
            for args in prog.runs:
                times: dict[str, list[float]] = {k: [] for k in exes}
                for _ in range(ns.rounds):
                    for key, exe in exes.items():
                        if ns.instructions:
                            times[key].append(primal_instructions(prog, exe, args, key == "clang"))
                        else:
                            times[key].append(primal_seconds(prog, exe, args, ns.min_s, key == "clang"))
                name = f"{prog.name} {' '.join(a if len(a) < 12 else Path(a).name for a in args)}"
                unit, scale = ("M", 1e-6) if ns.instructions else ("us", 1e6)
                row = f"{name[:34]:<34} {min(times['clang']) * scale:>8.1f}{unit:<2} "
                if min(times["clang"]) == 0:  # e.g. the counted function inlined into main
                    print(f"{name[:34]:<34} nothing counted in {prog.counted}", flush=True)
                    continue
                for label in labels:
                    ratio = min(times[label]) / min(times["clang"])
                    median = statistics.median(z / c for z, c in zip(times[label], times["clang"]))
                    worst[label] = max(worst[label], ratio)
                    row += f"{min(times[label]) * scale:>8.1f}{unit:<2} {ratio:>5.3f} [{median:.3f}] "
                print(row, flush=True)
        print("\nworst ratio: " + ", ".join(f"{lab} {worst[lab]:.3f}" for lab in labels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
