"""Checking a generated parallel program (gen_par.py) at several team sizes.

An OpenMP C program is built twice at one level with ``zymase cc``: with ``-fopenmp`` and
without (the pragmas ignored: the serial program). The serial build is checked as
check_c.py checks any program; the parallel one runs with OMP_NUM_THREADS = 1, 2 and 4,
and each run must be right by itself (reverse against forward against finite differences)
and agree with the serial program's primal, gradient and forward derivatives to
rounding (a reduction sums in another order); the gradient the driver repeats at 96
elements must not change (a lost update of a race shows up only now and then). A prange
module is checked the same way in one process: ``zymase.grad`` and ``zymase.jvp`` of the
parallel function at Numba thread counts 1, 2 and 4 against the serial twin
(``parallel=False``) and finite differences.

Run as ``python -m tests.fuzz.check_par SEED...`` it checks prange seeds in this process
(NUMBA_NUM_THREADS must allow 4 threads: the campaign sets it) and prints one JSON line
per seed, like check_njit.py.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .check_c import Outcome, build, compare_outputs, parse_driver, run_exe

THREADS = (1, 2, 4)
OMP_LEVEL_FLAGS = ("-fopenmp",)
# parallel against serial: the same derivative, summed in another order
PAR_RTOL = 1e-9
PRANGE_LEVEL = "njit-prange"
# a CI sample's prange program: one loop (each parfor costs Numba compiles), no 2-D argument
SAMPLE_SIZE = 1
SAMPLE_FEATURES = {"map", "stencil", "reduction", "time_loop"}


# the largest deviation of a repeated reverse sweep from the first (driver "revdev" lines)
REPEAT_RTOL = 1e-10


def repeat_deviation(output: str) -> str:
    """'' when every repeated gradient matched the first one, else the point that did not."""
    for line in output.splitlines():
        parts = line.split()
        if parts and parts[0] == "revdev" and not float(parts[2]) <= REPEAT_RTOL:
            return f"point {parts[1]}: a repeated reverse sweep differs from the first by {parts[2]} (a race)"
    return ""


def agree(serial: dict, par: dict) -> str:
    """'' when every printed value of ``par`` matches ``serial`` to PAR_RTOL, else the first
    disagreement."""
    for p in sorted(serial):
        s, q = serial[p], par.get(p)
        if q is None:
            return f"point {p} missing"
        pairs = [("primal", s["primal"], q["primal"])]
        for key in ("rev", "fwd"):
            pairs += [(f"{key} d/dx{i}", v, q[key].get(i, math.nan)) for i, v in sorted(s[key].items())]
        for what, a, b in pairs:
            if not (abs(a - b) <= PAR_RTOL * max(1.0, abs(a), abs(b))):
                return f"point {p} {what}: parallel {b!r} != serial {a!r}"
    return ""


def check_omp_source(text: str, level: str, threads=THREADS, serial_twin: bool = True) -> Outcome:
    """The OpenMP program ``text`` at ``level`` and each team size; without ``serial_twin``
    (the CI sample, for CPU time) the team sizes are compared with each other, forward mode
    and finite differences but the program is not built without -fopenmp."""
    work = Path(tempfile.mkdtemp(prefix="zymase-fuzzpar-"))
    try:
        src = work / "prog.c"
        src.write_text(text)
        ser_exe, par_exe = work / "serial", work / "parallel"
        ref = None
        if serial_twin:
            failed = build(src, level, ser_exe)
            if failed:
                failed.detail = "serial build: " + failed.detail
                return failed
            serial = run_exe(ser_exe, level, False)
            if serial.kind != "right":
                serial.detail = "serial program: " + serial.detail
                return serial
            ref = parse_driver(serial.output)
        failed = build(src, level, par_exe, OMP_LEVEL_FLAGS)
        if failed:
            return failed
        for t in threads:
            o = run_exe(par_exe, level, False, env={**os.environ, "OMP_NUM_THREADS": str(t)})
            if o.kind == "right":
                got = parse_driver(o.output)
                diff = repeat_deviation(o.output) or (agree(ref, got) if ref is not None else "")
                if diff:
                    o.kind, o.detail = "wrong", diff
                if ref is None:  # the first team size is the reference of the others
                    ref = got
            if o.kind != "right":
                o.detail = f"{t} threads: {o.detail}"
                return o
        return o
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_prange_source(text: str, threads=THREADS, serial_twin: bool = True) -> Outcome:
    """The prange module ``text`` at each Numba thread count; without ``serial_twin`` (the
    CI sample, for CPU time) the thread counts are compared with each other, forward mode
    and finite differences but not with the ``parallel=False`` function's derivative."""
    import numba

    import zymase
    from zymase.errors import ZymaseError

    from .check_njit import _copy, _point, load_module
    from .gen_par import serial_prange

    usable = [t for t in threads if t <= numba.config.NUMBA_NUM_THREADS]
    try:
        par = load_module(text, "fuzz_prange_par")
        ser = load_module(serial_prange(text), "fuzz_prange_ser")
        points = {p: par.make_args(p) for p in (0, 1)}
        for args in points.values():
            v = float(ser.f(*_copy(args)))
            if not math.isfinite(v) or abs(v) > 1e8:
                return Outcome("invalid", PRANGE_LEVEL, f"primal {v}")
    except Exception as exc:  # the generated primal does not compile or run: a generator defect
        return Outcome("invalid", PRANGE_LEVEL, f"primal raised {type(exc).__name__}: {str(exc)[:300]}")
    before = numba.get_num_threads()
    stage = "serial"
    try:
        nargs = len(points[0])
        argnums = tuple(range(nargs)) if nargs > 1 else 0
        ref = None
        if serial_twin:
            ref = {p: _point(ser.f, zymase.grad(ser.f, argnums=argnums), a, zymase) for p, a in points.items()}
            kind, detail = compare_outputs(ref, fast=False)
            if kind != "right":
                return Outcome(kind, PRANGE_LEVEL, "serial function: " + detail, json.dumps(ref, indent=1))
        grad = zymase.grad(par.f, argnums=argnums)
        for t in usable:
            stage = f"{t} threads"
            numba.set_num_threads(t)
            res = {p: _point(par.f, grad, a, zymase) for p, a in points.items()}
            kind, detail = compare_outputs(res, fast=False)
            if kind == "right":
                diff = agree(ref, res) if ref is not None else ""
                kind, detail = ("wrong", diff) if diff else (kind, detail)
            if ref is None:  # the first thread count is the reference of the others
                ref = res
            if kind != "right":
                return Outcome(kind, PRANGE_LEVEL, f"{stage}: {detail}", json.dumps(res, indent=1))
    except ZymaseError as err:
        return Outcome("refused", PRANGE_LEVEL, err.format())
    except Exception as exc:
        return Outcome("crashed", PRANGE_LEVEL, f"{stage}: internal error: raised {type(exc).__name__}: "
                                                f"{str(exc)[:300]}")
    finally:
        numba.set_num_threads(before)
    # which derivatives ran in parallel (the others fell back to the serial copy's)
    ran = {mode: next((r.parfors for r in reversed(zymase.stats()) if r.function == "f" and r.mode == mode), "?")
           for mode in ("rev", "fwd")}
    note = f"reverse {ran['rev'] or 'no parfor'}, forward {ran['fwd'] or 'no parfor'}"
    if len(usable) != len(threads):
        note += f"; threads {usable} only"
    return Outcome("right", PRANGE_LEVEL, note)


def main(argv: list[str]) -> int:
    """``SEED...``: generated prange programs; ``--file PATH``: a written (reduced) one;
    ``--sample``: the CI sample's small programs without the serial twin."""
    from .gen_par import generate_prange

    sample = "--sample" in argv
    argv = [a for a in argv if a != "--sample"]
    if argv[:1] == ["--file"]:
        full = Path(argv[1]).read_text()
        o = check_prange_source(full.split("\n", 1)[1] if full.startswith("# fuzz-failure") else full)
        print(json.dumps({"seed": None, "kind": o.kind, "detail": o.detail, "output": o.output}), flush=True)
        return 0
    for s in argv:
        text = generate_prange(int(s), SAMPLE_FEATURES if sample else None, size=SAMPLE_SIZE if sample else None)
        o = check_prange_source(text, serial_twin=not sample)
        print(json.dumps({"seed": int(s), "kind": o.kind, "detail": o.detail, "output": o.output}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
