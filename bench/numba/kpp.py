"""Fisher-KPP reaction-diffusion by explicit Euler, written as loops for Numba.

u_t = D u_xx + r u (1 - u) on [0, 1] with zero-flux (Neumann) boundaries: the ghost value
beyond each end equals the end cell. ncell cells (dx = 1/ncell), nsteps explicit Euler
steps of DT = 1e-4; objective sum_i w_i u_i(T). The gradient is taken with respect to the
diffusion coefficient D, the reaction rate r and the initial state u0. Mirrors
src/zymase/bench/workloads/ode.c (same D, r, time step and boundary treatment).
"""

from __future__ import annotations

import numba
import numpy as np

NAME = "kpp"
ARGNUMS = (0, 1, 2)  # D, r, u0
ARGNAMES = ("D", "r", "u0")
FULL = {"ncell": 100, "nsteps": 10_000}
QUICK = {"ncell": 50, "nsteps": 1_000}
TINY = {"ncell": 8, "nsteps": 20}

DT = 1e-4  # stable for D = 0.05, ncell = 100: D dt / dx^2 = 0.05 < 1/2


def size_label(p: dict) -> str:
    return f"cells={p['ncell']} steps={p['nsteps']}"


def make_inputs(ncell: int, nsteps: int, seed: int = 11):
    """(D, r, u0, w, nsteps): a Gaussian bump near x = 0.3 plus noise, random weights."""
    rng = np.random.default_rng([seed, ncell, nsteps])
    xs = (np.arange(ncell) + 0.5) / ncell
    u0 = 0.8 * np.exp(-50.0 * (xs - 0.3) ** 2) + 0.05 * rng.uniform(size=ncell)
    w = rng.uniform(size=ncell)
    return 0.05, 2.0, u0, w, nsteps


# ---------------------------------------------------------------------------------------
# Numba: plain loops, as a Numba user writes them
# ---------------------------------------------------------------------------------------


@numba.njit
def objective(D, r, u0, w, nsteps):
    n = u0.shape[0]
    u = u0.copy()
    v = np.empty(n)
    inv_dx2 = float(n) * float(n)
    for _ in range(nsteps):
        for i in range(n):
            left = u[i - 1] if i > 0 else u[i]
            right = u[i + 1] if i < n - 1 else u[i]
            lap = (left - 2.0 * u[i] + right) * inv_dx2
            v[i] = u[i] + DT * (D * lap + r * u[i] * (1.0 - u[i]))
        u, v = v, u
    s = 0.0
    for i in range(n):
        s += w[i] * u[i]
    return s


# ---------------------------------------------------------------------------------------
# JAX: vectorized, as a JAX user writes it
# ---------------------------------------------------------------------------------------


def jax_objective():
    import jax
    import jax.numpy as jnp

    def f(D, r, u0, w, nsteps):
        n = u0.shape[0]
        inv_dx2 = float(n) * float(n)

        def step(u, _):
            padded = jnp.concatenate([u[:1], u, u[-1:]])  # zero flux: ghost = end cell
            lap = (padded[:-2] - 2.0 * u + padded[2:]) * inv_dx2
            return u + DT * (D * lap + r * u * (1.0 - u)), None

        u, _ = jax.lax.scan(step, u0, None, length=nsteps)
        return jnp.sum(w * u)

    return f
