"""Rules for the enzyme dialect's own value ops: ``enzyme.ignore_derivatives`` passes
its value through and no derivative (the zero rule: activity analysis sees no
operand propagating, forward mode gives no tangent, reverse mode no adjoint)."""

from zymase.autodiff.registry import REGISTRY
from zymase.autodiff.rules import scalar
from zymase.ir import enzyme

REGISTRY.register(enzyme.IgnoreDerivativesOp, scalar.ZERO)
