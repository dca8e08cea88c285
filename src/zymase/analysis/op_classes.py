"""Class tests of IR objects (ops, types) decided once per class.

xDSL's op and attribute classes are ABCs: ``isinstance`` of an object whose class is
not the one asked for goes through ``ABCMeta.__instancecheck__`` (about half a
microsecond), and the analyses and generators ask such questions of every op, operand
and type, many times over (is it a call, a constant, inline assembly ...). An object's
class decides the answer (nothing registers virtual subclasses with xDSL's classes), so
:func:`is_a` keeps it per (class, classes asked for).
"""

from __future__ import annotations

#: classes asked for -> {class of the object: answer}
_KNOWN: dict[type | tuple[type, ...], dict[type, bool]] = {}


def is_a(obj: object, of: type | tuple[type, ...]) -> bool:
    """``isinstance(obj, of)``, decided once per class of ``obj``. (The answers are kept
    per ``of`` first: a key of the pair was a tuple built and hashed at every call, and
    the walks ask this of every op.)"""
    try:
        return _KNOWN[of][type(obj)]
    except KeyError:
        known = _KNOWN.setdefault(of, {})[type(obj)] = issubclass(type(obj), of)
        return known
