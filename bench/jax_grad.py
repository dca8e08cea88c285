#!/usr/bin/env python3
"""zymase.jax.grad against jax.grad on XLA CPU (issue 28's performance items), both
jitted, run alternately in one process on the same inputs; reported as the ratio of the
best times (zymase / JAX). With ``enzyme-ad`` installed (Enzyme-JAX, an optional bench
dependency: pip install enzyme-ad==0.0.16) its gradient (``jax.grad`` of
``enzyme_jax_ir()(f)``) is timed in the same rounds. For the while loop, which JAX
cannot reverse, the ratio is zymase's gradient against the primal.

    python bench/jax_grad.py [--rounds R] [--only mlp slice_product ...]
                             [--adbench DIR] [--keep DIR] [--no-adbench]
                             [--baseline SRC] [--clock wall|cpu]

``--clock cpu`` times each call in process CPU time instead of wall time: on a shared
machine, run pinned to one CPU (``OPENBLAS_NUM_THREADS=1 XLA_FLAGS="--xla_cpu_multi_thread_eigen=false"
taskset -c 1``: XLA's intra-op pool has no flag), where a call's CPU time does not count the time other
processes hold the cores (session 25: wall-time ratios of unchanged programs moved by up
to 3x at load 17 on 2 cores, CPU-time ratios by about 10%, more for sub-millisecond calls).
In CPU time a call is not timed alone but as the mean of a batch of calls lasting at least
``CPU_BATCH_S`` (a call timed alone can miss the time XLA's worker thread spent on it).

``--baseline SRC`` also times the derivative module that another zymase source tree
(``SRC``, e.g. the main checkout's ``src``) generates for each workload, in the same
alternating rounds: the module's text is made in a subprocess with ``PYTHONPATH=SRC``
and run here through the same JAX primitive, so before/after ratios come from one
process.

Workloads: the benchmark suite's ADBench workloads in JAX on ADBench's small input files
(adbench_gmm, adbench_ba, adbench_lstm, adbench_hand, and the ODE; see
bench/jax_adbench.py), an MLP loss (batch 256, 784-256-128-10), a GMM-like
log-likelihood (logsumexp of quadratic forms), an LSTM-like recurrence (lax.scan, 20
steps), a slice of an elementwise product of large vectors (where pushing the slice
through the product pays), and Newton's method for a square root per element
(lax.while_loop), and a Gaussian-process likelihood with jnp.linalg.solve and slogdet
(LU). The geometric mean is over the workloads compared with jax.grad.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import zymase.jax as zj

jax.config.update("jax_enable_x64", True)


def mlp():
    rng = np.random.default_rng(0)
    sizes = [784, 256, 128, 10]
    params = [(jnp.asarray(rng.normal(0, 0.05, (m, n))), jnp.asarray(np.zeros(n)))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = jnp.asarray(rng.normal(size=(256, 784)))
    y = jnp.asarray(np.eye(10)[rng.integers(0, 10, 256)])

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jnp.tanh(h @ w + b)
        w, b = params[-1]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ w + b) * y, axis=1))

    return loss, (params, x, y)


def gmm():
    rng = np.random.default_rng(1)
    k, d, n = 25, 10, 1000
    means = jnp.asarray(rng.normal(size=(k, d)))
    log_scales = jnp.asarray(rng.normal(0, 0.1, (k, d)))
    alphas = jnp.asarray(rng.normal(size=k))
    x = jnp.asarray(rng.normal(size=(n, d)))

    def loss(alphas, means, log_scales, x):
        centered = (x[:, None, :] - means[None]) * jnp.exp(log_scales)[None]
        inner = alphas[None] + jnp.sum(log_scales, axis=1)[None] - 0.5 * jnp.sum(centered ** 2, axis=2)
        return jnp.sum(jax.nn.logsumexp(inner, axis=1)) - n * jax.nn.logsumexp(alphas)

    return loss, (alphas, means, log_scales, x)


def lstm():
    rng = np.random.default_rng(2)
    h, steps = 64, 20
    w = jnp.asarray(rng.normal(0, 0.1, (2 * h, 4 * h)))
    seq = jnp.asarray(rng.normal(size=(steps, h)))

    def loss(w, seq):
        def cell(carry, x):
            hid, c = carry
            z = jnp.concatenate([x, hid]) @ w
            i, f, o, g = jnp.split(z, 4)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            hid = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (hid, c), jnp.sum(hid ** 2)

        _, out = lax.scan(cell, (jnp.zeros(h), jnp.zeros(h)), seq)
        return jnp.sum(out)

    return loss, (w, seq)


def slice_product():
    rng = np.random.default_rng(3)
    a = jnp.asarray(rng.normal(size=1_000_000))
    b = jnp.asarray(rng.normal(size=1_000_000))

    def loss(a, b):
        return jnp.sum(jnp.sin((a * b)[1000:2000]))

    return loss, (a, b)


def newton():
    a = jnp.asarray(np.random.default_rng(4).uniform(0.5, 50.0, 10_000))

    def loss(a):
        def body(s):
            return 0.5 * (s[0] + a / s[0]), s[1] + 1

        root = lax.while_loop(lambda s: jnp.max(jnp.abs(s[0] * s[0] - a) / a) > 1e-14, body, (a, 0))[0]
        return jnp.sum(root)

    return loss, (a,)


def solve():
    """A Gaussian-process negative log-likelihood written with jnp.linalg.solve and
    slogdet (LU: getrf and trsm), differentiated in the length scale and the inputs."""
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.normal(size=(200, 3)))
    y = jnp.asarray(rng.normal(size=200))

    def loss(log_scale, x):
        d2 = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
        k = jnp.exp(-0.5 * d2 / jnp.exp(2 * log_scale)) + 0.1 * jnp.eye(x.shape[0])
        return 0.5 * y @ jnp.linalg.solve(k, y) + 0.5 * jnp.linalg.slogdet(k)[1]

    return loss, (jnp.asarray(0.3), x)


WORKLOADS = {"mlp": mlp, "gmm": gmm, "lstm": lstm, "slice_product": slice_product, "newton": newton,
             "solve": solve}
ARGNUMS = {"gmm": (0, 1, 2), "solve": (0, 1)}


def _enzyme_grad(loss, argnums):
    """Enzyme-JAX's gradient of ``loss`` (None when enzyme-ad is not installed)."""
    try:
        from enzyme_ad.jax import enzyme_jax_ir
    except ImportError:
        return None
    return jax.jit(jax.grad(enzyme_jax_ir()(loss), argnums=argnums))


