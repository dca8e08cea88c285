"""Derivative semantics chosen per compilation: strong zeros (the default) or IEEE
propagation of ``0 * inf``; and whether the derivatives generated now will themselves
be differentiated (nested differentiation), which limits their tapes to what the engine
can differentiate.

With strong zeros, a zero adjoint (reverse mode) or a zero tangent (forward mode)
contributes zero whatever the partial it multiplies: an intermediate that does not
influence the result (``d = sqrt(x)`` used only where ``d > 1e-6``, a Lennard-Jones
term on the zero diagonal) adds nothing, where IEEE arithmetic would add
``0 * inf = NaN``. Where the derivative itself is infinite or undefined the partial
meets a nonzero adjoint and the answer stays inf/NaN. Front ends set the choice for
the duration of one compilation with :func:`derivative_semantics`
(``zymase cc --no-strong-zero``, ``zymase.grad(f, strong_zero=False)``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_STRONG_ZERO: ContextVar[bool] = ContextVar("zymase_strong_zero", default=True)
_DIFFERENTIATED_AGAIN: ContextVar[bool] = ContextVar("zymase_differentiated_again", default=False)


def strong_zero() -> bool:
    """Whether derivatives being generated now use strong zeros."""
    return _STRONG_ZERO.get()


@contextmanager
def derivative_semantics(*, strong_zero: bool = True) -> Iterator[None]:
    """Generate the derivatives built inside with (or without) strong zeros."""
    token = _STRONG_ZERO.set(strong_zero)
    try:
        yield
    finally:
        _STRONG_ZERO.reset(token)


def differentiated_again() -> bool:
    """Whether the derivatives being generated now will be differentiated again (an
    inner ``__enzyme_autodiff`` of a nested one): their tapes then go through memory the
    engine shadows: LIFO caches, and indexed caches marked ``"heap"`` (a realloc'd
    buffer freed on return, not the spare buffers in globals that first-order tapes
    keep between calls, nor their ``{ptr, i64}`` aggregates); no checkpointing."""
    return _DIFFERENTIATED_AGAIN.get()


@contextmanager
def generating_inner_derivatives(inner: bool = True) -> Iterator[None]:
    """Generate the derivatives built inside for differentiation again (or not)."""
    token = _DIFFERENTIATED_AGAIN.set(inner)
    try:
        yield
    finally:
        _DIFFERENTIATED_AGAIN.reset(token)
