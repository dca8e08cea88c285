"""The standard dialects (func, arith, math, cf, scf, memref), imported when first used.

The C and Numba paths build llvm-dialect ops only: importing these six dialects and
zymase's extensions of them was about 15% of what ``zymase cc`` imports (issue 29 item
5). So ``zymase.ir`` binds each name to a :class:`DialectModule`, which imports the real
module (inside ``xdsl_import``'s window) at its first attribute access and from then on
holds the module's names, and code naming a class of these dialects where it does not
build one (a module-level tuple of op classes for ``isinstance``) names it in an
:class:`OpClasses`, which does not import it: an op of a dialect nobody imported cannot
exist, so leaving the class out until then changes no answer.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types

from zymase.ir import xdsl_import

_lock = threading.RLock()


class DialectModule(types.ModuleType):
    """Stands for the module ``target`` (``xdsl.dialects.arith``, ...) and imports it at
    the first access of an attribute; afterwards it holds the module's names, so an
    access costs what a module's does. (``from zymase.ir import arith`` at the top of a
    module therefore costs nothing until ``arith.AddfOp`` is evaluated.)"""

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.__dict__["_target"] = target

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__") and name != "__file__":
            raise AttributeError(name)  # (copy, pickle, inspect and doctest probe these)
        module = self.load()
        return getattr(module, name)

    def load(self) -> types.ModuleType:
        """Import the module (once) and take its names."""
        target = self.__dict__["_target"]
        with _lock:
            module = sys.modules.get(target)
            if module is None or self.__dict__.get("_loaded") is not module:
                with xdsl_import.importing_xdsl():
                    module = importlib.import_module(target)
                self.__dict__.update({k: v for k, v in vars(module).items() if k != "__dict__"})
                self.__dict__["_loaded"] = module
        return module


#: the modules :class:`OpClasses` may name classes of: zymase.ir's name -> module
MODULES = {
    "func": "xdsl.dialects.func",
    "arith": "xdsl.dialects.arith",
    "math": "xdsl.dialects.math",
    "cf": "xdsl.dialects.cf",
    "scf": "xdsl.dialects.scf",
    "memref": "xdsl.dialects.memref",
    "arith_ext": "zymase.ir.arith_ext",
    "scf_ext": "zymase.ir.scf_ext",
    "memref_ext": "zymase.ir.memref_ext",
}


class OpClasses:
    """A target for ``isinstance`` (and a sequence, for ``+`` and ``*`` unpacking) made of
    op classes, other OpClasses, and names ``"arith.AddfOp"`` of classes in
    :data:`MODULES`. A named class counts once its module is imported, by whoever
    imports it; until then no instance of it can exist, so ``isinstance`` answers as it
    would with the class included."""

    __slots__ = ("_members", "_classes", "_pending", "_modules_seen")

    def __init__(self, *members) -> None:
        for m in members:
            if isinstance(m, str) and m.rpartition(".")[0] not in MODULES:
                raise ValueError(f"OpClasses: {m!r} is not a class of {sorted(MODULES)}")
        self._members = members
        self._classes: tuple[type, ...] = ()
        self._pending = True
        self._modules_seen = -1
        self._resolve()

    def _resolve(self) -> tuple[type, ...]:
        """The classes whose modules are imported; re-read only when ``sys.modules``
        has grown since (or a module was still being imported)."""
        if not self._pending or len(sys.modules) == self._modules_seen:
            return self._classes
        seen = len(sys.modules)
        classes: list[type] = []
        pending = False
        for m in self._members:
            if isinstance(m, OpClasses):
                classes += m._resolve()
                pending = pending or m._pending
            elif isinstance(m, str):
                name, _, cls = m.rpartition(".")
                module = sys.modules.get(MODULES[name])
                found = getattr(module, cls, None) if module is not None else None
                if found is None:
                    pending = True
                    if module is not None:
                        if not getattr(module.__spec__, "_initializing", False):
                            raise AttributeError(f"OpClasses: {MODULES[name]} has no {cls}")
                        seen = -1  # (imported half-way: look again next time)
                else:
                    classes.append(found)
            else:
                classes.append(m)
        self._classes, self._pending, self._modules_seen = tuple(classes), pending, seen
        return self._classes

    def __instancecheck__(self, obj) -> bool:
        return isinstance(obj, self._resolve())

    def __iter__(self):
        return iter(self._resolve())

    def __len__(self) -> int:
        return len(self._resolve())

    def __add__(self, other):
        return self._resolve() + tuple(other)

    def __radd__(self, other):
        return tuple(other) + self._resolve()

    def __repr__(self) -> str:
        return f"OpClasses{self._members!r}"


def load_all() -> None:
    """Import every module of :data:`MODULES` as its first use would (the tests parse
    every format and compare every rule)."""
    for target in MODULES.values():
        DialectModule(target).load()
