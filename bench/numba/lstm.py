"""ADBench's LSTM objective, written as loops for Numba.

An l-layer LSTM with hidden size b = 14 (ADBench's character-level model) runs over a
sequence of c character vectors; at each step it predicts the next vector, and the
objective is the mean negative log-softmax of the prediction against it. Parameters:
main_params (2l, 4b): per layer a row of weights and a row of biases for the forget gate,
input gate, output gate and cell change; extra_params (3, b): input weight, output weight,
output bias. The initial state (2l, b: hidden and cell per layer) is constant and copied.
The gradient is taken with respect to main_params and extra_params. Mirrors
src/zymase/bench/workloads/lstm.c.
"""

from __future__ import annotations

import math

import numba
import numpy as np

NAME = "lstm"
ARGNUMS = (0, 1)  # main_params, extra_params
ARGNAMES = ("main_params", "extra_params")
FULL = {"l": 2, "c": 1024}
QUICK = {"l": 2, "c": 64}
TINY = {"l": 2, "c": 4}
B = 14


def size_label(p: dict) -> str:
    return f"l={p['l']} c={p['c']} b={B}"


def make_inputs(l: int, c: int, b: int = B, seed: int = 0):
    """(main_params, extra_params, state, sequence), uniform in [0, 1) like ADBench's data."""
    rng = np.random.default_rng([seed, l, c, b])
    main = rng.uniform(size=(2 * l, 4 * b))
    extra = rng.uniform(size=(3, b))
    state = rng.uniform(size=(2 * l, b))
    sequence = rng.uniform(size=(c, b))
    return main, extra, state, sequence


# ---------------------------------------------------------------------------------------
# Numba: plain loops, as a Numba user writes them
# ---------------------------------------------------------------------------------------


@numba.njit
def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


@numba.njit
def lstm_model(weight, bias, hidden, cell, inp):
    """One LSTM cell update, in place on hidden and cell."""
    b = hidden.shape[0]
    for i in range(b):
        forget = sigmoid(inp[i] * weight[i] + bias[i])
        ingate = sigmoid(hidden[i] * weight[b + i] + bias[b + i])
        outgate = sigmoid(inp[i] * weight[2 * b + i] + bias[2 * b + i])
        change = math.tanh(hidden[i] * weight[3 * b + i] + bias[3 * b + i])
        cell[i] = cell[i] * forget + ingate * change
        hidden[i] = outgate * math.tanh(cell[i])


@numba.njit
def lstm_predict(main_params, extra_params, state, x, out):
    l = main_params.shape[0] // 2
    b = x.shape[0]
    for i in range(b):
        out[i] = x[i] * extra_params[0, i]
    layer_in = out
    for j in range(l):
        hidden = state[2 * j]
        lstm_model(main_params[2 * j], main_params[2 * j + 1], hidden, state[2 * j + 1], layer_in)
        layer_in = hidden
    for i in range(b):
        out[i] = layer_in[i] * extra_params[1, i] + extra_params[2, i]


@numba.njit
def objective(main_params, extra_params, state0, sequence):
    c, b = sequence.shape
    state = state0.copy()
    ypred = np.empty(b)
    total = 0.0
    for t in range(c - 1):
        lstm_predict(main_params, extra_params, state, sequence[t], ypred)
        mx = ypred[0]
        for i in range(1, b):
            if ypred[i] > mx:
                mx = ypred[i]
        se = 0.0
        for i in range(b):
            se += math.exp(ypred[i] - mx)
        lse = math.log(se) + mx
        for i in range(b):
            total += sequence[t + 1, i] * (ypred[i] - lse)
    return -total / ((c - 1) * b)


# ---------------------------------------------------------------------------------------
# JAX: vectorized, as a JAX user writes it
# ---------------------------------------------------------------------------------------


def jax_objective():
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    def f(main_params, extra_params, state0, sequence):
        l = main_params.shape[0] // 2
        b = sequence.shape[1]

        def step(state, xs):
            x, ygold = xs
            layer_in = x * extra_params[0]
            new_state = []
            for j in range(l):
                w, bias = main_params[2 * j], main_params[2 * j + 1]
                hidden, cell = state[2 * j], state[2 * j + 1]
                forget = jax.nn.sigmoid(layer_in * w[:b] + bias[:b])
                ingate = jax.nn.sigmoid(hidden * w[b:2 * b] + bias[b:2 * b])
                outgate = jax.nn.sigmoid(layer_in * w[2 * b:3 * b] + bias[2 * b:3 * b])
                change = jnp.tanh(hidden * w[3 * b:] + bias[3 * b:])
                cell = cell * forget + ingate * change
                hidden = outgate * jnp.tanh(cell)
                new_state += [hidden, cell]
                layer_in = hidden
            ypred = layer_in * extra_params[1] + extra_params[2]
            return jnp.stack(new_state), jnp.sum(ygold * (ypred - logsumexp(ypred)))

        _, terms = jax.lax.scan(step, state0, (sequence[:-1], sequence[1:]))
        c = sequence.shape[0]
        return -jnp.sum(terms) / ((c - 1) * b)

    return f