def _flat(args, argnums):
    """The flattened arguments and which of them are differentiated."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    leaves, tree = jax.tree_util.tree_flatten(tuple(args))
    active = []
    for i, a in enumerate(args):
        active += [i in nums] * len(jax.tree_util.tree_leaves(a))
    return leaves, tree, active


def _emit_derivative(ns, work: Path) -> int:
    """Write the derivative module of workload ``ns.emit[0]`` to ``ns.emit[1]`` (run with
    another source tree on PYTHONPATH by --baseline)."""
    from zymase.frontends import jax as front

    name, out = ns.emit
    ns.only = [name]
    for _, loss, args, argnums in _workloads(ns, work):
        leaves, tree, active = _flat(args, argnums)
        Path(out).write_text(front.derivative_module(loss, leaves, tree, "reverse", active))
    return 0


def _baseline_grad(ns, work: Path, name: str, loss, args, argnums):
    """The gradient function running the derivative module ``--baseline``'s tree makes."""
    out = work / f"{name}.baseline.mlir"
    cmd = [sys.executable, __file__, "--emit", name, str(out), "--keep", str(work)]
    if ns.adbench is None:
        cmd.append("--no-adbench")
    else:
        cmd += ["--adbench", str(ns.adbench)]
    env = dict(os.environ, PYTHONPATH=str(ns.baseline))
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return grad_from_text(out.read_text(), loss, args, argnums)


