"""The benchmark objectives in JAX, written the way a JAX user would: vectorized jnp over
whole arrays, lax.scan / fori_loop for recurrences, jnp.fft for the FFT. Differentiated
with jax.jit(jax.grad(...)) by the worker; float64 throughout (jax_enable_x64).

Every builder takes the arrays a C workload dumped and returns a Model whose objective
takes the differentiated arrays (``wrt``, flat, as dumped) and then the constant ones.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from zymase.bench.frameworks import problems
from zymase.bench.frameworks.problems import Model

jax.config.update("jax_enable_x64", True)


def gmm(arrays: dict[str, np.ndarray]) -> Model:
    d, k, n = problems.gmm_sizes(arrays)
    gamma, m = float(arrays["gamma"][0]), int(arrays["m"][0])
    rows, cols = problems.gmm_lower_indices(d)
    constant = problems.gmm_constant(d, k, n, gamma, m)

    def objective(alphas, means, icf, x):
        means = means.reshape(k, d)
        icf = icf.reshape(k, -1)
        x = x.reshape(n, d)
        log_diag, lower = icf[:, :d], icf[:, d:]
        sum_qs = jnp.sum(log_diag, axis=1)
        q_lower = jnp.zeros((k, d, d)).at[:, rows, cols].set(lower)
        centered = x[:, None, :] - means[None, :, :]  # n x K x d
        q_centered = jnp.exp(log_diag)[None] * centered + jnp.einsum("kij,nkj->nki", q_lower, centered)
        inner = alphas[None, :] + sum_qs[None, :] - 0.5 * jnp.sum(q_centered**2, axis=2)
        prior = 0.5 * gamma**2 * (jnp.sum(jnp.exp(2.0 * log_diag)) + jnp.sum(lower**2)) - m * jnp.sum(sum_qs)
        return constant + jnp.sum(logsumexp(inner, axis=1)) - n * logsumexp(alphas) + prior

    return Model(objective, ("alphas", "means", "icf"), ("x",))


def _rodrigues(r, x):
    """Rotate the rows of x by the angle-axis rows of r (first order when the angle is 0)."""
    sqtheta = jnp.sum(r * r, axis=1, keepdims=True)
    nonzero = sqtheta != 0.0
    theta = jnp.sqrt(jnp.where(nonzero, sqtheta, 1.0))
    axis = r / theta
    c, s = jnp.cos(theta), jnp.sin(theta)
    rotated = x * c + jnp.cross(axis, x) * s + axis * jnp.sum(axis * x, axis=1, keepdims=True) * (1.0 - c)
    return jnp.where(nonzero, rotated, x + jnp.cross(r, x))


def ba(arrays: dict[str, np.ndarray]) -> Model:
    def objective(cams, points, w, obs, feats):
        obs = obs.reshape(-1, 2)
        cam = cams.reshape(-1, 11)[obs[:, 0]]
        x = points.reshape(-1, 3)[obs[:, 1]]
        xc = _rodrigues(cam[:, 0:3], x - cam[:, 3:6])
        p = xc[:, :2] / xc[:, 2:3]
        rsq = jnp.sum(p * p, axis=1, keepdims=True)
        distortion = 1.0 + cam[:, 9:10] * rsq + cam[:, 10:11] * rsq * rsq
        proj = p * distortion * cam[:, 6:7] + cam[:, 7:9]
        reproj = w[:, None] * (proj - feats.reshape(-1, 2))
        return jnp.sum(reproj**2) + jnp.sum((1.0 - w * w) ** 2)

    return Model(objective, ("cams", "X", "w"), ("obs", "feats"))


def lstm(arrays: dict[str, np.ndarray]) -> Model:
    layers, chars, b = problems.lstm_sizes(arrays)

    def objective(main_params, extra_params, state, sequence):
        params = main_params.reshape(layers, 2, 4, b)  # layer, weight/bias, gate, unit
        extra = extra_params.reshape(3, b)
        seq = sequence.reshape(chars, b)

        def step(state, inputs):
            x, target = inputs
            layer_in = x * extra[0]
            new_state = []
            for j in range(layers):
                w, bias = params[j, 0], params[j, 1]
                hidden, cell = state[j, 0], state[j, 1]
                forget = jax.nn.sigmoid(layer_in * w[0] + bias[0])
                ingate = jax.nn.sigmoid(hidden * w[1] + bias[1])
                outgate = jax.nn.sigmoid(layer_in * w[2] + bias[2])
                change = jnp.tanh(hidden * w[3] + bias[3])
                cell = cell * forget + ingate * change
                hidden = outgate * jnp.tanh(cell)
                new_state.append(jnp.stack([hidden, cell]))
                layer_in = hidden
            prediction = layer_in * extra[1] + extra[2]
            return jnp.stack(new_state), jnp.sum(target * (prediction - logsumexp(prediction)))

        _, terms = jax.lax.scan(step, state.reshape(layers, 2, b), (seq[:-1], seq[1:]))
        return -jnp.sum(terms) / ((chars - 1) * b)

    return Model(objective, ("main_params", "extra_params"), ("state", "sequence"))


def hand(arrays: dict[str, np.ndarray]) -> Model:
    parents = arrays["parents"].tolist()
    n_bones = len(parents)
    correspondences = arrays["correspondences"]
    pose_cols, pose_rows = problems.hand_pose_indices()

    def euler_rotations(angles):  # (bones, 3) in ADBench's x, z, y order -> (bones, 3, 3)
        cx, cz, cy = jnp.cos(angles[:, 0]), jnp.cos(angles[:, 1]), jnp.cos(angles[:, 2])
        sx, sz, sy = jnp.sin(angles[:, 0]), jnp.sin(angles[:, 1]), jnp.sin(angles[:, 2])
        one, zero = jnp.ones_like(cx), jnp.zeros_like(cx)
        rx = jnp.stack([one, zero, zero, zero, cx, -sx, zero, sx, cx], axis=1).reshape(-1, 3, 3)
        ry = jnp.stack([cy, zero, sy, zero, one, zero, -sy, zero, cy], axis=1).reshape(-1, 3, 3)
        rz = jnp.stack([cz, -sz, zero, sz, cz, zero, zero, zero, one], axis=1).reshape(-1, 3, 3)
        return rz @ ry @ rx

    def angle_axis_rotation(a):
        sq = jnp.sum(a * a)
        small = sq < 1e-8
        norm = jnp.sqrt(jnp.where(small, 1.0, sq))
        x, y, z = a / norm
        s, c = jnp.sin(norm), jnp.cos(norm)
        r = jnp.array([
            [x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
            [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
            [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c],
        ])
        return jnp.where(small, jnp.eye(3), r)

    def objective(theta, base_relatives, inverse_base_absolutes, base_positions, weights, points):
        pose = jnp.zeros((n_bones + 3, 3)).at[pose_cols, pose_rows].set(theta).at[1].set(1.0)
        posed = jnp.tile(jnp.eye(4), (n_bones, 1, 1)).at[:, :3, :3].set(euler_rotations(pose[3:]))
        relatives = base_relatives.reshape(n_bones, 4, 4) @ posed
        absolutes = []
        for bone, parent in enumerate(parents):
            absolutes.append(relatives[bone] if parent < 0 else absolutes[parent] @ relatives[bone])
        transforms = jnp.stack(absolutes) @ inverse_base_absolutes.reshape(n_bones, 4, 4)
        rest = base_positions.reshape(-1, 3)
        homogeneous = jnp.concatenate([rest, jnp.ones((rest.shape[0], 1))], axis=1)
        positions = jnp.einsum("bv,bij,vj->vi", weights.reshape(n_bones, -1), transforms[:, :3, :], homogeneous)
        rotation = angle_axis_rotation(pose[0]) * pose[1][None, :]
        world = positions[correspondences] @ rotation.T + pose[2]
        return jnp.sum((points.reshape(-1, 3) - world) ** 2)

    return Model(
        objective,
        ("theta",),
        ("base_relatives", "inverse_base_absolutes", "base_positions", "weights", "points"),
    )


def normalize(arrays: dict[str, np.ndarray]) -> Model:
    def objective(x, w):
        return jnp.sum(w * (x / jnp.sqrt(jnp.sum(x * x))))

    return Model(objective, ("in",), ("w",))


def ode(arrays: dict[str, np.ndarray]) -> Model:
    steps, dt = int(arrays["nsteps"][0]), float(arrays["dt"][0])
    inv_dx2 = float(arrays["u0"].size) ** 2

    def objective(params, u0, w):
        diffusion, rate = params[0], params[1]

        def euler_step(_, u):
            left = jnp.concatenate([u[:1], u[:-1]])
            right = jnp.concatenate([u[1:], u[-1:]])
            laplacian = (left - 2.0 * u + right) * inv_dx2
            return u + dt * (diffusion * laplacian + rate * u * (1.0 - u))

        return jnp.sum(w * jax.lax.fori_loop(0, steps, euler_step, u0))

    return Model(objective, ("params", "u0"), ("w",))


def fft(arrays: dict[str, np.ndarray]) -> Model:
    def objective(re, im, w):
        spectrum = jnp.fft.fft(re + 1j * im)
        return jnp.sum(w * (spectrum.real**2 + spectrum.imag**2))

    return Model(objective, ("re", "im"), ("w",))


MODELS = {"gmm": gmm, "ba": ba, "lstm": lstm, "hand": hand, "normalize": normalize, "ode": ode, "fft": fft}


def gradient_function(model: Model):
    """What a JAX user benchmarks: jit of grad with respect to the differentiated arrays."""
    return jax.jit(jax.grad(model.objective, argnums=tuple(range(len(model.wrt)))))


def value(model: Model, args) -> float:
    return float(jax.jit(model.objective)(*args))


def to_device(array: np.ndarray):
    return jnp.asarray(array)


def block(value):
    return jax.block_until_ready(value)
