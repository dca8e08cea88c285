"""Deterministic benchmark inputs in ADBench's file formats (ADBench's docs/FileFormat.md).

The C workloads read these files; with ``--adbench DIR`` ADBench's own data files are used
instead where DIR has them (``find_adbench_file``). Every generator takes a seed so that a
size always gets the same numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HAND_BONES = (
    ["wrist"]
    + [f"{finger}{i}" for finger in ("thumb", "index", "middle", "ring", "pinky") for i in range(1, 5)]
    + ["forearm"]
)


def _rows(values: np.ndarray, fmt: str = "%.9g", sep: str = " ") -> str:
    """One line per row of a 2-D array (a 1-D array is one value per line)."""
    values = np.atleast_2d(values.T).T if values.ndim == 1 else values
    return "".join(sep.join(fmt % v for v in row) + "\n" for row in values.tolist())


def write_gmm(path: Path, d: int, k: int, n: int, seed: int = 0) -> Path:
    """gmm_d{d}_K{k}.txt: "d K n", K alphas, K means, K icf vectors (d log-diagonal entries,
    then the strictly lower triangle column by column), n points, "gamma m"."""
    rng = np.random.default_rng([seed, d, k, n])
    alphas = rng.normal(size=k)
    means = rng.uniform(size=(k, d))
    icf = rng.normal(size=(k, d * (d + 1) // 2))
    x = rng.normal(size=(n, d))
    with open(path, "w") as f:
        f.write(f"{d} {k} {n}\n")
        f.write(_rows(alphas, "%.6f"))
        f.write(_rows(means, "%.6f"))
        f.write(_rows(icf, "%.6f"))
        f.write(_rows(x, "%.6f"))
        f.write("1.000000 0\n")  # Wishart prior gamma, m, as in ADBench's files
    return path


#: ADBench's ba1 camera, point, weight and feature (the other sizes use the same values)
_BA_CAMERA = [-0.758453, -1.109613, -0.845551, 34.556073, 39.676747, 53.881673, 419.194514, 5.864426,
              -8.518870, 0.087812, 0.002739]
_BA_POINT = [7.203245, 0.001144, 3.023326]
_BA_WEIGHT = 0.417022
_BA_FEATURE = [271.760969, 834.209256]


def write_ba(path: Path, n: int, m: int, p: int) -> Path:
    """ba*.txt: "n m p", one camera (11), one point (3), one weight, one feature (2); the
    reader replicates them to n cameras, m points and p observations, as ADBench does."""
    with open(path, "w") as f:
        f.write(f"{n} {m} {p}\n")
        f.write(" ".join("%.6f" % v for v in _BA_CAMERA) + "\n")
        f.write(" ".join("%.6f" % v for v in _BA_POINT) + "\n")
        f.write("%.6f\n" % _BA_WEIGHT)
        f.write(" ".join("%.6f" % v for v in _BA_FEATURE) + "\n")
    return path


def write_lstm(path: Path, layers: int, chars: int, b: int = 14, seed: int = 0) -> Path:
    """lstm_l{l}_c{c}.txt: "l c b", then per layer its 4b weights and 4b biases, the 3 extra
    parameter vectors (input weight, output weight, output bias), the state (hidden and cell
    per layer) and the c character vectors, blocks separated by blank lines."""
    rng = np.random.default_rng([seed, layers, chars, b])
    main = rng.uniform(size=(2 * layers, 4 * b))
    extra = rng.uniform(size=(3, b))
    state = rng.uniform(size=(2 * layers, b))
    sequence = rng.uniform(size=(chars, b))
    with open(path, "w") as f:
        f.write(f"{layers} {chars} {b}\n\n")
        for block in (main, extra, state, sequence):
            f.write(_rows(block) + "\n")
    return path


def _rotation(angles: np.ndarray) -> np.ndarray:
    """Rotation matrix about x, then y, then z by the three angles."""
    cx, cy, cz = np.cos(angles)
    sx, sy, sz = np.sin(angles)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def write_hand(directory: Path, n_verts: int = 544, n_corr: int = 100, seed: int = 0) -> tuple[Path, Path]:
    """A synthetic hand in ADBench's "simple" format: ``model/bones.txt`` (name:parent:16
    numbers of the base relative transform:16 of the inverse base absolute, row-major),
    ``model/vertices.txt`` (x:y:z:normal:uv:count:(bone:weight)*) and
    ``hand1_t26_c{n_corr}.txt`` (n_corr 26, "vertex x y z" per correspondence, 26 theta).
    The skeleton is ADBench's (22 bones: wrist, four per finger, forearm) with made-up bone
    lengths; vertices hang near their bones with weights on the bone and its parent.
    Returns (model directory, instance file)."""
    rng = np.random.default_rng([seed, n_verts, n_corr])
    model = directory / "model"
    model.mkdir(parents=True, exist_ok=True)
    parents = [-1]
    for finger in range(5):
        parents += [0] + [1 + 4 * finger + j for j in range(3)]
    parents.append(0)

    relatives, absolutes = [], []
    for b, parent in enumerate(parents):
        t = np.eye(4)
        t[:3, :3] = _rotation(rng.normal(scale=0.2, size=3))
        if parent == 0 and b < 21:  # finger roots spread across the palm
            t[:3, 3] = [0.02 * ((b - 1) // 4 - 2), 0.08, 0.0]
        elif parent > 0:
            t[:3, 3] = [0.0, 0.03, 0.0]
        elif b == 21:  # forearm
            t[:3, 3] = [0.0, -0.1, 0.0]
        relatives.append(t)
        absolutes.append(t if parent < 0 else absolutes[parent] @ t)
    with open(model / "bones.txt", "w") as f:
        for name, parent, rel, ab in zip(HAND_BONES, parents, relatives, absolutes):
            numbers = list(rel.ravel()) + list(np.linalg.inv(ab).ravel())
            f.write(":".join([name, str(parent)] + ["%.17g" % v for v in numbers]) + "\n")

    positions = np.empty((n_verts, 3))
    with open(model / "vertices.txt", "w") as f:
        for v in range(n_verts):
            bone = int(rng.integers(len(parents)))
            positions[v] = absolutes[bone][:3, 3] + rng.normal(scale=0.01, size=3)
            influences = {bone: 1.0}
            if parents[bone] >= 0:
                share = float(rng.uniform(0.1, 0.5))
                influences = {bone: 1.0 - share, parents[bone]: share}
            normal = rng.normal(size=3)
            normal /= np.linalg.norm(normal)
            fields = ["%.17g" % c for c in positions[v]] + ["%.6f" % c for c in normal] + ["0.0", "0.0"]
            fields.append(str(len(influences)))
            for b, weight in influences.items():
                fields += [str(b), "%.17g" % weight]
            f.write(":".join(fields) + "\n")

    instance = directory / f"hand1_t26_c{n_corr}.txt"
    correspondences = rng.integers(n_verts, size=n_corr)
    points = positions[correspondences] + rng.normal(scale=0.005, size=(n_corr, 3))
    theta = rng.normal(scale=0.1, size=26)
    with open(instance, "w") as f:
        f.write(f"{n_corr} 26\n")
        for vertex, point in zip(correspondences.tolist(), points.tolist()):
            f.write("%d %.6f %.6f %.6f\n" % (vertex, *point))
        f.write(_rows(theta, "%.6f"))
    return model, instance


def find_adbench_file(adbench: Path | None, relative: str) -> Path | None:
    """ADBench's data file at ``adbench/relative``, when a data directory was given and has it."""
    if adbench is None:
        return None
    candidate = adbench / relative
    return candidate if candidate.exists() else None
