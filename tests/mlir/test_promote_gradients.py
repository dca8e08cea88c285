"""remove-unnecessary-enzyme-ops promotes !enzyme.Gradient cells to SSA values
(transforms/promote_gradients.py) without changing what a function computes: the
hand-written functions of filecheck/promote_gradients.mlir (the FileCheck test
shows their promoted form) give the same results compiled with the cells in
memory (the LLVM lowering's allocas) and compiled after the pass, and both agree
with a Python model of each function."""

from __future__ import annotations

from pathlib import Path

import pytest

import zymase.mlir
from zymase.transforms.pipeline import run_passes

TEXT = (Path(__file__).parent / "filecheck" / "promote_gradients.mlir").read_text()

def _while_cell(x, n):
    g, a = x, 1.0
    while True:
        g *= x
        if not a < n:
            return g + a
        g += a
        a += 1.0


def _read_only(x, n):
    a = x
    for _ in range(n):
        a *= x
    return a


MODELS = {
    "while_cell": _while_cell,
    "if_no_else": lambda x, c: x if c else 0.0,
    "read_only": _read_only,
    "reset": _read_only,  # each iteration: a <- (0 + a) * x, the cell reset to 0
    "cfg": lambda x, c: x if c else 0.0,
}

CALLS = [
    ("while_cell", (1.5, 4.5)),
    ("while_cell", (0.5, 0.0)),  # the before region runs once, the after region never
    ("if_no_else", (2.25, True)),
    ("if_no_else", (2.25, False)),
    ("read_only", (1.1, 5)),
    ("read_only", (1.1, 0)),
    ("reset", (0.9, 3)),
    ("cfg", (1.75, True)),
    ("cfg", (1.75, False)),
]


@pytest.fixture(scope="module", params=[0, 2], ids=["O0", "O2"])
def pair(request):
    promoted = run_passes(TEXT, "promote_gradients.mlir", ["remove-unnecessary-enzyme-ops"])
    assert "enzyme.get" not in promoted.split("@cfg")[0]  # the pass did promote
    return (
        zymase.mlir.compile(TEXT, opt_level=request.param),
        zymase.mlir.compile(promoted, opt_level=request.param),
    )


@pytest.mark.parametrize("name,args", CALLS, ids=[f"{n}{a}" for n, a in CALLS])
def test_promoted_cells_compute_the_same(pair, name, args):
    in_memory, promoted = pair
    expected = MODELS[name](*args)
    assert getattr(in_memory, name)(*args) == pytest.approx(expected, rel=1e-14)
    assert getattr(promoted, name)(*args) == pytest.approx(expected, rel=1e-14)
