"""The benchmark objectives in PyTorch, written the way a PyTorch user would: tensor ops over
whole arrays, Python loops for recurrences (eager mode), torch.fft for the FFT.
Differentiated with torch.autograd.grad by the worker; float64 throughout.

Every builder takes the arrays a C workload dumped and returns a Model whose objective
takes the differentiated tensors (``wrt``, flat, as dumped) and then the constant ones.
"""

from __future__ import annotations

import numpy as np
import torch

from zymase.bench.frameworks import problems
from zymase.bench.frameworks.problems import Model

torch.set_default_dtype(torch.float64)


def gmm(arrays: dict[str, np.ndarray]) -> Model:
    d, k, n = problems.gmm_sizes(arrays)
    gamma, m = float(arrays["gamma"][0]), int(arrays["m"][0])
    rows, cols = (torch.from_numpy(i) for i in problems.gmm_lower_indices(d))
    constant = problems.gmm_constant(d, k, n, gamma, m)

    def objective(alphas, means, icf, x):
        means = means.reshape(k, d)
        icf = icf.reshape(k, -1)
        x = x.reshape(n, d)
        log_diag, lower = icf[:, :d], icf[:, d:]
        sum_qs = log_diag.sum(dim=1)
        q_lower = torch.zeros(k, d, d)
        q_lower[:, rows, cols] = lower
        centered = x[:, None, :] - means[None, :, :]  # n x K x d
        q_centered = torch.exp(log_diag)[None] * centered + torch.einsum("kij,nkj->nki", q_lower, centered)
        inner = alphas[None, :] + sum_qs[None, :] - 0.5 * (q_centered**2).sum(dim=2)
        prior = 0.5 * gamma**2 * (torch.exp(2.0 * log_diag).sum() + (lower**2).sum()) - m * sum_qs.sum()
        return constant + torch.logsumexp(inner, dim=1).sum() - n * torch.logsumexp(alphas, dim=0) + prior

    return Model(objective, ("alphas", "means", "icf"), ("x",))


def _rodrigues(r, x):
    """Rotate the rows of x by the angle-axis rows of r (first order when the angle is 0)."""
    sqtheta = (r * r).sum(dim=1, keepdim=True)
    nonzero = sqtheta != 0.0
    theta = torch.sqrt(torch.where(nonzero, sqtheta, torch.ones_like(sqtheta)))
    axis = r / theta
    c, s = torch.cos(theta), torch.sin(theta)
    rotated = (x * c + torch.linalg.cross(axis, x) * s
               + axis * (axis * x).sum(dim=1, keepdim=True) * (1.0 - c))
    return torch.where(nonzero, rotated, x + torch.linalg.cross(r, x))


def ba(arrays: dict[str, np.ndarray]) -> Model:
    def objective(cams, points, w, obs, feats):
        obs = obs.reshape(-1, 2)
        cam = cams.reshape(-1, 11)[obs[:, 0]]
        x = points.reshape(-1, 3)[obs[:, 1]]
        xc = _rodrigues(cam[:, 0:3], x - cam[:, 3:6])
        p = xc[:, :2] / xc[:, 2:3]
        rsq = (p * p).sum(dim=1, keepdim=True)
        distortion = 1.0 + cam[:, 9:10] * rsq + cam[:, 10:11] * rsq * rsq
        proj = p * distortion * cam[:, 6:7] + cam[:, 7:9]
        reproj = w[:, None] * (proj - feats.reshape(-1, 2))
        return (reproj**2).sum() + ((1.0 - w * w) ** 2).sum()

    return Model(objective, ("cams", "X", "w"), ("obs", "feats"))


def lstm(arrays: dict[str, np.ndarray]) -> Model:
    layers, chars, b = problems.lstm_sizes(arrays)

    def objective(main_params, extra_params, state, sequence):
        params = main_params.reshape(layers, 2, 4, b)  # layer, weight/bias, gate, unit
        extra = extra_params.reshape(3, b)
        seq = sequence.reshape(chars, b)
        hidden = [state[2 * j * b:(2 * j + 1) * b] for j in range(layers)]
        cell = [state[(2 * j + 1) * b:(2 * j + 2) * b] for j in range(layers)]
        total = 0.0
        for t in range(chars - 1):
            layer_in = seq[t] * extra[0]
            for j in range(layers):
                w, bias = params[j, 0], params[j, 1]
                forget = torch.sigmoid(layer_in * w[0] + bias[0])
                ingate = torch.sigmoid(hidden[j] * w[1] + bias[1])
                outgate = torch.sigmoid(layer_in * w[2] + bias[2])
                change = torch.tanh(hidden[j] * w[3] + bias[3])
                cell[j] = cell[j] * forget + ingate * change
                hidden[j] = outgate * torch.tanh(cell[j])
                layer_in = hidden[j]
            prediction = layer_in * extra[1] + extra[2]
            total = total + (seq[t + 1] * (prediction - torch.logsumexp(prediction, dim=0))).sum()
        return -total / ((chars - 1) * b)

    return Model(objective, ("main_params", "extra_params"), ("state", "sequence"))


