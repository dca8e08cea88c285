"""The ADBench workloads (GMM, BA, LSTM, hand tracking) and the ODE as JAX programs, on
ADBench's input files, for ``bench/jax_grad.py``.

The JAX objectives are the benchmark suite's own (``zymase.bench.frameworks.jax_models``,
written after ADBench's reference implementations: vectorized jnp, lax.scan for the
LSTM and the ODE). Their inputs come the way the suite's JAX comparison gets them: the
C workload (``zymase.bench.workloads``) reads ADBench's file (or, without one, the
suite's deterministic generator) and dumps its arrays (``BENCH_DUMP``); the dump's
arrays are the JAX objective's arguments. The C build (``zymase cc``) is made once and
kept in ``--keep DIR`` when given.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zymase.bench import cases, native
from zymase.bench.dumpfile import read_dump

DEFAULT_ADBENCH = Path("/work/shared/adbench")
WORKLOADS = ("gmm", "ba", "lstm", "hand", "ode")


# the suite's quick case per workload; GMM at ADBench's d=10 K=25 n=1k rather than the
# d=2 K=5 file, whose gradient (under a millisecond) measures XLA's per-kernel overhead
LABELS = {"gmm": "d=10 K=25 n=1000"}


def _case(name: str) -> cases.Case:
    """The suite's quick case of the workload (the small ADBench files)."""
    return next(c for c in cases.suite(quick=True)
                if c.workload.name == name and LABELS.get(name, c.label) == c.label)


def load(name: str, work: Path, adbench: Path | None):
    """(objective, argument arrays, argnums, where the data came from) of one workload."""
    import jax.numpy as jnp

    from zymase.bench.frameworks import jax_models

    case = _case(name)
    args, source = case.prepare(work, adbench)
    dump = work / f"{name}.dump"
    if not dump.exists():
        exe = work / f"{name}.preopt"
        if not exe.exists():
            build = native.build(case.workload, "preopt", work)
            if build.exe is None:
                raise RuntimeError(f"{name}: {build.error}")
        outcome = native.run(exe, args, {"BENCH_DUMP": str(dump), "BENCH_FD": "0", "BENCH_PRIMAL": "0",
                                         "BENCH_MIN_S": "0", "BENCH_REPEATS": "1"}, 600)
        if outcome.error:
            raise RuntimeError(f"{name}: {outcome.error}")
    arrays = read_dump(dump)
    model = jax_models.MODELS[name](arrays)
    values = [jnp.asarray(np.asarray(arrays[n])) for n in (*model.wrt, *model.const)]
    return model.objective, values, tuple(range(len(model.wrt))), f"{case.name} ({source})"
