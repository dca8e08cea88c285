"""Building and running the C workloads, each run in its own process.

Four builds of every workload:

  primal    clang -O2 -DBENCH_PRIMAL_ONLY        the baseline primal time
  preopt    zymase cc -O2                        gradient time (AD after the pre-AD pipeline)
  nopreopt  zymase cc -O2 --no-preopt            gradient time with AD before optimization
  tape      ZYMASE_TAPE_STATS=1 zymase cc -O2    bytes taped per gradient call (separate
            -DBENCH_TAPE_STATS                   build: counting slows the timed code)
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from zymase.bench.cases import WORKLOAD_DIR, Workload
from zymase.errors import ZymaseError

VARIANTS = ("primal", "preopt", "nopreopt", "tape")


@dataclass
class Build:
    variant: str
    exe: Path | None
    seconds: float
    error: str | None = None


def _zymase_cc() -> list[str]:
    # the zymase of this interpreter, whether or not a `zymase` script is on PATH; without
    # the derivative cache, so that the compile time reported is the time to differentiate
    return [sys.executable, "-m", "zymase.cli", "cc", "--no-cache"]


def build_command(workload: Workload, variant: str, source: Path, exe: Path,
                  flags: tuple[str, ...] = ()) -> tuple[list[str], dict[str, str]]:
    """The command line and extra environment that build one variant; ``flags`` are the
    run's own (e.g. ``-march=native``), given to every variant alike."""
    common = ["-O2", *workload.flags, *flags, "-I", str(WORKLOAD_DIR), str(source), "-o", str(exe), "-lm"]
    if variant == "primal":
        from zymase.llvm.toolchain import find_clang

        return [*find_clang().argv, "-DBENCH_PRIMAL_ONLY", *common], {}
    if variant == "preopt":
        return [*_zymase_cc(), *common], {}
    if variant == "nopreopt":
        return [*_zymase_cc(), "--no-preopt", *common], {}
    if variant == "tape":
        return [*_zymase_cc(), "-DBENCH_TAPE_STATS", *common], {"ZYMASE_TAPE_STATS": "1"}
    raise ValueError(f"unknown build variant {variant!r}")


def build(workload: Workload, variant: str, out_dir: Path, flags: tuple[str, ...] = ()) -> Build:
    """Builds one variant; a failure is returned, not raised (the runner reports it)."""
    source = workload.source
    exe = out_dir / f"{workload.name}.{variant}"
    try:
        argv, extra_env = build_command(workload, variant, source, exe, flags)
    except ZymaseError as err:  # no clang
        return Build(variant, None, 0.0, err.format())
    env = {**os.environ, **extra_env}
    if variant != "tape":
        env.pop("ZYMASE_TAPE_STATS", None)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    except subprocess.TimeoutExpired:
        return Build(variant, None, time.monotonic() - t0, "build timed out")
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        message = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return Build(variant, None, seconds, f"build failed: {message}")
    return Build(variant, exe, seconds)


@dataclass
class Run:
    """One process run: its JSON report (if it printed one) and its failure, if any."""

    report: dict
    error: str | None
    seconds: float
    returncode: int = 0

    @property
    def segfaulted(self) -> bool:
        return self.returncode == -signal.SIGSEGV


def _unlimited_stack() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))


def run(exe: Path, args: list[str], env: dict[str, str], timeout: float, *, big_stack: bool = False) -> Run:
    """Runs a workload; big_stack raises the stack limit to the hard limit (usually unlimited)."""
    t0 = time.monotonic()
    try:
        proc = subprocess.run([str(exe), *args], capture_output=True, text=True, env={**os.environ, **env},
                              timeout=timeout, preexec_fn=_unlimited_stack if big_stack else None)
    except subprocess.TimeoutExpired:
        return Run({}, f"timed out after {timeout:.0f} s", time.monotonic() - t0, -1)
    seconds = time.monotonic() - t0
    line = next((s for s in reversed(proc.stdout.splitlines()) if s.startswith("{")), None)
    report: dict = {}
    error = None
    if line:
        try:
            report = json.loads(line)
        except json.JSONDecodeError:
            error = f"unreadable report: {line[:200]}"
    if proc.returncode != 0:
        message = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        error = message if proc.returncode > 0 else f"killed by signal {-proc.returncode}: {message}"
    elif not line:
        error = "no report printed"
    return Run(report, error, seconds, proc.returncode)