def hand(arrays: dict[str, np.ndarray]) -> Model:
    parents = arrays["parents"].tolist()
    n_bones = len(parents)
    correspondences = torch.from_numpy(arrays["correspondences"].astype(np.int64))
    pose_cols, pose_rows = (torch.from_numpy(i) for i in problems.hand_pose_indices())

    def euler_rotations(angles):  # (bones, 3) in ADBench's x, z, y order -> (bones, 3, 3)
        cx, cz, cy = torch.cos(angles[:, 0]), torch.cos(angles[:, 1]), torch.cos(angles[:, 2])
        sx, sz, sy = torch.sin(angles[:, 0]), torch.sin(angles[:, 1]), torch.sin(angles[:, 2])
        one, zero = torch.ones_like(cx), torch.zeros_like(cx)
        rx = torch.stack([one, zero, zero, zero, cx, -sx, zero, sx, cx], dim=1).reshape(-1, 3, 3)
        ry = torch.stack([cy, zero, sy, zero, one, zero, -sy, zero, cy], dim=1).reshape(-1, 3, 3)
        rz = torch.stack([cz, -sz, zero, sz, cz, zero, zero, zero, one], dim=1).reshape(-1, 3, 3)
        return rz @ ry @ rx

    def angle_axis_rotation(a):
        norm = torch.sqrt((a * a).sum())
        if norm < 1e-4:
            return torch.eye(3)
        x, y, z = a / norm
        s, c = torch.sin(norm), torch.cos(norm)
        return torch.stack([
            torch.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s]),
            torch.stack([x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s]),
            torch.stack([x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]),
        ])

    def objective(theta, base_relatives, inverse_base_absolutes, base_positions, weights, points):
        pose = torch.zeros(n_bones + 3, 3)
        pose[pose_cols, pose_rows] = theta
        pose[1] = 1.0
        posed = torch.eye(4).repeat(n_bones, 1, 1)
        posed[:, :3, :3] = euler_rotations(pose[3:])
        relatives = base_relatives.reshape(n_bones, 4, 4) @ posed
        absolutes = []
        for bone, parent in enumerate(parents):
            absolutes.append(relatives[bone] if parent < 0 else absolutes[parent] @ relatives[bone])
        transforms = torch.stack(absolutes) @ inverse_base_absolutes.reshape(n_bones, 4, 4)
        rest = base_positions.reshape(-1, 3)
        homogeneous = torch.cat([rest, torch.ones(rest.shape[0], 1)], dim=1)
        positions = torch.einsum("bv,bij,vj->vi", weights.reshape(n_bones, -1), transforms[:, :3, :], homogeneous)
        rotation = angle_axis_rotation(pose[0]) * pose[1][None, :]
        world = positions[correspondences] @ rotation.T + pose[2]
        return ((points.reshape(-1, 3) - world) ** 2).sum()

    return Model(
        objective,
        ("theta",),
        ("base_relatives", "inverse_base_absolutes", "base_positions", "weights", "points"),
    )


def normalize(arrays: dict[str, np.ndarray]) -> Model:
    def objective(x, w):
        return (w * (x / torch.sqrt((x * x).sum()))).sum()

    return Model(objective, ("in",), ("w",))


def ode(arrays: dict[str, np.ndarray]) -> Model:
    steps, dt = int(arrays["nsteps"][0]), float(arrays["dt"][0])
    inv_dx2 = float(arrays["u0"].size) ** 2

    def objective(params, u0, w):
        diffusion, rate = params[0], params[1]
        u = u0
        for _ in range(steps):
            left = torch.cat([u[:1], u[:-1]])
            right = torch.cat([u[1:], u[-1:]])
            laplacian = (left - 2.0 * u + right) * inv_dx2
            u = u + dt * (diffusion * laplacian + rate * u * (1.0 - u))
        return (w * u).sum()

    return Model(objective, ("params", "u0"), ("w",))


def fft(arrays: dict[str, np.ndarray]) -> Model:
    def objective(re, im, w):
        spectrum = torch.fft.fft(torch.complex(re, im))
        return (w * (spectrum.real**2 + spectrum.imag**2)).sum()

    return Model(objective, ("re", "im"), ("w",))


MODELS = {"gmm": gmm, "ba": ba, "lstm": lstm, "hand": hand, "normalize": normalize, "ode": ode, "fft": fft}


def gradient_function(model: Model):
    """What a PyTorch user benchmarks: forward pass, then torch.autograd.grad of the result."""
    n = len(model.wrt)

    def grad(*args):
        return torch.autograd.grad(model.objective(*args), args[:n])

    return grad


def value(model: Model, args) -> float:
    with torch.no_grad():
        return float(model.objective(*args))


def to_device(array: np.ndarray):
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    return tensor.to(torch.int64) if tensor.dtype == torch.int32 else tensor


def block(value):
    return value
