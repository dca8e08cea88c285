"""Fit the parameters of an explicit-Euler ODE simulation written in Numba, with
scipy.optimize.minimize using zymase's gradient."""

import numpy as np
from numba import njit
from scipy.optimize import minimize

import zymase


@njit
def simulate(params, u0, dt, steps, out):
    """Damped, driven oscillator u'' = -k u - c u' + f, explicit Euler; writes u(t)."""
    k, c, f = params[0], params[1], params[2]
    u, v = u0, 0.0
    for n in range(steps):
        out[n] = u
        a = -k * u - c * v + f
        u, v = u + dt * v, v + dt * a


@njit
def loss(params, u0, dt, observed):
    pred = np.empty_like(observed)
    simulate(params, u0, dt, observed.shape[0], pred)
    r = 0.0
    for n in range(observed.shape[0]):
        r += (pred[n] - observed[n]) ** 2
    return r / observed.shape[0]


true = np.array([4.0, 0.3, 0.5])
observed = np.empty(400)
simulate(true, 1.0, 0.01, 400, observed)

# loss and its gradient with respect to params, compiled once, called by BFGS
fit = minimize(zymase.value_and_grad(loss), x0=np.array([2.0, 1.0, 0.0]), args=(1.0, 0.01, observed),
               jac=True, method="BFGS")
print("fitted k, c, f:", fit.x.round(4), " loss:", f"{fit.fun:.1e}", " iterations:", fit.nit)
