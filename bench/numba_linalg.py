#!/usr/bin/env python3
"""NumPy linear algebra in njit code (issue 26's Numba performance items): zymase.grad
against the primal, JAX (jax.jit(jax.grad)) and, when installed, PyTorch, in one process,
the variants run alternately round after round on the same inputs (the gradients are
checked equal first); reported as ratios of the best times.

    python bench/numba_linalg.py [--rounds R] [--only gp mlp] [--gp-sizes 400 1000 2000]

Workloads, written as a NumPy user writes them:

* gp: the negative log marginal likelihood of a Gaussian process (squared-exponential
  kernel built by loops, np.linalg.cholesky, two np.linalg.solve with the factor,
  log-determinant from the factor's diagonal), its gradient with respect to the three
  hyperparameters (log length scale, log signal variance, log noise variance) and the
  inputs X (n x 3), at n = 400, 1000, 2000; float64. Targets: gradient <= 3x the primal,
  <= 0.5x JAX.
* mlp: an MLP forward pass with batched 2-D '@' (batch 256, widths 256-1024-1024-256,
  tanh), its loss's gradient with respect to every weight and bias. Target: gradient
  <= 3x the primal; JAX and PyTorch on the same shapes for comparison.

Set OPENBLAS_NUM_THREADS (and XLA's flags) alike for a fair comparison; the machine's
load makes single timings noisy, hence the alternating rounds and the minima.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from numba import njit

import zymase


# ---- Gaussian process ------------------------------------------------------------------
@njit
def gp_nll(theta, X, y):
    ell = np.exp(theta[0])
    sf2 = np.exp(theta[1])
    sn2 = np.exp(theta[2])
    n, d = X.shape
    K = np.empty((n, n))
    for i in range(n):
        for j in range(i + 1):
            r2 = 0.0
            for k in range(d):
                diff = X[i, k] - X[j, k]
                r2 += diff * diff
            kij = sf2 * np.exp(-0.5 * r2 / (ell * ell))
            K[i, j] = kij
            K[j, i] = kij
        K[i, i] += sn2
    L = np.linalg.cholesky(K)
    z = np.linalg.solve(L, y)
    alpha = np.linalg.solve(L.T, z)
    logdet = 0.0
    for i in range(n):
        logdet += np.log(L[i, i])
    return 0.5 * np.dot(y, alpha) + logdet + 0.5 * n * np.log(2 * np.pi)


def gp_inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 3))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1] * X[:, 2]) + 0.1 * rng.standard_normal(n)
    theta = np.array([0.0, 0.0, np.log(0.1)])
    return theta, X, y


def gp_jax(same_solves: bool = False):
    """JAX's GP likelihood as a JAX user writes it (``solve_triangular`` with the factor),
    or, with ``same_solves``, with the same operations as the njit function
    (``jnp.linalg.solve``: an LU solve with the factor, as Numba, which has no
    triangular solve, makes the NumPy user write it), labelled as such."""
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    def nll(theta, X, y):
        ell, sf2, sn2 = jnp.exp(theta[0]), jnp.exp(theta[1]), jnp.exp(theta[2])
        r2 = jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
        K = sf2 * jnp.exp(-0.5 * r2 / (ell * ell)) + sn2 * jnp.eye(X.shape[0])
        L = jnp.linalg.cholesky(K)
        if same_solves:
            z = jnp.linalg.solve(L, y)
            alpha = jnp.linalg.solve(L.T, z)
        else:
            z = jsl.solve_triangular(L, y, lower=True)
            alpha = jsl.solve_triangular(L.T, z, lower=False)
        return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * X.shape[0] * jnp.log(2 * jnp.pi)

    return jax.jit(jax.grad(nll, argnums=(0, 1)))


# ---- MLP -------------------------------------------------------------------------------
@njit
def mlp_loss(W1, b1, W2, b2, W3, b3, x, t):
    h1 = np.tanh(x @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    out = h2 @ W3 + b3
    r = out - t
    return 0.5 * np.sum(r * r) / x.shape[0]


def mlp_inputs(seed=1, batch=256, widths=(256, 1024, 1024, 256)):
    rng = np.random.default_rng(seed)
    params = []
    for m, n in zip(widths[:-1], widths[1:]):
        params += [rng.normal(0, 1 / np.sqrt(m), (m, n)), np.zeros(n)]
    x = rng.standard_normal((batch, widths[0]))
    t = rng.standard_normal((batch, widths[-1]))
    return (*params, x, t)


def mlp_jax():
    import jax
    import jax.numpy as jnp

    def loss(W1, b1, W2, b2, W3, b3, x, t):
        h1 = jnp.tanh(x @ W1 + b1)
        h2 = jnp.tanh(h1 @ W2 + b2)
        r = h2 @ W3 + b3 - t
        return 0.5 * jnp.sum(r * r) / x.shape[0]

    return jax.jit(jax.grad(loss, argnums=tuple(range(6))))


def mlp_torch():
    import torch

    def grad(*args):
        ts = [torch.from_numpy(a) for a in args]
        for t in ts[:6]:
            t.requires_grad_(True)
        W1, b1, W2, b2, W3, b3, x, t = ts
        h1 = torch.tanh(x @ W1 + b1)
        h2 = torch.tanh(h1 @ W2 + b2)
        r = h2 @ W3 + b3 - t
        loss = 0.5 * torch.sum(r * r) / x.shape[0]
        return torch.autograd.grad(loss, ts[:6])

    return grad


# ---- timing ----------------------------------------------------------------------------
def _best(fns: dict, rounds: int) -> dict:
    """Best time per variant, the variants run alternately ``rounds`` times."""
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def _close(a, b, what):
    for u, v in zip(a, b):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6, atol=1e-8, err_msg=what)


def run_gp(sizes, rounds):
    grad = zymase.grad(gp_nll, argnums=(0, 1))
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        jgrad = gp_jax()
        jgrad_lu = gp_jax(same_solves=True)
    except ImportError:
        jgrad = jgrad_lu = None
        print("gp: JAX not installed, no JAX column")
    for n in sizes:
        theta, X, y = gp_inputs(n)
        g = grad(theta, X, y)
        fns = {"primal": lambda: gp_nll(theta, X, y), "zymase": lambda: grad(theta, X, y)}
        if jgrad is not None:
            jg = jgrad(theta, X, y)
            _close(g, jg, f"gp n={n}: zymase and JAX gradients differ")
            fns["jax"] = lambda: [np.asarray(a) for a in jgrad(theta, X, y)]
            _close(g, jgrad_lu(theta, X, y), f"gp n={n}: zymase and JAX (LU solves) gradients differ")
            fns["jax_lu"] = lambda: [np.asarray(a) for a in jgrad_lu(theta, X, y)]
        best = _best(fns, rounds)
        line = (f"gp n={n}: primal {best['primal'] * 1e3:.1f} ms, zymase grad {best['zymase'] * 1e3:.1f} ms "
                f"(x{best['zymase'] / best['primal']:.2f} the primal)")
        if "jax" in best:
            line += f", JAX grad {best['jax'] * 1e3:.1f} ms (zymase/JAX {best['zymase'] / best['jax']:.2f})"
            line += (f"; JAX with the njit function's LU solves {best['jax_lu'] * 1e3:.1f} ms "
                     f"(zymase/JAX-same-ops {best['zymase'] / best['jax_lu']:.2f})")
        print(line, flush=True)


def run_mlp(rounds):
    args = mlp_inputs()
    grad = zymase.grad(mlp_loss, argnums=tuple(range(6)))
    g = grad(*args)
    fns = {"primal": lambda: mlp_loss(*args), "zymase": lambda: grad(*args)}
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        jgrad = mlp_jax()
        _close(g, jgrad(*args), "mlp: zymase and JAX gradients differ")
        fns["jax"] = lambda: [np.asarray(a) for a in jgrad(*args)]
    except ImportError:
        print("mlp: JAX not installed, no JAX column")
    try:
        tgrad = mlp_torch()
        _close(g, [a.numpy() for a in tgrad(*args)], "mlp: zymase and PyTorch gradients differ")
        fns["torch"] = lambda: tgrad(*args)
    except ImportError:
        print("mlp: PyTorch not installed, no PyTorch column (pip install torch, CPU wheel)")
    best = _best(fns, rounds)
    line = (f"mlp batch 256, 256-1024-1024-256: primal {best['primal'] * 1e3:.1f} ms, "
            f"zymase grad {best['zymase'] * 1e3:.1f} ms (x{best['zymase'] / best['primal']:.2f} the primal)")
    for other in ("jax", "torch"):
        if other in best:
            line += f", {other} grad {best[other] * 1e3:.1f} ms (zymase/{other} {best['zymase'] / best[other]:.2f})"
    print(line, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=["gp", "mlp"])
    ap.add_argument("--gp-sizes", nargs="*", type=int, default=[400, 1000, 2000])
    a = ap.parse_args()
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    if "gp" in a.only:
        run_gp(a.gp_sizes, a.rounds)
    if "mlp" in a.only:
        run_mlp(a.rounds)


if __name__ == "__main__":
    main()
