"""enzyme-activity-opt keeps derivatives exact: every request of the FileCheck test
file computes the same values before and after the pass (and the closed forms)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import zymase.mlir
from zymase.transforms.pipeline import run_passes

SOURCE = (Path(__file__).parent / "filecheck" / "activity_opt.mlir").read_text()
CALLERS = {
    "unused": 4, "noneed": 4, "zero_seed": 3, "minimal": 3,
    "fwd_unused": 4, "fwd_zero": 3,
}


@pytest.fixture(scope="module")
def modules():
    optimized = run_passes(SOURCE, "activity_opt.mlir", ["enzyme-activity-opt"])
    assert optimized != SOURCE
    return zymase.mlir.compile(SOURCE), zymase.mlir.compile(optimized)


@pytest.mark.parametrize("name", sorted(CALLERS))
def test_same_derivatives(modules, name):
    before, after = modules
    rng = random.Random(name)
    for _ in range(5):
        args = [rng.uniform(-2, 2) for _ in range(CALLERS[name])]
        want = before[name](*args)
        got = after[name](*args)
        assert got == pytest.approx(want, rel=1e-6, abs=1e-12), (name, args)


def test_closed_forms(modules):
    _, after = modules
    x, y, d1, d2 = 0.75, -1.5, 2.0, 3.0
    o2, dx = after.unused(x, y, d1, d2)
    assert (o2, dx) == pytest.approx((y * y, 2 * x * d1))
    # pair(x, y) = (x*y, y*y); the seed of the first result is zero
    o1, o2, dx, dy = after.zero_seed(x, y, d2)
    assert (o1, o2, dx, dy) == pytest.approx((x * y, y * y, 0.0, 2 * y * d2))
    p1, t1, p2, t2 = after.fwd_zero(x, y, d2)
    assert (p1, t1, p2, t2) == pytest.approx((x * x, 0.0, y * y, 2 * y * d2))
