"""The CHLO ops JAX emits for elementwise math (``chlo.atan``, ``chlo.sinh``,
``chlo.square``, ``chlo.erf``, ...): "client HLO", ops XLA expands into StableHLO when
it compiles. JAX lowers ``jnp.arctan``, ``arcsin``, ``arccos``, ``arcsinh``,
``arccosh``, ``arctanh``, ``sinh``, ``cosh``, ``jnp.square`` (also inside ``jnp.var``
and ``jnp.hypot``) and ``jax.scipy.special.erf``/``gammaln``/``digamma``/``erf_inv`` to
them. They are read, differentiated (rules in ``autodiff/rules/stablehlo.py``) and
printed back like StableHLO's elementwise ops: XLA accepts them in the derivative
module as in the user's.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from zymase.ir.stablehlo import _Elementwise, _op

UNARY = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "square", "erf", "erfc", "erf_inv",
         "lgamma", "digamma", "tan", "is_inf", "is_neg_inf", "is_pos_inf", "bessel_i1e")

ELEMENTWISE = {name: _op(name, _Elementwise, prefix="chlo") for name in UNARY}

CHLO = Dialect("chlo", list(ELEMENTWISE.values()), [])
