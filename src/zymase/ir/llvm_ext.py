"""LLVM dialect operations that xDSL 0.74 lacks, defined with IRDL.

Registered together with xDSL's own ``llvm`` ops as one extended ``llvm`` dialect
(see :data:`LLVM_EXT`), so that xDSL itself is never patched.
"""

from __future__ import annotations

from xdsl.dialects import llvm as _xllvm
from xdsl.ir import Dialect

# Filled in below by the op definitions of this module.
EXTRA_OPS: list[type] = []

LLVM_EXT = Dialect("llvm", [*_xllvm.LLVM.operations, *EXTRA_OPS], [*_xllvm.LLVM.attributes])
