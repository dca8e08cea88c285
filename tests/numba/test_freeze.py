"""llvm.freeze on the active path of njit code (issue 23 item 5): the optimizer run before AD
(preopt) freezes a value it branches on after a loop, and the same value feeds the result.
freeze is the identity for derivatives: gradients and tangents pass through it."""

import numpy as np
from numba import njit

import zymase


@njit
def mean_of_positives(x):
    s = 0.0
    n = 0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            s += x[i]
            n += 1
    if n > 0:
        return s / n
    return 0.0


def test_grad_through_freeze_of_a_loop_result():
    x = np.array([0.5, -1.0, 2.0, 3.0, -0.25])
    positive = x > 0.0
    want = np.where(positive, 1.0 / positive.sum(), 0.0)
    np.testing.assert_allclose(zymase.grad(mean_of_positives)(x), want, rtol=1e-12, atol=1e-14)


def test_jvp_through_freeze_of_a_loop_result():
    x = np.array([0.5, -1.0, 2.0, 3.0, -0.25])
    t = np.array([0.3, 0.7, -0.2, 1.1, 0.4])
    positive = x > 0.0
    _, tangent = zymase.jvp(mean_of_positives, (x,), (t,))
    np.testing.assert_allclose(tangent, t[positive].sum() / positive.sum(), rtol=1e-12)


def test_no_positive_entry_gives_zero_gradient():
    x = np.array([-0.5, -1.0])
    np.testing.assert_array_equal(zymase.grad(mean_of_positives)(x), np.zeros(2))
