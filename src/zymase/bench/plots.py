"""PNG plots of the measurements (matplotlib, Agg backend; skipped when not installed):

  ratios.png     gradient time / clang -O2 primal time per case, for each tool
  normalize.png  log-log gradient time against n for the normalization loop, with and
                 without pre-optimization (and the frameworks), with O(n) and O(n^2) guides
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

TOOLS = [  # (label, how to get the gradient time from a case)
    ("zymase", lambda r: r.get("grad_s")),
    ("zymase --no-preopt", lambda r: r.get("grad_nopreopt_s")),
    ("JAX jit(grad)", lambda r: r["tools"].get("jax", {}).get("grad_s")),
    ("PyTorch", lambda r: r["tools"].get("torch", {}).get("grad_s")),
]


def write_plots(results: list[dict], directory: Path) -> list[Path]:
    if importlib.util.find_spec("matplotlib") is None:
        return []
    import matplotlib

    matplotlib.use("Agg")
    directory.mkdir(parents=True, exist_ok=True)
    written = [_ratios(results, directory / "ratios.png")]
    normalize = _normalize(results, directory / "normalize.png")
    return written + ([normalize] if normalize else [])


def _ratios(results: list[dict], path: Path) -> Path:
    import matplotlib.pyplot as plt

    cases = [r for r in results if r.get("primal_s")]
    tools = [(label, get) for label, get in TOOLS if any(get(r) for r in cases)]
    width = 0.8 / max(1, len(tools))
    fig, ax = plt.subplots(figsize=(max(8, 0.6 * len(cases) + 2), 5))
    for i, (label, get) in enumerate(tools):
        xs = [j + (i - (len(tools) - 1) / 2) * width for j in range(len(cases))]
        ys = [(get(r) / r["primal_s"]) if get(r) else 0 for r in cases]
        ax.bar(xs, ys, width, label=label)
    ax.axhline(3.0, color="black", linestyle="--", linewidth=0.8, label="target 3")
    ax.set_yscale("log")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([f"{r['workload']}\n{r['size']}" for r in cases], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("gradient time / primal time (clang -O2)")
    ax.set_title("Gradient cost relative to the primal, one thread")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _normalize(results: list[dict], path: Path) -> Path | None:
    import matplotlib.pyplot as plt

    cases = sorted((r for r in results if r["workload"] == "normalize"), key=lambda r: r["params"]["n"])
    if len(cases) < 2:
        return None
    ns = [r["params"]["n"] for r in cases]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for label, get in TOOLS:
        points = [(n, get(r)) for n, r in zip(ns, cases) if get(r)]
        if points:
            ax.loglog(*zip(*points), marker="o", label=label)
    # guides through the first point of each zymase curve
    for key, power, style, label in (("grad_s", 1, "k:", "O(n)"), ("grad_nopreopt_s", 2, "k--", "O(n²)")):
        first = cases[0].get(key)
        if first:
            ax.loglog(ns, [first * (n / ns[0]) ** power for n in ns], style, linewidth=0.8, label=label)
    ax.set_xlabel("n")
    ax.set_ylabel("gradient time (s)")
    ax.set_title("out[i] = in[i] / mag(in): gradient time")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
