"""`zymase bench` on its smallest case, and its failure detection.

Timing values are never asserted (the machine is shared); fields, gradient checks and exit
codes are. JAX and PyTorch are compared only where installed (not in CI).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from zymase.bench import cases, report, runner
from zymase.bench.compare import GRADIENT_TOLERANCE, gradient_difference, pairwise_differences

WRONG_GRADIENT_C = r"""
#include "bench_common.h"

double sum_of_squares(const double *restrict x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}

struct ctx { int n; double x[8], dx[8]; double sink; };

static double eval(void *p) { struct ctx *c = p; return sum_of_squares(c->x, c->n); }
static void primal(void *p) { struct ctx *c = p; c->sink += eval(p); }
static void grad(void *p) {
    struct ctx *c = p;
    memset(c->dx, 0, sizeof c->dx);
    __enzyme_autodiff((void *)sum_of_squares, enzyme_dup, c->x, c->dx, enzyme_const, c->n);
    c->dx[3] *= 1.5; /* deliberately wrong */
}

int main(void) {
    struct ctx c = {.n = 8};
    for (int i = 0; i < 8; i++) c.x[i] = 0.5 + i;
    struct bench_workload w = {.name = "wrong", .size = "n=8", .ctx = &c, .primal = primal, .grad = grad,
                               .eval = eval};
    bench_add(&w, "x", 'd', c.x, 8, c.dx, 8);
    return bench_run(&w);
}
"""


@pytest.fixture(scope="module")
def smallest_run(tmp_path_factory):
    """`zymase bench --json` on the smallest normalization case (all four builds)."""
    work = tmp_path_factory.mktemp("bench")
    smallest = next(c for c in cases.suite(quick=True) if c.workload.name == "normalize")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "suite", lambda quick: [smallest])
        mp.setenv("BENCH_MIN_S", "0.001")
        mp.setenv("BENCH_REPEATS", "1")
        rc = runner.main(["--json", str(work / "out.json"), "--keep", str(work / "keep")])
    return rc, json.loads((work / "out.json").read_text())


def test_smallest_case_reports_every_measurement(smallest_run):
    rc, out = smallest_run
    assert rc == 0 and out["ok"]
    (case,) = out["cases"]
    assert case["workload"] == "normalize" and case["params"] == {"n": 1000} and case["data"] == "generated"
    for key in ("primal_s", "primal_zymase_s", "grad_s", "grad_nopreopt_s", "ratio", "preopt_speedup",
                "compile_s", "compile_nopreopt_s"):
        assert case[key] > 0, key
    assert case["tape_bytes"] >= 0
    assert case["max_rel_err_fd"] <= 1e-5
    assert case["gradient_diff"]["zymase vs zymase --no-preopt"] <= GRADIENT_TOLERANCE
    assert case["errors"] == [] and case["ok"]
    names = {t["target"] for t in out["targets"]}
    assert "normalization gradient linear in n with pre-optimization" in names
    assert any(t["target"].startswith("pre-optimization speedup") for t in out["targets"])


def test_frameworks_agree_or_are_reported_absent(smallest_run):
    # CI installs neither JAX nor PyTorch: then their columns must be absent, not empty
    _, out = smallest_run
    (case,) = out["cases"]
    assert set(out["frameworks"]) == {"jax", "torch"}
    for framework, version in out["frameworks"].items():
        if version:
            assert case["tools"][framework]["grad_s"] > 0
            assert case["gradient_diff"][f"zymase vs {framework}"] <= GRADIENT_TOLERANCE
            assert case["objective_diff"][f"zymase vs {framework}"] <= 1e-12
        else:
            assert framework not in case["tools"]
            assert f"zymase vs {framework}" not in case["gradient_diff"]


def test_wrong_gradient_fails_the_run(tmp_path, monkeypatch):
    source = tmp_path / "wrong.c"
    source.write_text(WRONG_GRADIENT_C)
    workload = cases.Workload("wrong", "deliberately wrong", source_file=source)
    case = cases.Case(workload, "n=8", {"n": 8}, lambda work, adbench: ([], "built in"))
    monkeypatch.setenv("BENCH_MIN_S", "0.001")
    monkeypatch.setenv("BENCH_REPEATS", "1")
    (result,) = runner.run_suite([case], tmp_path, variants=("preopt",))
    assert not result["ok"]
    assert result["max_rel_err_fd"] > 1e-2
    assert any("finite differences" in e for e in result["errors"])
    assert "**FAIL**" in report.markdown([result], [], [])


def test_disagreeing_tools_are_detected():
    right = {"x": np.array([1.0, -2.0, 3.0]), "y": np.array([0.5])}
    wrong = {"x": np.array([1.0, -2.0, 3.0 * (1 + 1e-4)]), "y": np.array([0.5])}
    assert gradient_difference(right, {k: v.copy() for k, v in right.items()}) == 0.0
    assert gradient_difference(right, wrong) > GRADIENT_TOLERANCE
    assert gradient_difference(right, {"x": right["x"]}) == float("inf")  # an array missing
    diffs = pairwise_differences({"zymase": right, "jax": right, "torch": wrong})
    assert diffs["zymase vs jax"] == 0.0 and diffs["zymase vs torch"] > GRADIENT_TOLERANCE


def test_targets_and_slopes():
    assert report.loglog_slope([1e3, 1e4, 1e5], [1.0, 10.0, 100.0]) == pytest.approx(1.0)
    assert report.loglog_slope([1e3, 1e4], [1.0, 100.0]) == pytest.approx(2.0)
    results = [
        {"workload": "gmm", "size": "a", "params": {}, "ratio": 2.5, "preopt_speedup": 2.0, "grad_s": 1.0,
         "tools": {"jax": {"grad_s": 0.5}}},
        {"workload": "ode", "size": "b", "params": {}, "ratio": 3.5, "preopt_speedup": 8.0, "grad_s": 1.0,
         "tools": {}},
    ]
    met = {t["target"]: t["met"] for t in report.evaluate_targets(results)}
    assert met["gradient / primal, GMM"] is True
    assert met["gradient / primal, ODE"] is False
    assert met["pre-optimization speedup (geometric mean over workloads)"] is False  # sqrt(16) = 4
    assert met["faster than jax.jit(jax.grad), GMM"] is False


def test_tuned_variants_count_in_no_target_and_are_labelled():
    # issue 29 item 4 (honest yardsticks): the targets use ADBench's reference forms; a
    # tuned variant is shown beside its workload, labelled, and compared with the same
    # JAX/PyTorch model
    tuned = [w for w in cases.WORKLOADS.values() if w.tuned]
    assert tuned and all(w.model in cases.WORKLOADS and not cases.WORKLOADS[w.model].tuned for w in tuned)
    assert {c.workload.name for c in cases.suite(quick=True)} >= {"gmm", "gmm_tuned"}
    results = [
        {"workload": "gmm", "size": "a", "params": {}, "ratio": 2.5, "preopt_speedup": 8.0, "grad_s": 1.0,
         "tools": {"jax": {"grad_s": 2.0}}, "ok": True},
        {"workload": "gmm_tuned", "size": "a", "params": {}, "ratio": 9.0, "preopt_speedup": 1.0, "grad_s": 1.0,
         "tools": {"jax": {"grad_s": 0.1}}, "ok": True},
    ]
    targets = report.evaluate_targets(results)
    assert all(t["met"] for t in targets), targets
    assert not any("tuned" in t["target"] for t in targets)
    text = report.markdown(results, targets, ["jax"])
    assert "| gmm_tuned (tuned) |" in text and "not the workload's reference form" in text


def test_unknown_workload_is_an_error(capsys):
    assert runner.main(["--only", "nosuch"]) == 1
    assert "unknown workload" in capsys.readouterr().err


def test_workload_sources_ship_with_the_package():
    for workload in cases.WORKLOADS.values():
        assert workload.source.exists(), workload.source
    assert (cases.WORKLOAD_DIR / "bench_common.h").exists()


def test_baseline_killed_for_memory_is_reported_not_failed(tmp_path, monkeypatch):
    # AD before optimization runs out of memory at large sizes (the kernel's OOM killer
    # sends SIGKILL); that is the baseline failing, not the gradient: a warning, no FAIL.
    # This program kills itself the same way when run as the --no-preopt build is run
    # (without primal timing or finite differences)
    source = tmp_path / "killed.c"
    source.write_text(WRONG_GRADIENT_C.replace("    c->dx[3] *= 1.5; /* deliberately wrong */\n", "").replace(
        "int main(void) {",
        "#include <signal.h>\n#include <unistd.h>\nint main(void) {\n"
        "    const char *p = getenv(\"BENCH_PRIMAL\"), *fd = getenv(\"BENCH_FD\");\n"
        "    if (p && fd && !strcmp(p, \"0\") && !strcmp(fd, \"0\")) kill(getpid(), SIGKILL);"))
    workload = cases.Workload("killed", "killed for memory", source_file=source)
    case = cases.Case(workload, "n=8", {"n": 8}, lambda work, adbench: ([], "built in"))
    monkeypatch.setenv("BENCH_MIN_S", "0.001")
    monkeypatch.setenv("BENCH_REPEATS", "1")
    (result,) = runner.run_suite([case], tmp_path, variants=("preopt", "nopreopt"))
    assert result["ok"] and result["errors"] == [], result["errors"]
    assert result["grad_s"] > 0 and result.get("grad_nopreopt_s") is None
    assert any("out of memory" in w for w in result["warnings"])
    assert "**FAIL**" not in report.markdown([result], [], [])


def test_march_reaches_every_build(tmp_path):
    from zymase.bench import native

    workload = cases.WORKLOADS["normalize"]
    for variant in native.VARIANTS:
        argv, _ = native.build_command(workload, variant, workload.source, tmp_path / "x", ("-march=native",))
        assert "-march=native" in argv and "-fno-math-errno" in argv, (variant, argv)
    # native by default (JAX's XLA compiles for this CPU too); generic is clang's own default
    assert runner.march_flags(runner.parse_args([]).march) == ("-march=native",)
    assert runner.march_flags(runner.parse_args(["--march", "generic"]).march) == ()
    assert runner.march_flags(runner.parse_args(["--march", "znver4"]).march) == ("-march=znver4",)
