"""Attribute syntax (part of :mod:`zymase.llvm.reader`): the linkage, preemption,
visibility and calling-convention words, parameter and result attributes
(-> ``arg_attrs``/``res_attrs`` dictionaries) and function attributes (-> the
``passthrough`` entries)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from zymase.ir import ArrayAttr, Attribute, DictionaryAttr, StringAttr, llvm
from zymase.llvm.reader.lexer import Token, _Cursor, _ParseFailure, _string_literal
from zymase.llvm.reader.types import _I64, _UNIT, _Types, int_attr


_LINKAGES = frozenset(
    ["private", "internal", "available_externally", "linkonce", "weak", "common", "appending",
     "extern_weak", "linkonce_odr", "weak_odr", "external"]
)
_PREEMPTION = frozenset(["dso_local", "dso_preemptable"])
_VISIBILITY = {"default": 0, "hidden": 1, "protected": 2}
_DLL = frozenset(["dllimport", "dllexport"])
_CCONVS = frozenset(llvm.LLVM_CALLING_CONVS) - {"cc 10", "cc 11"}

_PARAM_FLAGS = frozenset(
    ["noalias", "readonly", "writeonly", "readnone", "noundef", "nonnull", "signext", "zeroext",
     "returned", "inreg", "nest", "nofree", "immarg", "writable", "dead_on_unwind", "allocalign",
     "allocptr", "swiftself", "swifterror", "swiftasync", "noext", "nocapture"]
)
_PARAM_INT = frozenset(["dereferenceable", "dereferenceable_or_null", "alignstack"])
_PARAM_TYPE = frozenset(["sret", "byval", "byref", "inalloca", "preallocated", "elementtype"])
_PARAM_DROPPED = frozenset(["range", "nofpclass", "initializes", "dead_on_return"])
_PARAM_WORDS = _PARAM_FLAGS | _PARAM_INT | _PARAM_TYPE | _PARAM_DROPPED | {"align", "captures"}


def _parse_param_attrs(cur: _Cursor, types: _Types) -> dict[str, Attribute]:
    """Parse the parameter/return attributes before a value or name (see module doc)."""
    attrs: dict[str, Attribute] = {}
    while cur.peek()[0] == "w" and cur.text() in _PARAM_WORDS:
        word = cur.next()[1]
        if word in _PARAM_FLAGS:
            attrs["llvm." + word] = _UNIT
        elif word == "align":
            if cur.accept("("):
                attrs["llvm.align"] = int_attr(cur.expect_int(), _I64)
                cur.expect(")")
            else:
                attrs["llvm.align"] = int_attr(cur.expect_int(), _I64)
        elif word in _PARAM_INT:
            cur.expect("(")
            attrs["llvm." + word] = int_attr(cur.expect_int(), _I64)
            cur.expect(")")
        elif word in _PARAM_TYPE:
            cur.expect("(")
            attrs["llvm." + word] = types.parse(cur)
            cur.expect(")")
        elif word == "captures":
            if cur.balanced_text().strip() == "none":
                attrs["llvm.nocapture"] = _UNIT
        else:  # pure hints with arguments: dropped (see module docstring)
            if cur.text() == "(":
                cur.balanced_text()
    return attrs


def _attr_dict_array(per_param: list[dict[str, Attribute]]) -> ArrayAttr | None:
    if not any(per_param):
        return None
    return ArrayAttr([_dictionary(tuple(d.items())) for d in per_param])


@functools.lru_cache(maxsize=4096)
def _dictionary(items: tuple[tuple[str, Attribute], ...]) -> DictionaryAttr:
    """``DictionaryAttr(dict(items))``, one object per entries (in their order): the same
    few parameter attributes (``noundef``, ``nonnull``, ``align 8`` ...) repeat on every
    call and declaration, and building one checks each entry."""
    return DictionaryAttr(dict(items))


def _parse_fn_attr_items(cur: _Cursor, stop: Callable[[Token], bool]) -> list[Attribute]:
    """Function attributes (inline or in an attribute group) -> passthrough entries."""
    items: list[Attribute] = []
    while not cur.at_end() and not stop(cur.peek()):
        kind, text, start = cur.next()
        if kind == "s":
            key = _string_literal(text)
            value = ""
            if cur.accept("="):
                value = _string_literal(cur.next()[1])
            items.append(ArrayAttr([StringAttr(key), StringAttr(value)]))
        elif kind == "w":
            if cur.text() == "(":
                inner = cur.balanced_text()
                items.append(StringAttr(f"{text}({inner})"))
            elif text in ("alignstack", "allocsize") and cur.text() == "=":
                cur.next()
                items.append(StringAttr(f"{text}({cur.expect_int()})"))
            else:
                items.append(StringAttr(text))
        else:
            raise _ParseFailure(f"unexpected '{text}' in function attributes")
    return items


_FN_SUFFIX_WORDS = frozenset(
    ["section", "comdat", "align", "gc", "prefix", "prologue", "personality", "partition",
     "unnamed_addr", "local_unnamed_addr", "addrspace"]
)


def _ends_inline_fn_attrs(tok: Token) -> bool:
    return tok[1] == "{" or tok[0] in ("a", "m") or tok[1] in _FN_SUFFIX_WORDS
