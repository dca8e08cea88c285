#!/usr/bin/env python3
"""zymase.jax.grad against jax.grad through JAX's LAPACK custom_calls on XLA CPU (the
rules of ``autodiff/rules/stablehlo_linalg.py`` and ``stablehlo_factorizations.py``):
both jitted, run alternately in one process on the same inputs, reported as the ratio
of the best times (zymase / JAX), after checking that the two gradients agree.

    OPENBLAS_NUM_THREADS=1 python bench/jax_linalg.py [--rounds R] [--n N] [--only lu svd ...]
                                                       [--baseline SRC]

(single-threaded LAPACK: on a shared machine its threads make the times vary several-fold)

``--baseline SRC`` also times the derivative module another zymase source tree (``SRC``,
e.g. the main checkout's ``src``) makes for each workload, in the same alternating
rounds (the module made in a subprocess with ``PYTHONPATH=SRC``, run here through the
same JAX primitive, as in ``bench/jax_grad.py``).

Workloads (float64, n x n matrices, n = 200 by default):

* gp: a Gaussian-process negative log-likelihood, ``jnp.linalg.cholesky`` of a kernel
  matrix, ``cho_solve`` and the log-determinant (potrf and trsm);
* triangular: solves with a triangular matrix from both sides, transposed and not (trsm);
* eigh: a spectral loss, eigenvalues and eigenvectors of a symmetric matrix (syevd);
* lu: ``jnp.linalg.solve``, ``inv`` and ``slogdet`` of a general matrix (getrf, the rules
  of ``stablehlo_factorizations.py``);
* svd: a rank-8 fit through ``jnp.linalg.svd`` and the nuclear norm (gesdd, n x n/2);
* qr: least squares through ``jnp.linalg.qr`` of a tall n x n/2 matrix (geqrf, orgqr).
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
from jax.scipy.linalg import cho_solve, solve_triangular

import zymase.jax as zj

jax.config.update("jax_enable_x64", True)


def gp(n):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(n, 3)))
    y = jnp.asarray(rng.normal(size=n))

    def loss(log_scale, x, y):
        d2 = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
        k = jnp.exp(-0.5 * d2 / jnp.exp(2 * log_scale)) + 0.1 * jnp.eye(x.shape[0])
        chol = jnp.linalg.cholesky(k)
        alpha = cho_solve((chol, True), y)
        return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diagonal(chol)))

    return loss, (jnp.asarray(0.3), x, y), (0, 1)


def triangular(n):
    rng = np.random.default_rng(1)
    a = jnp.asarray(rng.normal(size=(n, n)) * 0.1 + 2.0 * np.eye(n))
    b = jnp.asarray(rng.normal(size=(n, 8)))

    def loss(a, b):
        x = solve_triangular(a, b, lower=True)
        y = solve_triangular(a, x, lower=False, trans=1)
        z = lax.linalg.triangular_solve(a, y.T, left_side=False, lower=True)
        return jnp.sum(z ** 2)

    return loss, (a, b), (0, 1)


def eigh(n):
    rng = np.random.default_rng(2)
    m = rng.normal(size=(n, n))
    a = jnp.asarray(m @ m.T / n + np.eye(n))
    target = jnp.asarray(rng.normal(size=(n, n)))

    def loss(a, target):
        w, v = jnp.linalg.eigh(a)
        return jnp.sum(jnp.log(w)) + jnp.sum((v * v) * target)

    return loss, (a, target), 0


def lu(n):
    """A solve, an inverse's trace and a log-determinant of a general matrix (getrf)."""
    rng = np.random.default_rng(3)
    a = jnp.asarray(rng.normal(size=(n, n)) + np.sqrt(n) * np.eye(n))
    b = jnp.asarray(rng.normal(size=(n, 4)))

    def loss(a, b):
        x = jnp.linalg.solve(a, b)
        return jnp.sum(x ** 2) + jnp.trace(jnp.linalg.inv(a)) + jnp.linalg.slogdet(a)[1]

    return loss, (a, b), (0, 1)


