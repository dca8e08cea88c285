"""The issue's performance targets, evaluated on the measurements, and the Markdown output.

Targets (issue 6):
  - gradient / primal (clang -O2) <= 3 on GMM, BA, LSTM, hand tracking and the ODE (worst size);
  - geometric-mean speedup of pre-optimization over --no-preopt >= 4.2x over the suite (each
    workload's geometric mean over its sizes, then over workloads, so GMM's many sizes do not
    outweigh the rest);
  - normalization gradient time linear in n with pre-optimization (log-log slope <= 1.3) and
    quadratic without (slope >= 1.7);
  - zymase's gradient faster than jax.jit(jax.grad) on every workload (every size).
Tuned variants (Workload.tuned: a workload restructured for the gradient's speed) are
shown in the table, labelled, but count in no target: the targets use the workloads in
ADBench's reference form.
"""

from __future__ import annotations

import math

from zymase.bench.cases import WORKLOADS

RATIO_GOAL = 3.0
SPEEDUP_GOAL = 4.2
LINEAR_SLOPE_MAX = 1.3
QUADRATIC_SLOPE_MIN = 1.7


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def loglog_slope(ns: list[float], times: list[float]) -> float | None:
    """Least-squares slope of log(time) against log(n)."""
    points = [(math.log(n), math.log(t)) for n, t in zip(ns, times) if t and t > 0]
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else None


def _target(name: str, goal: str, measured: str, met: bool | None) -> dict:
    return {"target": name, "goal": goal, "measured": measured, "met": met}


def _is_tuned(name: str) -> bool:
    return bool(name in WORKLOADS and WORKLOADS[name].tuned)


def evaluate_targets(results: list[dict]) -> list[dict]:
    by_workload: dict[str, list[dict]] = {}
    for r in results:
        if not _is_tuned(r["workload"]):
            by_workload.setdefault(r["workload"], []).append(r)
    targets = []

    for name, rs in by_workload.items():
        workload = WORKLOADS.get(name)
        if not workload or not workload.ratio_target:
            continue
        ratios = [r["ratio"] for r in rs if r.get("ratio") is not None]
        worst = max(ratios) if ratios else None
        targets.append(_target(
            f"gradient / primal, {workload.title}", f"<= {RATIO_GOAL:g} (worst size)",
            f"{worst:.2f}" if worst is not None else "not measured",
            None if worst is None else worst <= RATIO_GOAL))

    per_workload = {name: _geomean([r.get("preopt_speedup") for r in rs]) for name, rs in by_workload.items()}
    per_workload = {k: v for k, v in per_workload.items() if v}
    suite_speedup = _geomean(list(per_workload.values()))
    detail = ", ".join(f"{k} {v:.2f}x" for k, v in per_workload.items())
    targets.append(_target(
        "pre-optimization speedup (geometric mean over workloads)", f">= {SPEEDUP_GOAL:g}x",
        f"{suite_speedup:.2f}x ({detail})" if suite_speedup else "not measured",
        None if suite_speedup is None else suite_speedup >= SPEEDUP_GOAL))

    normalize = sorted(by_workload.get("normalize", []), key=lambda r: r["params"]["n"])
    ns = [r["params"]["n"] for r in normalize]
    with_preopt = loglog_slope(ns, [r.get("grad_s") for r in normalize])
    without = loglog_slope(ns, [r.get("grad_nopreopt_s") for r in normalize])
    if normalize:
        targets.append(_target(
            "normalization gradient linear in n with pre-optimization", f"log-log slope <= {LINEAR_SLOPE_MAX}",
            f"slope {with_preopt:.2f}" if with_preopt is not None else "needs two sizes",
            None if with_preopt is None else with_preopt <= LINEAR_SLOPE_MAX))
        targets.append(_target(
            "normalization gradient quadratic in n with --no-preopt", f"log-log slope >= {QUADRATIC_SLOPE_MIN}",
            f"slope {without:.2f}" if without is not None else "needs two sizes",
            None if without is None else without >= QUADRATIC_SLOPE_MIN))

    for name, rs in by_workload.items():
        speedups = [r["tools"]["jax"]["grad_s"] / r["grad_s"] for r in rs
                    if r.get("grad_s") and "grad_s" in r["tools"].get("jax", {})]
        if not speedups:
            continue
        worst = min(speedups)
        title = WORKLOADS[name].title if name in WORKLOADS else name
        targets.append(_target(
            f"faster than jax.jit(jax.grad), {title}", "JAX time / zymase time > 1 (every size)",
            f"{worst:.2f}x (worst size; {sum(s > 1 for s in speedups)}/{len(speedups)} sizes faster)",
            worst > 1.0))
    return targets


