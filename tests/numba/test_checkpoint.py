"""``tape_limit=`` of the Python transforms (issue 27 item 4): an njit time loop is reversed
by binomial checkpointing (autodiff/checkpoint.py) and gives the unlimited gradient; a loop
whose state cannot be bounded is refused under a limit, and only under a limit."""

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError


@njit
def damped(k, n):
    x, p, e = 1.0, 0.0, 0.0
    for s in range(n):
        p += 1e-3 * (-k * x - 0.1 * p)
        x += 1e-3 * p
        e += 1e-3 * (p * p + np.sin(x))
    return e


@njit
def relax(x, n):
    for s in range(n):
        for i in range(1, x.size):
            x[i] = 0.5 * (x[i] + x[i - 1] * x[i - 1])
    return x[-1]


# issue 27 item 4: registers carried through a time loop whose trip count is an argument,
# at two limits (4K: a few snapshots, many recomputations) against the unlimited gradient
# and central differences
def test_checkpointed_njit_loop_matches_unlimited_gradient():
    n = 20_000
    want = zymase.grad(damped)(2.0, n)
    for limit in ("4K", 1 << 20):
        got = zymase.grad(damped, tape_limit=limit)(2.0, n)
        assert got == pytest.approx(want, rel=1e-12)
    h = 1e-6
    assert want == pytest.approx((damped(2.0 + h, n) - damped(2.0 - h, n)) / (2 * h), rel=1e-6)


# issue 27 item 4: a loop that writes through an array argument (extent unknown to the
# analysis) is one clear ZymaseError under a limit; without one it is differentiated
def test_unbounded_njit_loop_state_is_refused_under_a_limit():
    x = np.array([0.5, 0.4, 0.3, 0.2])
    with pytest.raises(ZymaseError) as err:
        zymase.grad(relax, tape_limit="1M")(x.copy(), 10)
    text = err.value.format()
    assert text.startswith("zymase: error: ") and "cannot be checkpointed" in text
    assert "function 'relax'" in text and "pointer argument" in text and "hint:" in text
    assert zymase.grad(relax)(x.copy(), 10).shape == (4,)


# issue 27 item 4: the other reverse-mode transforms take the limit too (an unbounded loop
# refused under it shows that it reached the engine)
def test_vjp_and_autodiff_take_a_tape_limit():
    x = np.array([0.5, 0.4, 0.3, 0.2])
    with pytest.raises(ZymaseError, match="cannot be checkpointed"):
        zymase.vjp(relax, x.copy(), 10, tape_limit="1M")[1](1.0)  # (built at the first call)
    with pytest.raises(ZymaseError, match="cannot be checkpointed"):
        zymase.autodiff(relax, zymase.Duplicated(x.copy(), np.zeros(4)), zymase.Const(10), tape_limit="1M")
    (dk,) = zymase.autodiff(damped, zymase.Active(2.0), zymase.Const(5000), tape_limit="4K")[:1]
    assert dk == pytest.approx(zymase.grad(damped)(2.0, 5000), rel=1e-12)


def test_tape_limit_rejects_a_bad_size():
    with pytest.raises(ZymaseError, match="tape_limit: 'plenty' is not a size"):
        zymase.grad(damped, tape_limit="plenty")
