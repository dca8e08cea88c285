"""Class tests of IR objects (ops, types) decided once per class.

xDSL's op and attribute classes are ABCs: ``isinstance`` of an object whose class is
not the one asked for goes through ``ABCMeta.__instancecheck__`` (about half a
microsecond), and the analyses and generators ask such questions of every op, operand
and type, many times over (is it a call, a constant, inline assembly ...). An object's
class decides the answer (nothing registers virtual subclasses with xDSL's classes), so
:func:`is_a` keeps it per (class, classes asked for).
"""

from __future__ import annotations

_KNOWN: dict[tuple[type, type | tuple[type, ...]], bool] = {}


def is_a(obj: object, of: type | tuple[type, ...]) -> bool:
    """``isinstance(obj, of)``, decided once per class of ``obj``."""
    key = (type(obj), of)
    known = _KNOWN.get(key)
    if known is None:
        known = _KNOWN[key] = issubclass(key[0], of)
    return known
