"""A fixed-seed sample of the second-order fuzz modes for CI (campaigns: ``python -m
tests.fuzz --lang c-nested|njit-hessian``, tests/fuzz/README.md): C programs whose first
derivative is differentiated again by both modes (``gen_c.with_nested``: reverse over
reverse, forward over reverse, reverse over forward, forward over forward, the
Hessian-vector product of a function writing the gradient into an ``enzyme_dupnoneed``
buffer) and an njit function's Hessian by every path (``check_hessian``), each against
finite differences of the first derivative and against each other.

Small programs (three statements), so that the sample stays cheap; the
comparison's ability to fail is tested on made-up Hessians with a wrong entry.
"""

from __future__ import annotations

import numpy as np

from .check_c import check_c_source
from .gen_c import C_FEATURES, NEWEST_FEATURES, generate_c, with_nested
from .gen_njit import LATER_NJIT_FEATURES, NEWEST_NJIT_FEATURES, NJIT_FEATURES, generate_njit

# (seed, level): a program with a scalar argument at -O0, one without at -O2; three statements
# each (SIZE), about 100 lines with the driver
C_NESTED_CASES = ((7004, "O0"), (7008, "O2"))
SIZE = 3
# an njit function with a scalar argument (hessian(f, argnums=1), grad(grad(f, 1), 1)) that does not
# write into x
NJIT_HESSIAN_SEED = 7006


def test_c_nested_sample():
    bad = []
    for seed, level in C_NESTED_CASES:
        o = check_c_source(with_nested(generate_c(seed, set(C_FEATURES) - set(NEWEST_FEATURES), size=SIZE)), level)
        if o.kind != "right":
            bad.append(f"seed {seed} {level}: {o.kind}: {o.detail[:400]}")
    assert not bad, ("second-order C programs failed (reproduce: gen_c.with_nested(gen_c.generate_c(SEED, "
                     "size=3)) built with zymase cc -OLEVEL):\n" + "\n".join(bad))


def test_njit_hessian_sample():
    from .check_hessian import check_hessian_source

    # the paths of njit code calling grad/jvp and the points past one chunk only in campaigns
    # (their compiles are most of a program's time)
    # (about 15 s of CPU with the imports and Numba's compiles, as much as one or two
    # programs of test_fuzz_sample's njit sample)
    # the program it was before they existed
    features = set(NJIT_FEATURES) - set(LATER_NJIT_FEATURES) - set(NEWEST_NJIT_FEATURES)
    o = check_hessian_source(generate_njit(NJIT_HESSIAN_SEED, features, size=SIZE), extended=False,
                             through_njit=False)
    assert o.kind == "right", f"seed {NJIT_HESSIAN_SEED}: {o.kind}: {o.detail[:400]}"


def test_hessian_comparison_finds_a_wrong_entry():
    """compare_hessian flags a Hessian entry off by 1e-3 at both points (and accepts it
    at one point only: a kink), and a tight pair (hvp against H @ w) off by 1e-6."""
    from .check_hessian import compare_hessian

    def point(h01: float, hvp: float) -> dict:
        H = np.array([[2.0, 0.5], [0.5, 1.0]])
        fd = {k: {i * 2 + j: float(H[i, j]) for i in range(2) for j in range(2)} for k in range(2)}
        rev = dict(fd[0])
        rev[1] = h01
        return {"primal": 1.0, "grad_max": 1.0, "rev": rev, "fd": fd, "n": 2, "scalar": {},
                "second": {0: [(2.0, 1e-3)], 1: [(1.0, 1e-3)]}, "lane": {0: (hvp, 2.5, "hvp vs hessian @ w")}}

    assert compare_hessian({0: point(0.5, 2.5), 1: point(0.5, 2.5)}) == ("right", "")
    kind, detail = compare_hessian({0: point(0.501, 2.5), 1: point(0.501, 2.5)})
    assert kind == "wrong" and "H[0,1]" in detail, detail
    assert compare_hessian({0: point(0.501, 2.5), 1: point(0.5, 2.5)})[0] == "right"
    kind, detail = compare_hessian({0: point(0.5, 2.5 + 1e-6), 1: point(0.5, 2.5)})
    assert kind == "wrong" and "hvp vs hessian @ w" in detail, detail
