"""Repeated calls of a derivative kernel leave nothing behind: every NRT allocation
(the kernel's array temporaries, shadows and tape) is freed, and the caller's arrays
are not kept alive by an incref without its decref (seen once in a kernel's IR, when
a restored NRT helper kept another function's attribute group)."""

from __future__ import annotations

import sys

import numba
import numpy as np
from numba.core.runtime import _nrt_python, rtsys

import zymase


@numba.njit
def _layer_energy(x, w):
    # a matrix product, an array temporary updated through a slice, a copy
    y = np.tanh(w @ x)
    t = x.copy()
    t[1:] += x[:-1]
    return np.sum(y * y) + np.sum(t * x)


def test_gradient_calls_free_what_they_allocate_and_release_their_arguments():
    x = np.linspace(0.1, 1.0, 8)
    w = np.full((4, 8), 0.1)
    grad = zymase.grad(_layer_energy, argnums=(0, 1))
    was_enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        grad(x, w)
        refs = [sys.getrefcount(x), sys.getrefcount(w)]
        before = rtsys.get_allocation_stats()
        for _ in range(20):
            dx, dw = grad(x, w)
        after = rtsys.get_allocation_stats()
    finally:
        if not was_enabled:
            _nrt_python.memsys_disable_stats()
    assert after.alloc - before.alloc > 0  # the kernel does allocate: the count is live
    assert after.alloc - before.alloc == after.free - before.free
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
    del dx, dw
    assert [sys.getrefcount(x), sys.getrefcount(w)] == refs
