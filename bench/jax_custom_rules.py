#!/usr/bin/env python3
"""What honouring JAX's custom rules costs (issue 28 item 4): CPU time of zymase.jax's
first reverse derivative (lowering, parsing, differentiating) of a stack of layers using
JAX's own functions with custom_jvp rules (``jax.nn.relu``, ``jnp.logaddexp``), and the
derivative's run time against jax.grad, for this source tree and, with ``--baseline SRC``,
another one (e.g. the branch point's ``src``, which differentiates those functions through
their primals). Each measurement runs in a fresh process, the trees alternating.

    python bench/jax_custom_rules.py [--layers 20] [--rounds 3] [--baseline SRC]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
from zymase.frontends import jax as front
from jax.core import ShapedArray

layers = int(sys.argv[1])
x = jnp.linspace(-1.0, 1.0, 128)
w = jnp.eye(128) * 0.9 + 0.001

def f(x, w):
    h = x
    for _ in range(layers):
        h = jax.nn.relu(w @ h) + 0.01 * jnp.logaddexp(h, 0.1)
    return jnp.sum(h)

leaves, tree = jax.tree_util.tree_flatten((x, w))
avals = tuple(front._aval(v) for v in leaves)
t0 = time.process_time(); front.lower(f, leaves, tree)
t1 = time.process_time(); front._parsed(f, tree, avals)
t2 = time.process_time(); text = front.derivative_module(f, leaves, tree, "reverse", [True, True])
t3 = time.process_time()
outs = [ShapedArray((), jnp.float64), ShapedArray(x.shape, x.dtype), ShapedArray(w.shape, w.dtype)]
ours = jax.jit(lambda x, w: front.run(text, [x, w, jnp.ones(())], outs))
theirs = jax.jit(jax.grad(f, argnums=(0, 1)))
jax.block_until_ready(ours(x, w)); jax.block_until_ready(theirs(x, w))
best = {"ours": 1e9, "theirs": 1e9}
for _ in range(5):
    for k, g in (("ours", ours), ("theirs", theirs)):
        t = time.perf_counter()
        for _ in range(10):
            jax.block_until_ready(g(x, w))
        best[k] = min(best[k], (time.perf_counter() - t) / 10)
print(json.dumps({"lower": t1 - t0, "parse": t2 - t1, "reverse": t3 - t2, "run_ratio": best["ours"] / best["theirs"]}))
"""


def _measure(src: Path, layers: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(layers)], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--baseline", type=Path, default=None, help="another zymase source tree (its src directory)")
    ns = p.parse_args()
    trees = {"this": Path(__file__).resolve().parent.parent / "src"}
    if ns.baseline:
        trees["baseline"] = ns.baseline.resolve()
    results: dict[str, list[dict]] = {k: [] for k in trees}
    for _ in range(ns.rounds):
        for name, src in trees.items():
            results[name].append(_measure(src, ns.layers))
    print(f"{'tree':<9} {'lower s':>8} {'parse s':>8} {'reverse s':>10} {'run/jax.grad':>13}  (best of {ns.rounds})")
    for name, runs in results.items():
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        print(f"{name:<9} {best['lower']:8.2f} {best['parse']:8.2f} {best['reverse']:10.2f} {best['run_ratio']:13.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
