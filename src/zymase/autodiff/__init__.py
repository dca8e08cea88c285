"""The differentiation engine (forward and reverse generators, rule registry).

``zymase.autodiff`` is also Enzyme's reverse-mode entry point of the Python API,
``zymase.autodiff(f, Active(x), Duplicated(a, da))``: the public API and this package
share the name (both as Enzyme spells it), so the package module is callable and
forwards the call to :func:`zymase.api.autodiff`.
"""

import sys as _sys
import types as _types


class _CallablePackage(_types.ModuleType):
    def __call__(self, *args, **kwargs):
        from zymase.api import autodiff

        return autodiff(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallablePackage
