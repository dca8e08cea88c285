"""Building a generated C program with ``zymase cc`` at one level, running it, and
classifying the outcome: right / refused / wrong / crashed (or invalid: the program
itself produced a non-finite or huge primal, a generator defect, not an engine one).

The comparison (``compare_outputs``) is shared with the njit checker: reverse against
forward mode at each point (tight, both are exact derivatives of the same primal), and
each against central finite differences with two step sizes (accepted when either
step agrees); a point where only the finite differences disagree is re-checked at the
second point, since random programs have kinks (fabs, fmax, branches, pick()).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

try:  # under pytest, tests/ is on sys.path; in `python -m tests.fuzz`, the repository root is
    from forking_cli import run_cli
except ImportError:
    from tests.forking_cli import run_cli

# The configurations a campaign can use; "O2-ffast-math" is -O2 -ffast-math.
LEVELS = {
    "O0": ["-O0"], "O1": ["-O1"], "O2": ["-O2"], "O3": ["-O3"], "O2-ffast-math": ["-O2", "-ffast-math"],
}
# seconds of wall time; a loaded machine (second-order programs at -O2 took 20 s of CPU and
# 150-250 s of wall at a load of 17 on 2 cores) may need more: ZYMASE_FUZZ_BUILD_TIMEOUT
BUILD_TIMEOUT = int(os.environ.get("ZYMASE_FUZZ_BUILD_TIMEOUT", "240"))
RUN_TIMEOUT = 60
# --lang c-ckpt: the C programs built under a tape limit this small, so that every loop
# doing float work is checkpointed (autodiff/checkpoint.py) and the binomial schedule
# keeps few snapshots (a snapshot of the loop's state is ~100 bytes): recomputation
# from a snapshot, restores and the shadow rebuild all run
CKPT_FLAGS = ("--tape-limit=1K",)
# a string of the checkpointing runtime (checkpoint_runtime.c's out-of-memory message),
# which is linked only into a derivative that checkpoints a loop
# (frontends/c.link_derivative_runtime); its functions' symbols are no sign: at -O2 the
# optimizer inlines __zymase_ckpt_forward and __zymase_ckpt_reverse away
CKPT_MARK = b"zymase: checkpointing: "
VALGRIND = ["valgrind", "--error-exitcode=99", "-q"]
# --lang c++-stl: the program (written as prog.c) compiled as C++
CXX_FLAGS = ("-x", "c++")

# reverse vs forward: relative tolerance (fast-math may reassociate either differently)
REV_FWD_RTOL = {"default": 1e-8, "fast": 1e-6}
# against finite differences: relative to max(1, |derivative|), plus the rounding error
# of a central difference with step h on values of size |f|
FD_RTOL = 2e-5


@dataclass
class Outcome:
    kind: str  # right / refused / wrong / crashed / invalid
    level: str
    detail: str = ""  # the zymase error line, the first disagreement, the crash
    output: str = ""  # driver output / build stderr, for the failure directory
    valgrind: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def message_class(self) -> str:
        """The refusal message with names, numbers and locations blanked, for counting."""
        return normalize_message(self.detail)


def normalize_message(line: str) -> str:
    text = re.sub(r"^zymase: (internal )?error: ", "", line.strip())
    text = re.sub(r"\S+\.(c|py|ll):\d+(:\d+)?: ", "", text)
    text = re.sub(r"'[^']*'", "'_'", text)
    text = re.sub(r"@[\w.$]+", "@_", text)
    text = re.sub(r"%[\w.$]+", "%_", text)
    text = re.sub(r"\d+", "N", text)
    return text[:160]


def _zymase_error(stderr: str) -> str | None:
    for line in stderr.splitlines():
        if line.startswith("zymase: error:"):
            return line
    return None


def build(src: Path, level: str, exe: Path, extra: tuple[str, ...] = ()) -> Outcome | None:
    """Build (``extra``: more flags, e.g. -fopenmp); None when it succeeded, else the
    refused/crashed outcome."""
    try:
        res = run_cli(["cc", *LEVELS[level], *extra, str(src), "-o", str(exe), "-lm"], timeout=BUILD_TIMEOUT,
                      cwd=exe.parent)
    except subprocess.TimeoutExpired:
        return Outcome("crashed", level, f"build timeout after {BUILD_TIMEOUT}s")
    if res.returncode == 0 and exe.is_file():
        return None
    err = _zymase_error(res.stderr)
    if res.returncode == 1 and err:
        return Outcome("refused", level, err, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    tail = lines[-1] if lines else ""
    return Outcome("crashed", level, f"build exit {res.returncode}: {tail[:300]}", res.stderr)


def parse_driver(text: str) -> dict:
    """{(p): {"primal": v, "rev": {i: v}, "fwd": {i: v}, "fd": {k: {i: v}}, "lane": {k: (vector
    mode's, scalar call's)}}} (lanes: ``gen_c.with_width_lanes``)."""
    points: dict = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0] not in ("primal", "rev", "fwd", "fd", "lane"):
            continue
        p = int(parts[1])
        pt = points.setdefault(p, {"primal": None, "rev": {}, "fwd": {}, "fd": {}, "lane": {}})
        if parts[0] == "primal":
            pt["primal"] = float(parts[2])
        elif parts[0] == "fd":
            pt["fd"].setdefault(int(parts[2]), {})[int(parts[3])] = float(parts[4])
        elif parts[0] == "lane":  # "lane p k got want [label]"
            pt["lane"][int(parts[2])] = (float(parts[3]), float(parts[4]), *parts[5:6])
        else:
            pt[parts[0]][int(parts[2])] = float(parts[3])
    return points


FD_STEPS = (1e-4, 1e-6)


def _fd_ok(g: float, fds: list[float], primal: float) -> bool:
    for h, fd in zip(FD_STEPS, fds):
        # truncation is covered by FD_RTOL; rounding of f(x+h) - f(x-h) is ~ 1e-16 |f| / h
        tol = FD_RTOL * max(1.0, abs(g)) + 4e-16 * max(1.0, abs(primal)) / h
        if math.isfinite(fd) and abs(g - fd) <= tol:
            return True
    return False


def compare_outputs(points: dict, fast: bool) -> tuple[str, str]:
    """('right' | 'wrong' | 'invalid', detail) for parsed driver output."""
    rtol = REV_FWD_RTOL["fast" if fast else "default"]
    if len(points) < 2:
        return "wrong", f"driver printed {len(points)} point(s), expected 2"
    fd_bad_points = []
    for p in sorted(points):
        pt = points[p]
        primal = pt["primal"]
        if primal is None or not math.isfinite(primal) or abs(primal) > 1e8:
            return "invalid", f"point {p}: primal {primal}"
        rev, fwd = pt["rev"], pt["fwd"]
        if set(rev) != set(fwd) or not rev:
            return "wrong", f"point {p}: reverse has indices {sorted(rev)}, forward {sorted(fwd)}"
        for i in sorted(rev):
            r, f = rev[i], fwd[i]
            if not (math.isfinite(r) and math.isfinite(f)):
                return "wrong", f"point {p} d/dx{i}: reverse {r!r} forward {f!r} (not finite)"
            if abs(r - f) > rtol * max(1.0, abs(r), abs(f)):
                return "wrong", f"point {p} d/dx{i}: reverse {r!r} != forward {f!r}"
        # further pairs that must agree as reverse and forward do: vector lanes against scalar
        # calls (--lang c-width), second-order paths against each other (c-nested, njit-hessian),
        # (got, want) or (got, want, label)
        for k, lane in sorted(pt.get("lane", {}).items()):
            got, want = lane[0], lane[1]
            if not (math.isfinite(got) and abs(got - want) <= rtol * max(1.0, abs(want))):
                if len(lane) > 2:
                    return "wrong", f"point {p} {lane[2]}: {got!r} != {want!r}"
                return "wrong", f"point {p} direction {k}: vector forward mode {got!r} != scalar forward {want!r}"
        bad = [i for i in sorted(rev)
               if not _fd_ok(rev[i], [pt["fd"].get(k, {}).get(i, math.nan) for k in range(len(FD_STEPS))], primal)]
        if bad:
            i = bad[0]
            fds = [pt["fd"].get(k, {}).get(i) for k in range(len(FD_STEPS))]
            fd_bad_points.append(f"point {p} d/dx{i}: reverse/forward {rev[i]!r} vs finite differences {fds}")
    if len(fd_bad_points) == len(points):
        return "wrong", "; ".join(fd_bad_points)
    return "right", ""


def run_exe(exe: Path, level: str, valgrind: bool, env: dict | None = None) -> Outcome:
    cmd = ([*VALGRIND] if valgrind else []) + [str(exe)]
    timeout = RUN_TIMEOUT * (10 if valgrind else 1)
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                             cwd=exe.parent, env=env)
    except subprocess.TimeoutExpired:
        return Outcome("crashed", level, f"run timeout after {timeout}s", valgrind=valgrind)
    output = res.stdout + ("\n--- stderr ---\n" + res.stderr if res.stderr else "")
    if res.returncode != 0:
        what = "valgrind error" if valgrind and res.returncode == 99 else (
            f"signal {-res.returncode}" if res.returncode < 0 else f"exit {res.returncode}")
        return Outcome("crashed", level, f"run: {what}: {res.stderr.strip()[:300]}", output, valgrind)
    kind, detail = compare_outputs(parse_driver(res.stdout), fast="fast" in level)
    return Outcome(kind, level, detail, output, valgrind)


def check_c_source(text: str, level: str, valgrind: bool = False, workdir: Path | None = None,
                   extra: tuple[str, ...] = ()) -> Outcome:
    """Build ``text`` at ``level`` (``extra``: more ``zymase cc`` flags) in a scratch
    directory, run it, classify; with a tape limit among ``extra``, ``extra["checkpointed"]``
    of the outcome says whether the build checkpointed a loop."""
    own = workdir is None
    work = Path(tempfile.mkdtemp(prefix="zymase-fuzz-")) if own else workdir
    try:
        src = work / "prog.c"
        src.write_text(text)
        exe = work / "prog"
        failed = build(src, level, exe, extra)
        if failed:
            return failed
        o = run_exe(exe, level, valgrind)
        if any(flag.startswith("--tape-limit") for flag in extra):
            o.extra["checkpointed"] = CKPT_MARK in exe.read_bytes()
        return o
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


def clang_clean(text: str, extra: tuple[str, ...] = ()) -> bool:
    """Whether the program compiles with clang -Wall -Werror (the reducer's guard;
    ``extra``: more flags, e.g. -fopenmp; CXX_FLAGS among them: as C++17)."""
    clang = shutil.which("clang-19") or shutil.which("clang") or "clang"
    std = "-std=c++17" if "c++" in extra else "-std=c11"
    with tempfile.TemporaryDirectory(prefix="zymase-fuzz-") as d:
        src = Path(d) / "prog.c"
        src.write_text(text)
        res = subprocess.run([clang, "-Wall", "-Werror", "-Wuninitialized", "-Wsometimes-uninitialized",
                              std, "-fsyntax-only", *extra, str(src)],
                             capture_output=True, text=True, stdin=subprocess.DEVNULL)
        return res.returncode == 0


# Stand-ins for the Enzyme entry points, so that the primal and the driver can be linked
# with plain clang and run under valgrind: the reducer's check that a smaller program
# still has no undefined behaviour of its own (uninitialised reads, bad indices).
_ENZYME_STUBS = """
double __enzyme_autodiff(void *f, ...) { (void)f; return 0.0; }
double __enzyme_fwddiff(void *f, ...) { (void)f; return 0.0; }
int enzyme_dup, enzyme_const, enzyme_dupnoneed;
"""


def primal_clean(text: str, cxx: bool = False) -> bool:
    """Whether the program without differentiation runs clean under valgrind (``cxx``: the
    program is C++, the stubs stay C)."""
    clang = shutil.which("clang-19") or shutil.which("clang") or "clang"
    if cxx:
        clang = shutil.which("clang++-19") or shutil.which("clang++") or "clang++"
    with tempfile.TemporaryDirectory(prefix="zymase-fuzz-") as d:
        src, stubs, exe = Path(d) / "prog.c", Path(d) / "stubs.c", Path(d) / "prog"
        src.write_text(text)
        stubs.write_text(_ENZYME_STUBS)
        lang = ["-x", "c++"] if cxx else []
        res = subprocess.run([clang, "-O0", *lang, str(src), *(["-x", "c"] if cxx else []), str(stubs), "-o", str(exe),
                              "-lm"],
                             capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if res.returncode != 0:
            return False
        try:
            run = subprocess.run([*VALGRIND, str(exe)], capture_output=True, text=True, timeout=RUN_TIMEOUT * 5,
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return False
        return run.returncode == 0
