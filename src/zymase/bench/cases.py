"""The benchmark suite: which workloads, at which sizes, with which inputs.

A Workload is one C program in ``workloads/`` (built once per variant); a Case is one run
of it at one size. ``suite(quick)`` lists the cases; --quick keeps a subset that finishes
in a few minutes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from zymase.bench import inputs

WORKLOAD_DIR = Path(__file__).parent / "workloads"


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    #: extra flags for every build of the program
    flags: tuple[str, ...] = ()
    #: whether the runner checks gradient / primal <= 3 for it (the issue's targets)
    ratio_target: bool = False
    #: the C program; default workloads/NAME.c
    source_file: Path | None = None
    #: the JAX and PyTorch model compared with it (frameworks/*_models.py); default NAME
    model_name: str = ""
    #: for a variant restructured for speed, what was changed: it is shown beside the
    #: workload in its reference form, labelled, and no headline target counts it
    tuned: str = ""

    @property
    def source(self) -> Path:
        return self.source_file or WORKLOAD_DIR / f"{self.name}.c"

    @property
    def model(self) -> str:
        return self.model_name or self.name


WORKLOADS = {
    w.name: w
    for w in [
        # ADBench's reference form (point by point, component by component); gmm_tuned is
        # the same objective restructured for the gradient's speed, shown beside it
        Workload("gmm", "GMM", ratio_target=True),
        Workload("gmm_tuned", "GMM (tuned)", model_name="gmm",
                 tuned="Q_k copied into a packed row-major triangle, points in blocks of 6"),
        Workload("ba", "BA", ratio_target=True),
        Workload("lstm", "LSTM", ratio_target=True),
        Workload("hand", "Hand tracking", ratio_target=True),
        # -fno-math-errno: otherwise sqrt may write errno, mag() is not readonly and LICM
        # cannot hoist it out of the loop (the gradient stays O(n^2) even with pre-optimization)
        Workload("normalize", "Normalization", flags=("-fno-math-errno",)),
        Workload("normalize_tuned", "Normalization (tuned)", flags=("-fno-math-errno",), model_name="normalize",
                 tuned="the sums declared order-free (fp reassociate) and mag's sum interleaved four ways"),
        Workload("ode", "ODE", ratio_target=True),
        Workload("fft", "FFT"),
    ]
}


@dataclass
class Case:
    workload: Workload
    label: str
    params: dict[str, int]
    #: writes or finds the inputs: (work directory, ADBench data directory or None) ->
    #: (program arguments, where the data came from)
    prepare: Callable[[Path, Path | None], tuple[list[str], str]] = field(repr=False)
    quick: bool = False
    #: build variants not run for this case (e.g. an O(n^2) --no-preopt gradient at large n)
    skip: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.workload.name} {self.label}"


def _gmm(d: int, k: int, n: int, quick: bool = False, workload: str = "gmm") -> Case:
    def prepare(work: Path, adbench: Path | None):
        found = inputs.find_adbench_file(adbench, f"gmm/{n // 1000}k/gmm_d{d}_K{k}.txt")
        if found:
            return [str(found)], f"ADBench {found.name}"
        return [str(inputs.write_gmm(work / f"gmm_d{d}_K{k}_n{n}.txt", d, k, n))], "generated"

    return Case(WORKLOADS[workload], f"d={d} K={k} n={n}", {"d": d, "K": k, "n": n}, prepare, quick)


#: ADBench's BA files by size tier (n cameras, m points, p observations)
BA_SIZES = {"small": ("ba1", 49, 7776, 31843), "medium": ("ba9", 810, 88814, 393775)}


def _ba(tier: str, quick: bool = False) -> Case:
    stem, n, m, p = BA_SIZES[tier]
    file_name = f"{stem}_n{n}_m{m}_p{p}.txt"

    def prepare(work: Path, adbench: Path | None):
        found = inputs.find_adbench_file(adbench, f"ba/{file_name}")
        if found:
            return [str(found)], f"ADBench {found.name}"
        return [str(inputs.write_ba(work / file_name, n, m, p))], "generated"

    return Case(WORKLOADS["ba"], f"{tier} n={n} m={m} p={p}", {"n": n, "m": m, "p": p}, prepare, quick)


def _lstm(layers: int, chars: int, quick: bool = False) -> Case:
    file_name = f"lstm_l{layers}_c{chars}.txt"

    def prepare(work: Path, adbench: Path | None):
        found = inputs.find_adbench_file(adbench, f"lstm/{file_name}")
        if found:
            return [str(found)], f"ADBench {found.name}"
        return [str(inputs.write_lstm(work / file_name, layers, chars))], "generated"

    return Case(WORKLOADS["lstm"], f"l={layers} c={chars}", {"l": layers, "c": chars}, prepare, quick)


def _hand(quick: bool = False) -> Case:
    def prepare(work: Path, adbench: Path | None):
        model = inputs.find_adbench_file(adbench, "hand/simple_small/model")
        instance = inputs.find_adbench_file(adbench, "hand/simple_small/hand1_t26_c100.txt")
        if model and instance:
            return [str(model), str(instance)], f"ADBench simple_small/{instance.name}"
        model, instance = inputs.write_hand(work / "hand_simple_small")
        return [str(model), str(instance)], "generated"

    return Case(WORKLOADS["hand"], "simple small c=100", {"c": 100}, prepare, quick)


def _generated_by_program(name: str, label: str, args: list[int], quick: bool = False) -> Case:
    """Workloads without an ADBench format generate their inputs themselves from the size."""

    def prepare(work: Path, adbench: Path | None):
        return [str(a) for a in args], "generated"

    keys = {"normalize": ["n"], "normalize_tuned": ["n"], "ode": ["cells", "steps"], "fft": ["n"]}[name]
    return Case(WORKLOADS[name], label, dict(zip(keys, args)), prepare, quick)


GMM_D = (2, 10, 20, 32, 64)
GMM_K = (5, 25, 50, 100, 200)
#: the GMM sizes --quick keeps (ADBench's headline size first)
GMM_QUICK = {(10, 25, 1000), (2, 5, 1000), (20, 50, 1000), (10, 25, 10000)}
NORMALIZE_N = (1000, 3000, 10000, 30000, 100000)
NORMALIZE_QUICK = {1000, 3000, 10000, 100000}
#: --quick leaves out --no-preopt above this n: it is O(n^2) there (minutes at n = 1e5)
NORMALIZE_QUICK_NOPREOPT_MAX = 10000


def suite(quick: bool = False) -> list[Case]:
    cases: list[Case] = []
    for n in (1000, 10000):
        for d in GMM_D:
            for k in GMM_K:
                cases.append(_gmm(d, k, n, quick=(d, k, n) in GMM_QUICK))
    # the tuned variant at the --quick sizes, beside the reference form
    cases += [_gmm(d, k, n, quick=True, workload="gmm_tuned") for d, k, n in sorted(GMM_QUICK)]
    cases += [_ba("small", quick=True), _ba("medium")]
    cases += [_lstm(layers, chars, quick=(layers, chars) == (2, 1024)) for layers in (2, 4) for chars in (1024, 4096)]
    cases.append(_hand(quick=True))
    for n in NORMALIZE_N:
        case = _generated_by_program("normalize", f"n={n}", [n], quick=n in NORMALIZE_QUICK)
        if quick and n > NORMALIZE_QUICK_NOPREOPT_MAX:
            case.skip = ("nopreopt",)
        cases.append(case)
    # the tuned variant at the sizes --quick runs with and without pre-optimization
    cases += [_generated_by_program("normalize_tuned", f"n={n}", [n], quick=True)
              for n in sorted(NORMALIZE_QUICK) if n <= NORMALIZE_QUICK_NOPREOPT_MAX]
    cases.append(_generated_by_program("ode", "cells=100 steps=10000", [100, 10000], quick=True))
    cases.append(_generated_by_program("fft", "n=1024", [1024], quick=True))
    cases.append(_generated_by_program("fft", "n=65536", [65536]))
    return [c for c in cases if c.quick] if quick else cases
