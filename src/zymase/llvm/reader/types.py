"""LLVM type syntax -> xDSL types (part of :mod:`zymase.llvm.reader`): integers,
floats, pointers with address spaces, arrays, vectors, literal, packed and named
structs (named ones resolved lazily from their definitions)."""

from __future__ import annotations

import functools
import re

from zymase.ir import (ArrayAttr, Attribute, IntegerType, StringAttr, UnitAttr, builtin, fast_ops,
                       llvm, llvm_ext)
from zymase.llvm.reader.lexer import Token, _Cursor, _ParseFailure, _unescape


_FLOAT_TYPES: dict[str, Attribute] = {
    "half": builtin.Float16Type(),
    "bfloat": builtin.BFloat16Type(),
    "float": builtin.Float32Type(),
    "double": builtin.Float64Type(),
    "x86_fp80": builtin.Float80Type(),
    "fp128": builtin.Float128Type(),
}
_PTR = llvm.LLVMPointerType()
_VOID = llvm.LLVMVoidType()
_I32 = IntegerType(32)
_I64 = IntegerType(64)
_INT_TYPE_RE = re.compile(r"i(\d+)")
_int_types: dict[str, IntegerType] = {}

_FLOAT_CLASSES = tuple(type(t) for t in _FLOAT_TYPES.values())


# (the shared attributes of zymase.ir.fast_ops: the reader builds alignments, orderings,
# predicates, flags, small constants and GEP indices op after op, and building one
# anew was about a tenth of its time)
int_attr = fast_ops.int_attr
_raw_indices = fast_ops.raw_indices

#: symbol references by name, shared the same way: every call and every reference to a
#: global carries one, and building one (a StringAttr and an empty ArrayAttr, verified)
#: cost as much as the rest of the call's properties
_SYMBOL_REFS: dict[str, builtin.SymbolRefAttr] = {}


def symbol_ref(name: str) -> builtin.SymbolRefAttr:
    """``SymbolRefAttr(name)``, one object per name (bounded: cleared when large)."""
    ref = _SYMBOL_REFS.get(name)
    if ref is None:
        if len(_SYMBOL_REFS) >= 8192:
            _SYMBOL_REFS.clear()
        ref = _SYMBOL_REFS[name] = builtin.SymbolRefAttr(name)
    return ref


_UNIT = UnitAttr()


@functools.lru_cache(maxsize=4096)
def _function_type(params: tuple[Attribute, ...], result: Attribute, variadic: bool) -> llvm.LLVMFunctionType:
    """``LLVMFunctionType(params, result, variadic)``, one object per signature: every
    function header and every variadic call (``printf``) builds one."""
    return llvm.LLVMFunctionType(list(params), result, variadic)


def function_type(params, result: Attribute, variadic: bool) -> llvm.LLVMFunctionType:
    return _function_type(tuple(params), result, bool(variadic))


def _is_float_type(t: Attribute) -> bool:
    return isinstance(t, _FLOAT_CLASSES)


class _Types:
    """Parses LLVM types; resolves named struct types lazily from their definitions."""

    def __init__(self, named_defs: dict[str, tuple[str, list[Token]]]):
        self.named_defs = named_defs
        self.named: dict[str, Attribute] = {}
        self.in_progress: set[str] = set()

    def parse(self, cur: _Cursor) -> Attribute:
        kind, text, _ = cur.next()
        if kind == "w":
            ty = self._word_type(cur, text)
        elif kind == "l":
            ty = self.named_type(text[1:])
        elif text == "[":
            count = cur.expect_int()
            cur.expect("x")
            elem = self.parse(cur)
            cur.expect("]")
            ty = llvm.LLVMArrayType(count, elem)
        elif text == "{":
            ty = llvm.LLVMStructType.from_type_list(self._fields(cur, "}"))
        elif text == "<":
            if cur.accept("{"):
                fields = self._fields(cur, "}")
                cur.expect(">")
                ty = llvm_ext.LLVMPackedStructType.from_type_list(fields)
            else:
                if cur.text() == "vscale":
                    raise _ParseFailure("scalable vectors are not supported")
                count = cur.expect_int()
                cur.expect("x")
                elem = self.parse(cur)
                cur.expect(">")
                ty = builtin.VectorType(elem, [count])
        else:
            raise _ParseFailure(f"expected a type, found '{text}'")
        if cur.text() == "*":
            raise _ParseFailure("typed pointers are not supported (LLVM should have upgraded them)")
        return ty

    def _word_type(self, cur: _Cursor, text: str) -> Attribute:
        ty = _int_types.get(text)
        if ty is not None:
            return ty
        if (m := _INT_TYPE_RE.fullmatch(text)) is not None:
            ty = _int_types[text] = IntegerType(int(m.group(1)))
            return ty
        if text in _FLOAT_TYPES:
            return _FLOAT_TYPES[text]
        if text == "ptr":
            if cur.text() == "addrspace":
                cur.next()
                cur.expect("(")
                space = cur.expect_int()
                cur.expect(")")
                return llvm.LLVMPointerType(builtin.IntAttr(space)) if space else _PTR
            return _PTR
        if text == "void":
            return _VOID
        raise _ParseFailure(f"type '{text}' is not supported")

    def _fields(self, cur: _Cursor, close: str) -> list[Attribute]:
        fields: list[Attribute] = []
        if cur.accept(close):
            return fields
        while True:
            fields.append(self.parse(cur))
            if cur.accept(close):
                return fields
            cur.expect(",")

    def named_type(self, raw_name: str) -> Attribute:
        """The struct type ``%raw_name`` (raw_name as written, quotes included)."""
        ty = self.named.get(raw_name)
        if ty is not None:
            return ty
        if raw_name not in self.named_defs:
            raise _ParseFailure(f"unknown type %{raw_name}")
        if raw_name in self.in_progress:
            raise _ParseFailure(f"recursive type %{raw_name} is not supported")
        self.in_progress.add(raw_name)
        line, toks = self.named_defs[raw_name]
        cur = _Cursor(line, toks)
        name = _unescape(raw_name[1:-1]) if raw_name.startswith('"') else raw_name
        if cur.accept("opaque"):
            ty = llvm.LLVMStructType(StringAttr(name), ArrayAttr([]))
        elif cur.accept("<"):
            cur.expect("{")
            ty = llvm_ext.LLVMPackedStructType.from_type_list(self._fields(cur, "}"), name)
        else:
            cur.expect("{")
            ty = llvm.LLVMStructType(StringAttr(name), ArrayAttr(self._fields(cur, "}")))
        self.in_progress.discard(raw_name)
        self.named[raw_name] = ty
        return ty


def _element_type(ty: Attribute, index: int) -> Attribute:
    """The type at ``index`` inside an aggregate (extractvalue/GEP walking)."""
    if isinstance(ty, llvm.LLVMArrayType):
        return ty.type
    if isinstance(ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType)):
        return ty.types.data[index]
    if isinstance(ty, builtin.VectorType):
        return ty.element_type
    raise _ParseFailure(f"cannot index into {ty}")