def grad_from_text(text: str, loss, args, argnums):
    """A jitted gradient of ``loss`` (at arguments shaped like ``args``) that runs the
    reverse-mode derivative module ``text`` (``frontends/jax.derivative_module``'s
    output, maybe made by another source tree) through zymase's JAX primitive."""
    from jax.core import ShapedArray

    from zymase.frontends import jax as front

    leaves, tree, active = _flat(args, argnums)
    value_aval = ShapedArray((), jax.eval_shape(loss, *args).dtype)
    grad_avals = [ShapedArray(x.shape, x.dtype) for x, a in zip(leaves, active) if a]

    def grad(*args):
        flat = jax.tree_util.tree_leaves(tuple(args))
        grads = front.run(text, [*flat, jnp.ones((), value_aval.dtype)], [value_aval, *grad_avals])[1:]
        return tuple(grads)

    return jax.jit(grad)


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = time.perf_counter


#: wall seconds a CPU-time batch runs at least (see _cpu_per_call)
CPU_BATCH_S = 0.2


def _best(fn, args, calls: int) -> float:
    if _clock is time.process_time:
        return _cpu_per_call(fn, args)
    best = float("inf")
    for _ in range(calls):
        t = _clock()
        jax.block_until_ready(fn(*args))
        best = min(best, _clock() - t)
    return best


def _cpu_per_call(fn, args) -> float:
    """Process CPU time per call over a batch of calls lasting at least CPU_BATCH_S.

    XLA runs a call on its own worker thread, and Linux adds a running thread's time to the
    process CPU clock only when that thread is descheduled or at a scheduler tick: one call
    timed alone can miss most of its work, and the best of several such timings picks the
    most undercounted one (session 25: a 2.5 ms reference timed at 0.2 ms in one run). Over
    a batch the error is at most a tick per thread, small against the batch."""
    jax.block_until_ready(fn(*args))
    calls, start_wall, start_cpu = 0, time.perf_counter(), time.process_time()
    while True:
        jax.block_until_ready(fn(*args))
        calls += 1
        if time.perf_counter() - start_wall >= CPU_BATCH_S:
            return (time.process_time() - start_cpu) / calls


def _workloads(ns, work: Path):
    """(name, loss, args, argnums) of every workload asked for, ADBench's first."""
    sys.path.insert(0, str(Path(__file__).parent))
    import jax_adbench

    if not ns.no_adbench:
        for name in jax_adbench.WORKLOADS:
            label = f"adbench_{name}"
            if ns.only and label not in ns.only:
                continue
            loss, args, argnums, source = jax_adbench.load(name, work, ns.adbench)
            print(f"# {label}: {source}", flush=True)
            yield label, loss, args, argnums
    for name, build in WORKLOADS.items():
        if ns.only and name not in ns.only:
            continue
        loss, args = build()
        yield name, loss, args, ARGNUMS.get(name, 0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds (best of 5 calls each)")
    p.add_argument("--adbench", type=Path, default=Path("/work/shared/adbench"),
                   help="ADBench's data files (gmm/, ba/, lstm/, hand/); generated inputs where absent")
    p.add_argument("--keep", type=Path, default=None, help="keep the C builds and dumps of the ADBench inputs here")
    p.add_argument("--no-adbench", action="store_true", help="only the synthetic workloads")
    p.add_argument("--baseline", type=Path, default=None,
                   help="also time the derivatives another zymase source tree makes (its src directory)")
    p.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                   help="time calls in wall time or in process CPU time (see the module doc)")
    p.add_argument("--emit", nargs=2, metavar=("WORKLOAD", "FILE"), help=argparse.SUPPRESS)
    ns = p.parse_args()
    global _clock
    _clock = CLOCKS[ns.clock]
    if not ns.adbench.is_dir():
        ns.adbench = None
    with tempfile.TemporaryDirectory(prefix="zymase-jax-bench-") as tmp:
        work = ns.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if ns.emit:
            return _emit_derivative(ns, work)
        return _compare(ns, work)