def svd(n):
    """A low-rank fit through the leading singular vectors, plus the nuclear norm (gesdd)."""
    rng = np.random.default_rng(4)
    a = jnp.asarray(rng.normal(size=(n, n // 2)))
    target = jnp.asarray(rng.normal(size=(n, n // 2)))

    def loss(a, target):
        u, s, vt = jnp.linalg.svd(a, full_matrices=False)
        low_rank = (u[:, :8] * s[:8]) @ vt[:8]
        return jnp.sum((low_rank - target) ** 2) + jnp.sum(jnp.linalg.svd(a, compute_uv=False))

    return loss, (a, target), 0


def qr(n):
    """Least squares by QR of a tall matrix (geqrf, orgqr, trsm)."""
    rng = np.random.default_rng(5)
    a = jnp.asarray(rng.normal(size=(n, n // 2)))
    y = jnp.asarray(rng.normal(size=n))

    def loss(a, y):
        q, r = jnp.linalg.qr(a)
        coef = solve_triangular(r, q.T @ y, lower=False)
        return jnp.sum((a @ coef - y) ** 2) + jnp.sum(coef ** 2)

    return loss, (a, y), (0, 1)


WORKLOADS = {"gp": gp, "triangular": triangular, "eigh": eigh, "lu": lu, "svd": svd, "qr": qr}


def _best(fn, args, calls: int) -> float:
    best = float("inf")
    for _ in range(calls):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t)
    return best


def _baseline_grad(ns, work: Path, name: str, loss, args, argnums):
    """The gradient function running the derivative module ``--baseline``'s tree makes."""
    sys.path.insert(0, str(Path(__file__).parent))
    from jax_grad import grad_from_text

    out = work / f"{name}.baseline.mlir"
    cmd = [sys.executable, __file__, "--emit", name, str(out), "--n", str(ns.n)]
    subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(ns.baseline)), check=True, stdout=subprocess.DEVNULL)
    return grad_from_text(out.read_text(), loss, args, argnums)


def _emit_derivative(ns) -> int:
    """Write the derivative module of workload ``ns.emit[0]`` to ``ns.emit[1]`` (run with
    another source tree on PYTHONPATH by --baseline)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from jax_grad import _flat

    from zymase.frontends import jax as front

    name, out = ns.emit
    loss, args, argnums = WORKLOADS[name](ns.n)
    leaves, tree, active = _flat(args, argnums)
    Path(out).write_text(front.derivative_module(loss, leaves, tree, "reverse", active))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds (best of 5 calls each)")
    p.add_argument("--n", type=int, default=200, help="matrix size")
    p.add_argument("--only", nargs="*", default=None, help="these workloads only")
    p.add_argument("--baseline", type=Path, default=None,
                   help="also time the derivatives another zymase source tree makes (its src directory)")
    p.add_argument("--emit", nargs=2, metavar=("WORKLOAD", "FILE"), help=argparse.SUPPRESS)
    ns = p.parse_args()
    if ns.emit:
        return _emit_derivative(ns)
    base_head = f" {'baseline':>10} {'ratio':>7} {'new/old':>7}" if ns.baseline else ""
    print(f"{'workload':<12} {'zymase':>10} {'jax.grad':>10} {'ratio':>7}{base_head}   (n = {ns.n})")
    ratios, base_ratios = [], []
    with tempfile.TemporaryDirectory(prefix="zymase-jax-linalg-") as tmp:
        for name, build in WORKLOADS.items():
            if ns.only and name not in ns.only:
                continue
            loss, args, argnums = build(ns.n)
            ours = jax.jit(zj.grad(loss, argnums=argnums))
            theirs = jax.jit(jax.grad(loss, argnums=argnums))
            got, want = jax.block_until_ready(ours(*args)), jax.block_until_ready(theirs(*args))
            for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-7, atol=1e-9)
            base = _baseline_grad(ns, Path(tmp), name, loss, args, argnums) if ns.baseline else None
            if base is not None:  # the same gradient as this tree's
                for g, w in zip(jax.tree_util.tree_leaves(jax.block_until_ready(base(*args))),
                                jax.tree_util.tree_leaves(got)):
                    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-7, atol=1e-9)
            t_ours, t_theirs, t_base = float("inf"), float("inf"), float("inf")
            for _ in range(ns.rounds):
                t_ours = min(t_ours, _best(ours, args, 5))
                t_theirs = min(t_theirs, _best(theirs, args, 5))
                if base is not None:
                    t_base = min(t_base, _best(base, args, 5))
            ratios.append(t_ours / t_theirs)
            base_text = ""
            if base is not None:
                base_ratios.append(t_base / t_theirs)
                base_text = f" {t_base * 1e3:8.3f}ms {base_ratios[-1]:7.2f} {t_ours / t_base:7.2f}"
            print(f"{name:<12} {t_ours * 1e3:9.3f}ms {t_theirs * 1e3:9.3f}ms {ratios[-1]:7.2f}{base_text}", flush=True)
    print(f"geometric mean against jax.grad: {float(np.exp(np.mean(np.log(ratios)))):.2f} (max {max(ratios):.2f})")
    if base_ratios:
        print(f"baseline's geometric mean against jax.grad: {float(np.exp(np.mean(np.log(base_ratios)))):.2f} "
              f"(max {max(base_ratios):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
