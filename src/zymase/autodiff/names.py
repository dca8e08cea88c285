"""Names that front ends, the engine and later passes agree on. Kept apart from the
engine so that a front end can use them without importing it (and its rules).

``ABANDON``: a call to this function right before a return marks the return as an
abandoned exit. The program failed there (a front end's error path, such as Numba's
raised exceptions), so no derivative is wanted: reverse mode returns at once on that
path, and the reverse sweep follows only the paths that reach the real exit, so a value
computed after the first error check still dominates that exit.

``ABANDONED``: the attribute on the ``llvm.unreachable`` that stands for such a return
while the engine works on the function.

``SHADOW_ARGS``: function attribute, the positions of the arguments that are shadows.
A shadow never shares memory with a primal (Enzyme's contract; the Python API checks
it), which ``transforms.alias_scopes`` turns into LLVM metadata.

``SHADOW_LANES``: beside ``SHADOW_ARGS`` in vector mode, the lane of each of those
arguments. Lanes never share memory either: N lanes computed side by side equal N
separate calls only if no lane reads what another writes.
"""

ABANDON = "__zymase_abandon"
ABANDONED = "zymase.abandoned"
SHADOW_ARGS = "zymase.shadow_args"
SHADOW_LANES = "zymase.shadow_lanes"

#: the shadow of global ``@g`` that the derivatives make is ``@__zymase_shadow_g``
#: (autodiff/memory.ShadowCode._shadow_global; zeroed per derivative call by
#: transforms/global_shadow_reset)
SHADOW_GLOBAL_PREFIX = "__zymase_shadow_"


def primal_of(derivative: str) -> str:
    """``diffe_Z1fd.2`` -> ``_Z1fd``: the driver names derivatives ``diffe<name>`` /
    ``fwddiffe<name>`` / ``augmented<name>`` with an optional ``.N``
    (``autodiff/driver.Driver._fresh``)."""
    for prefix in ("fwddiffe", "diffe", "augmented"):
        if derivative.startswith(prefix):
            base = derivative[len(prefix):]
            head, dot, tail = base.rpartition(".")
            return head if dot and tail.isdigit() else base
    return derivative
