"""Refusing users' ``jax.custom_jvp`` / ``jax.custom_vjp`` rules (issue 28).

JAX lowers a function with a custom rule to its primal alone: the StableHLO zymase
differentiates has no trace of the rule, so zymase would give the primal's derivative
where ``jax.grad`` gives the rule's (a straight-through estimator, a clipped or
numerically stabilized gradient): a silent difference. The traced jaxpr still holds
the rule, as a ``custom_jvp_call`` / ``custom_vjp_call`` equation (nested in ``jit``,
``cond``, ``scan``, ... sub-jaxprs), so the front end looks there before lowering.

Rules defined inside JAX itself (``jax.nn.relu``, ``jnp.logaddexp``,
``jax.scipy.special.xlogy``, ...) and zymase's own (``zymase.jax.jit``, whose backward
pass is zymase's derivative of the same primal) are derivatives of their primals, kept
only for numerics or a choice at a kink: zymase differentiates the primal there. Any
other rule is refused, naming it, where it is defined and where it is called.
"""

from __future__ import annotations

import os

import jax
from jax._src import core, source_info_util

import zymase
from zymase.errors import ZymaseError

_PRIMITIVES = {"custom_jvp_call": "jax.custom_jvp", "custom_vjp_call": "jax.custom_vjp"}
# packages whose custom rules are the derivatives of their primals
_TRUSTED = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (jax, zymase))


def _definition(eqn) -> tuple[str, str | None]:
    """The rule's function name and ``file:line`` (JAX's debug info: ``"f at file:line"``)."""
    info = getattr(eqn.params.get("call_jaxpr"), "jaxpr", None)
    text = getattr(getattr(info, "debug_info", None), "func_src_info", None)
    if not text or " at " not in text:
        return "<unknown>", None
    name, where = text.rsplit(" at ", 1)
    return name, where


def _defined_in_trusted_package(where: str | None) -> bool:
    if where is None:
        return False
    path = os.path.abspath(where.rsplit(":", 1)[0])
    return path.startswith(_TRUSTED)


def _call_site(eqn) -> str | None:
    frame = source_info_util.user_frame(eqn.source_info.traceback)
    return f"{frame.file_name}:{frame.start_line}" if frame is not None else None


def _equations(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in core.jaxprs_in_params(eqn.params):
            yield from _equations(sub)


def refuse_custom_rules(closed_jaxpr, function: str) -> None:
    """Raise a ZymaseError for the first user-defined custom rule in ``closed_jaxpr``
    (the traced function ``function``)."""
    for eqn in _equations(closed_jaxpr.jaxpr):
        kind = _PRIMITIVES.get(eqn.primitive.name)
        if kind is None:
            continue
        name, where = _definition(eqn)
        if _defined_in_trusted_package(where):
            continue
        defined = f" (defined at {where})" if where else ""
        raise ZymaseError(f"'{name}' has a {kind} rule{defined}, which zymase would not apply: it differentiates "
                          "the operations JAX lowers, and jax.grad would use the rule",
                          construct=kind, function=function, location=_call_site(eqn),
                          hint="use jax.grad / jax.jvp for a function with a custom rule, or call the function "
                               "without the rule if the rule is its derivative")
