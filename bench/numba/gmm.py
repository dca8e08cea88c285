"""ADBench's Gaussian mixture model objective, written as loops for Numba.

Negative log-likelihood of n points x_i under K d-dimensional Gaussians, plus a Wishart
prior on the precisions (ADBench's GMM; mirrors src/zymase/bench/workloads/gmm.c):

    E = -n d/2 log(2 pi) + sum_i logsumexp_k(alpha_k + sum(q_k) - |Q_k (x_i - mu_k)|^2 / 2)
        - n logsumexp(alpha) + sum_k (gamma^2/2 (|exp(q_k)|^2 + |L_k|^2) - m sum(q_k)) - K C

Q_k is lower triangular with diagonal exp(q_k) = exp(icf[k, :d]) and strictly lower part
L_k = icf[k, d:] stored column by column; C = N d (log gamma - log(2)/2) - log Gamma_d(N/2)
with N = d + m + 1. The gradient is taken with respect to alphas, means and icf.
"""

from __future__ import annotations

import math

import numba
import numpy as np

NAME = "gmm"
ARGNUMS = (0, 1, 2)  # alphas, means, icf
ARGNAMES = ("alphas", "means", "icf")
FULL = {"d": 10, "k": 25, "n": 10_000}
QUICK = {"d": 4, "k": 5, "n": 500}
TINY = {"d": 3, "k": 2, "n": 6}


def size_label(p: dict) -> str:
    return f"d={p['d']} K={p['k']} n={p['n']}"


def make_inputs(d: int, k: int, n: int, seed: int = 0):
    """(alphas, means, icf, x, gamma, m), drawn like ADBench's generated GMM files."""
    rng = np.random.default_rng([seed, d, k, n])
    alphas = rng.normal(size=k)
    means = rng.uniform(size=(k, d))
    icf = rng.normal(size=(k, d * (d + 1) // 2))
    x = rng.normal(size=(n, d))
    return alphas, means, icf, x, 1.0, 0  # gamma = 1, m = 0 as in ADBench's files


# ---------------------------------------------------------------------------------------
# Numba: plain loops, as a Numba user writes them
# ---------------------------------------------------------------------------------------


@numba.njit
def logsumexp(v):
    mx = v[0]
    for i in range(1, v.shape[0]):
        if v[i] > mx:
            mx = v[i]
    s = 0.0
    for i in range(v.shape[0]):
        s += math.exp(v[i] - mx)
    return math.log(s) + mx


@numba.njit
def log_gamma_distrib(a, p):
    """log of the multivariate gamma function Gamma_p(a)."""
    r = 0.25 * p * (p - 1) * math.log(math.pi)
    for j in range(1, p + 1):
        r += math.lgamma(a + 0.5 * (1 - j))
    return r


@numba.njit
def qtimesx(qdiag, icf_k, x, out):
    """out = Q x for the lower-triangular Q with diagonal qdiag and strictly lower part
    icf_k[d:] (column by column)."""
    d = x.shape[0]
    for i in range(d):
        out[i] = qdiag[i] * x[i]
    pos = d
    for j in range(d):
        for i in range(j + 1, d):
            out[i] += icf_k[pos] * x[j]
            pos += 1


@numba.njit
def objective(alphas, means, icf, x, gamma, m):
    k, d = means.shape
    n = x.shape[0]
    icf_sz = icf.shape[1]

    # ADBench's preprocess_qs: sum(q_k) and the diagonals exp(q_k), once per component
    sum_qs = np.empty(k)
    qdiags = np.empty((k, d))
    for ik in range(k):
        s = 0.0
        for j in range(d):
            s += icf[ik, j]
            qdiags[ik, j] = math.exp(icf[ik, j])
        sum_qs[ik] = s

    main_term = np.empty(k)
    xc = np.empty(d)
    qxc = np.empty(d)
    slse = 0.0
    for ix in range(n):
        for ik in range(k):
            for j in range(d):
                xc[j] = x[ix, j] - means[ik, j]
            qtimesx(qdiags[ik], icf[ik], xc, qxc)
            sq = 0.0
            for j in range(d):
                sq += qxc[j] * qxc[j]
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sq
        slse += logsumexp(main_term)

    lse_alphas = logsumexp(alphas)

    # Wishart prior
    nn = d + m + 1
    c = nn * d * (math.log(gamma) - 0.5 * math.log(2.0)) - log_gamma_distrib(0.5 * nn, d)
    prior = 0.0
    for ik in range(k):
        fro = 0.0
        for j in range(d):
            fro += math.exp(2.0 * icf[ik, j])
        for j in range(d, icf_sz):
            fro += icf[ik, j] * icf[ik, j]
        prior += 0.5 * gamma * gamma * fro - m * sum_qs[ik]
    prior -= k * c

    constant = -n * d * 0.5 * math.log(2.0 * math.pi)
    return constant + slse - n * lse_alphas + prior


# ---------------------------------------------------------------------------------------
# JAX: vectorized, as a JAX user writes it
# ---------------------------------------------------------------------------------------


def jax_objective():
    """The objective in jax.numpy (JAX imported lazily: it is optional)."""
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp as jlse
    from jax.scipy.special import multigammaln

    def f(alphas, means, icf, x, gamma, m):
        k, d = means.shape
        n = x.shape[0]
        qs = icf[:, :d]
        # strictly lower triangle, column by column: the (row, col) of each entry of icf[:, d:]
        rows, cols = np.tril_indices(d, -1)
        order = np.lexsort((rows, cols))  # column-major order of the lower triangle
        rows, cols = rows[order], cols[order]
        ls = jnp.zeros((k, d, d)).at[:, rows, cols].set(icf[:, d:])
        qmat = ls + jnp.einsum("kd,de->kde", jnp.exp(qs), jnp.eye(d))
        xc = x[:, None, :] - means[None, :, :]                    # n, k, d
        qxc = jnp.einsum("kij,nkj->nki", qmat, xc)
        main = alphas[None, :] + jnp.sum(qs, axis=1)[None, :] - 0.5 * jnp.sum(qxc ** 2, axis=2)
        slse = jnp.sum(jlse(main, axis=1))
        nn = d + m + 1
        c = nn * d * (jnp.log(gamma) - 0.5 * jnp.log(2.0)) - multigammaln(0.5 * nn, d)
        fro = jnp.sum(jnp.exp(2.0 * qs)) + jnp.sum(icf[:, d:] ** 2)
        prior = 0.5 * gamma * gamma * fro - m * jnp.sum(qs) - k * c
        constant = -n * d * 0.5 * jnp.log(2.0 * jnp.pi)
        return constant + slse - n * jlse(alphas) + prior

    return f