def _compare(ns, work: Path) -> int:
    baseline_head = f" {'baseline':>10} {'ratio':>7} {'new/old':>7}" if ns.baseline else ""
    print(f"{'workload':<15} {'zymase':>10} {'reference':>10} {'ratio':>7} {'enzyme-jax':>11} {'ratio':>7}"
          f"{baseline_head}  reference")
    ratios, enzyme_ratios, baseline_ratios = [], [], []
    for name, loss, args, argnums in _workloads(ns, work):
        ours = jax.jit(zj.grad(loss, argnums=argnums))
        enzyme = None
        if name == "newton":  # JAX cannot reverse the loop: compare with the primal
            theirs, what = jax.jit(loss), "primal"
        else:
            theirs, what = jax.jit(jax.grad(loss, argnums=argnums)), "jax.grad"
            enzyme = _enzyme_grad(loss, argnums)
        got = jax.block_until_ready(ours(*args))
        want = jax.block_until_ready(theirs(*args))
        if what == "jax.grad":  # the same gradient, or the timing means nothing
            for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-8, atol=1e-10)
        baseline = _baseline_grad(ns, work, name, loss, args, argnums) if ns.baseline else None
        if baseline is not None:  # the same gradient as this tree's
            for g, w in zip(jax.tree_util.tree_leaves(jax.block_until_ready(baseline(*args))),
                            jax.tree_util.tree_leaves(got)):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-8, atol=1e-10)
        if enzyme is not None:
            try:
                jax.block_until_ready(enzyme(*args))
            except Exception as exc:  # Enzyme-JAX refuses some programs: say so, go on
                print(f"# {name}: enzyme-jax failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
                enzyme = None
        t_ours, t_theirs, t_enzyme, t_base = float("inf"), float("inf"), float("inf"), float("inf")
        for _ in range(ns.rounds):
            t_ours = min(t_ours, _best(ours, args, 5))
            t_theirs = min(t_theirs, _best(theirs, args, 5))
            if enzyme is not None:
                t_enzyme = min(t_enzyme, _best(enzyme, args, 5))
            if baseline is not None:
                t_base = min(t_base, _best(baseline, args, 5))
        ratio = t_ours / t_theirs
        enzyme_text = f"{'-':>11} {'-':>7}"
        if enzyme is not None:
            enzyme_text = f"{t_enzyme * 1e3:9.3f}ms {t_ours / t_enzyme:7.2f}"
        if what == "jax.grad":
            ratios.append(ratio)
            if enzyme is not None:
                enzyme_ratios.append(t_ours / t_enzyme)
        baseline_text = ""
        if baseline is not None:
            baseline_text = f" {t_base * 1e3:8.3f}ms {t_base / t_theirs:7.2f} {t_ours / t_base:7.2f}"
            if what == "jax.grad":
                baseline_ratios.append(t_base / t_theirs)
        print(f"{name:<15} {t_ours * 1e3:9.3f}ms {t_theirs * 1e3:9.3f}ms {ratio:7.2f} {enzyme_text}{baseline_text}  "
              f"{what}", flush=True)
    if ratios:
        print(f"geometric mean against jax.grad: {float(np.exp(np.mean(np.log(ratios)))):.2f} "
              f"(max {max(ratios):.2f})")
    if baseline_ratios:
        print(f"baseline's geometric mean against jax.grad: {float(np.exp(np.mean(np.log(baseline_ratios)))):.2f} "
              f"(max {max(baseline_ratios):.2f})")
    if enzyme_ratios:
        print(f"geometric mean against Enzyme-JAX: {float(np.exp(np.mean(np.log(enzyme_ratios)))):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