def format_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def format_bytes(count: int | None) -> str:
    if count is None or count < 0:
        return "-"
    for unit in ("B", "KiB", "MiB"):
        if count < 1024:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"


def _number(x: float | None, fmt: str) -> str:
    return "-" if x is None or not math.isfinite(x) else fmt % x


def _tool_cell(r: dict, tool: str) -> str:
    info = r["tools"].get(tool)
    if not info:
        return "-"
    if "error" in info:
        return "error"
    return f"{format_time(info['grad_s'])} ({_number(info.get('ratio'), '%.1f')}x)"


def markdown(results: list[dict], targets: list[dict], frameworks: list[str]) -> str:
    tools = [f for f in ("jax", "torch") if f in frameworks]
    tool_titles = {"jax": "JAX jit(grad)", "torch": "PyTorch"}
    head = ["workload", "size", "primal (clang -O2)", "gradient", "grad / primal", "--no-preopt",
            "preopt speedup", "tape", "compile"] + [tool_titles[t] for t in tools] + ["max grad diff", "FD err"]
    align = ["---", "---"] + ["---:"] * (len(head) - 2)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for r in results:
        fd = _number(r.get("max_rel_err_fd"), "%.1e")
        row = [
            f"{r['workload']} (tuned)" if _is_tuned(r["workload"]) else r["workload"], r["size"], format_time(r.get("primal_s")), format_time(r.get("grad_s")),
            _number(r.get("ratio"), "%.2f"), format_time(r.get("grad_nopreopt_s")),
            _number(r.get("preopt_speedup"), "%.2fx"), format_bytes(r.get("tape_bytes")),
            _number(r.get("compile_s"), "%.1f s"),
            *(_tool_cell(r, t) for t in tools),
            _number(r.get("max_gradient_diff"), "%.1e"),
            fd if r.get("ok") else f"{fd} **FAIL**",
        ]
        lines.append("| " + " | ".join(row) + " |")
    tuned = sorted({r["workload"] for r in results if _is_tuned(r["workload"])})
    if tuned:
        lines += [""] + [f"(tuned) {name}: {WORKLOADS[name].tuned}; not the workload's reference form, shown beside "
                         f"it and counted in no target" for name in tuned]
    lines += ["", "Targets:", "", "| target | goal | measured | met |", "|---|---|---|---|"]
    for t in targets:
        met = {True: "yes", False: "**no**", None: "-"}[t["met"]]
        lines.append(f"| {t['target']} | {t['goal']} | {t['measured']} | {met} |")
    failed = [r for r in results if not r.get("ok")]
    warned = [r for r in results if r.get("warnings")]
    if warned:
        lines += ["", "Warnings:", ""]
        lines += [f"- {r['workload']} {r['size']}: {'; '.join(r['warnings'])}" for r in warned]
    lines.append("")
    if failed:
        lines.append(f"{len(failed)} of {len(results)} cases FAILED:")
        lines += [f"- {r['workload']} {r['size']}: {'; '.join(r['errors']) or 'no gradient time'}" for r in failed]
    else:
        lines.append(f"All {len(results)} gradients agree with finite differences"
                     + (" and with each other." if len(tools) or any(r.get("gradient_diff") for r in results) else "."))
    return "\n".join(lines)
