"""One framework on one workload's dumps, in its own process:

    python -m zymase.bench.frameworks.worker {jax|torch} WORKLOAD DUMP...

For every dump: build the gradient function, call it once (JAX: trace + compile, reported
as compile_s), time it like the C programs do (best of batches; BENCH_MIN_S, BENCH_REPEATS),
save the gradient to DUMP.FRAMEWORK.npz and print one JSON line. The parent process sets
the thread-count environment before this process starts (see ``single_thread_env``); the
process confines itself to one CPU before it loads the framework (``pin_to_one_cpu``).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import traceback

import numpy as np

FRAMEWORKS = ("jax", "torch")


def pin_to_one_cpu() -> None:
    """Confine this process to one CPU. XLA's CPU client runs its computations on Eigen
    thread pools (threads named tf_XLAEigen) whatever XLA_FLAGS ask: JAX 0.10 took two
    cores on this two-core machine, and its gradients ran 1.6x faster than when confined
    to one (GMM d=10 K=25 n=10k: 70 against 113 ms), and slower whenever the other core
    was busy. One CPU is the "one thread each" the comparison is about."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def single_thread_env() -> dict[str, str]:
    """Environment that keeps XLA and PyTorch (and the BLAS libraries under them) on one
    thread, like our single-threaded C."""
    return {
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "JAX_PLATFORMS": "cpu",
    }


@functools.cache
def _load(framework: str):
    """The framework's models module, its threads limited to one (once per process)."""
    if framework == "jax":
        from zymase.bench.frameworks import jax_models as models
    else:
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
        from zymase.bench.frameworks import torch_models as models
    return models


def measure(framework: str, workload: str, dump_path: str) -> dict:
    from zymase.bench.dumpfile import read_dump
    from zymase.bench.timing import best_time, timing_budget

    models = _load(framework)
    arrays = read_dump(dump_path)
    model = models.MODELS[workload](arrays)
    args = [models.to_device(arrays[name]) for name in (*model.wrt, *model.const)]
    if framework == "torch":
        for tensor in args[: len(model.wrt)]:
            tensor.requires_grad_(True)
    grad = models.gradient_function(model)

    t0 = time.perf_counter()
    gradient = models.block(grad(*args))
    first_call_s = time.perf_counter() - t0
    objective = models.value(model, args)
    min_s, repeats = timing_budget()
    grad_s = best_time(lambda: models.block(grad(*args)), min_s, repeats)

    out = f"{dump_path}.{framework}.npz"
    np.savez(out, **{name: np.asarray(g, dtype=np.float64) for name, g in zip(model.wrt, gradient)})
    return {"dump": dump_path, "grad_s": grad_s, "first_call_s": first_call_s, "objective": objective,
            "gradient_file": out}


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in FRAMEWORKS:
        print(__doc__, file=sys.stderr)
        return 2
    framework, workload, dumps = argv[0], argv[1], argv[2:]
    pin_to_one_cpu()
    failed = False
    for dump in dumps:
        try:
            report = measure(framework, workload, dump)
        except Exception as exc:  # reported per dump; the runner shows it in the table
            traceback.print_exc()
            report = {"dump": dump, "error": f"{type(exc).__name__}: {exc}"[:300]}
            failed = True
        print(json.dumps(report), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
