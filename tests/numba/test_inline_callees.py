"""njit callees are inlined before AD. LLVM's own inliner keeps a call such as GMM's
``qtimesx`` (a loop nest over array views) out of line; called in a loop, it then gets a
separate tape per call and keeps the atomic reference counts Numba wraps around it."""

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba import njit

import zymase
import zymase.frontends.c as zc
from njit_fd import fd_grad


@njit
def lower_times(diag, low, x, out):
    d = x.shape[0]
    for i in range(d):
        out[i] = diag[i] * x[i]
    pos = 0
    for j in range(d):
        for i in range(j + 1, d):
            out[i] += low[pos] * x[j]
            pos += 1


@njit
def energy(diags, lows, xs):
    k, d = diags.shape
    xc = np.empty(d)
    out = np.empty(d)
    total = 0.0
    for p in range(xs.shape[0]):
        for c in range(k):
            for j in range(d):
                xc[j] = xs[p, j] - 0.1 * c
            lower_times(diags[c], lows[c], xc, out)
            for j in range(d):
                total += out[j] * out[j]
    return total


def _inputs():
    rng = np.random.default_rng(7)
    d, k, n = 4, 3, 5
    return rng.normal(size=(k, d)), rng.normal(size=(k, d * (d - 1) // 2)), rng.normal(size=(n, d))


def _blocks_in_loops(fn) -> list:
    """The blocks of an llvmlite function that lie on a cycle of its CFG."""
    succ = {}
    for b in fn.blocks:
        term = list(b.instructions)[-1]
        succ[b.name] = [op.name for op in term.operands if str(op.type) == "label"]

    def reaches(src, dst):
        seen, todo = set(), list(succ[src])
        while todo:
            b = todo.pop()
            if b == dst:
                return True
            if b not in seen:
                seen.add(b)
                todo.extend(succ.get(b, ()))
        return False

    return [b for b in fn.blocks if reaches(b.name, b.name)]


@pytest.fixture
def pre_ad_text(monkeypatch):
    seen = []
    orig = zc.differentiate_llvm_ir

    def spy(text, *a, **k):
        seen.append(text)
        return orig(text, *a, **k)

    monkeypatch.setattr(zc, "differentiate_llvm_ir", spy)
    return seen


def test_callee_in_a_loop_is_inlined_and_its_refcounts_pruned(pre_ad_text):
    args = _inputs()
    grads = zymase.grad(energy, argnums=(0, 1))(*args)
    (text,) = pre_ad_text
    mod = llvm.parse_assembly(text)
    # the kernel's status wrapper, which AD differentiates, with the objective inlined
    # (its own definition is discarded once inlined)
    user = [f for f in mod.functions if f.name.endswith(".status") and not f.is_declaration]
    assert user and "fmul" in str(user[0]), "the objective is in the module handed to AD"
    for f in user:
        body = str(f)
        assert "lower_times" not in body, "the callee is inlined"
        for b in _blocks_in_loops(f):
            assert "NRT_incref" not in str(b) and "NRT_decref" not in str(b), b.name
    # and the derivative is still that of the program
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, fd_grad(energy, args, i), rtol=1e-6, atol=1e-8)
