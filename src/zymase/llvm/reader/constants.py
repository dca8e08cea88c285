"""Constant operands -> hashable tuples (part of :mod:`zymase.llvm.reader`): numbers
(LLVM's hex floats decoded exactly, x86_fp80/fp128 kept as :class:`WideFloat`),
``null``/``undef``/``poison``, aggregates, vectors, strings and constant
expressions. Turning them into ops is :mod:`.function_reader`'s job."""

from __future__ import annotations

import struct

from zymase.ir import Attribute, IntegerType
from zymase.llvm.reader.lexer import _Cursor, _ParseFailure, _string_literal, _symbol_name
from zymase.llvm.reader.types import _is_float_type, _Types


# Constants are first parsed into hashable tuples so that one materialisation can
# be reused within a block (the tuple is the cache key; floats are kept as bit
# patterns so that 0.0 and -0.0, or NaNs, never collide).

Const = tuple


class WideFloat(float):
    """An x86_fp80 or fp128 constant that no double holds: the nearest double, for
    anything that computes with it, and its exact LLVM literal, which the writer
    prints back (clang folds ``x / 3.0L`` into a multiplication by such a constant)."""

    __slots__ = ("llvm_literal",)

    def __new__(cls, nearest: float, literal: str):
        value = super().__new__(cls, nearest)
        value.llvm_literal = literal
        return value


def _decode_float(text: str, ty: Attribute) -> float:
    """LLVM's printed float constant -> the exact Python float value."""
    if text.startswith(("0x", "-0x", "+0x")) and len(text) > 2 and text[2] not in "KLMHR":
        bits = int(text, 16)
        return struct.unpack("<d", struct.pack("<Q", bits))[0]
    if text.startswith("0xH"):
        return struct.unpack("<e", struct.pack("<H", int(text[3:], 16)))[0]
    if text.startswith("0xR"):
        return struct.unpack("<f", struct.pack("<I", int(text[3:], 16) << 16))[0]
    if text.startswith("0xK"):
        return _decode_fp80(text[3:], text)
    if text.startswith("0xL"):
        return _decode_fp128(text[3:], text)
    if text.startswith("0xM"):
        raise _ParseFailure("ppc_fp128 constants are not supported")
    return float(text)


def _exact_float(sign: int, exponent: int, mantissa: int, frac_bits: int, bias: int, implicit: bool,
                 literal: str) -> float:
    """Value of an IEEE-like float: a float when a double holds it exactly, else a
    WideFloat keeping ``literal``."""
    from fractions import Fraction

    if exponent == 0:
        value = Fraction(mantissa, 1 << frac_bits) * Fraction(2) ** (1 - bias)
    else:
        lead = (1 << frac_bits) if implicit else 0
        value = Fraction(mantissa + lead, 1 << frac_bits) * Fraction(2) ** (exponent - bias)
    try:
        nearest = float(value)
        exact = Fraction(nearest) == value
    except OverflowError:  # beyond a double's range: only the literal stands for it
        nearest, exact = float("inf"), False
    nearest = -nearest if sign else nearest
    return nearest if exact else WideFloat(nearest, literal)


def _decode_fp80(hexdigits: str, literal: str) -> float:
    high = int(hexdigits[:4], 16)
    mantissa = int(hexdigits[4:], 16)
    sign, exponent = high >> 15, high & 0x7FFF
    if exponent == 0x7FFF:
        return float("-inf" if sign else "inf") if (mantissa << 1) & ((1 << 64) - 1) == 0 else float("nan")
    return _exact_float(sign, exponent, mantissa, 63, 16383, False, literal)


def _decode_fp128(hexdigits: str, literal: str) -> float:
    low, high = int(hexdigits[:16], 16), int(hexdigits[16:], 16)
    bits = (high << 64) | low
    sign, exponent, mantissa = bits >> 127, (bits >> 112) & 0x7FFF, bits & ((1 << 112) - 1)
    if exponent == 0x7FFF:
        return float("-inf" if sign else "inf") if mantissa == 0 else float("nan")
    return _exact_float(sign, exponent, mantissa, 112, 16383, True, literal)


def _float_bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def _bits_float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


_CAST_OPS = frozenset(
    ["trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp",
     "ptrtoint", "inttoptr", "bitcast", "addrspacecast"]
)
_INT_BINOPS = frozenset(
    ["add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and", "or", "xor"]
)
_BINOP_FLAGS = frozenset(["nuw", "nsw", "exact", "disjoint"])
_GEP_FLAGS = frozenset(["inbounds", "nusw", "nuw"])
_FMF_WORDS = frozenset(["fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"])


def _parse_const(cur: _Cursor, ty: Attribute, types: _Types) -> Const:
    """Parse the constant (or local/global reference) that follows its type."""
    kind, text, _ = cur.next()
    if kind == "l":
        return ("local", text, ty)
    if kind == "g":
        return ("global", _symbol_name(text), ty)
    if kind in ("n", "h"):
        return _number_const(text, ty)
    if kind == "s":
        if not text.startswith("c"):
            raise _ParseFailure(f"unexpected string {text}")
        data = _string_literal(text)
        return ("cstr", ty, data)
    if kind == "m":
        return ("meta", text)
    if kind == "w":
        return _word_const(cur, text, ty, types)
    if text == "<":
        if cur.accept("{"):
            elems = _const_list(cur, "}", types)
            cur.expect(">")
            return ("agg", ty, elems)
        elems = _const_list(cur, ">", types)
        return ("vec", ty, elems)
    if text == "[":
        return ("agg", ty, _const_list(cur, "]", types))
    if text == "{":
        return ("agg", ty, _const_list(cur, "}", types))
    raise _ParseFailure(f"unexpected '{text}' where a value was expected")


def _number_const(text: str, ty: Attribute) -> Const:
    if isinstance(ty, IntegerType):
        if text.startswith(("s0x", "u0x")):
            value = int(text[1:], 16)
            if text[0] == "s" and value >= 1 << (ty.width.data - 1):
                value -= 1 << ty.width.data
            return ("int", ty, value)
        return ("int", ty, int(text, 16) if text.startswith("0x") else int(text))
    if _is_float_type(ty):
        value = _decode_float(text, ty)
        if isinstance(value, WideFloat):  # the literal is part of the key: two may share a double
            return ("float", ty, _float_bits(value), value.llvm_literal)
        return ("float", ty, _float_bits(value))
    raise _ParseFailure(f"number {text} for non-numeric type")


def _word_const(cur: _Cursor, word: str, ty: Attribute, types: _Types) -> Const:
    if word in ("true", "false"):
        return ("int", ty, 1 if word == "true" else 0)
    if word in ("null", "zeroinitializer"):
        return ("zero", ty)
    if word == "undef":
        return ("undef", ty)
    if word == "poison":
        return ("poison", ty)
    if word == "splat":
        cur.expect("(")
        elem_ty = types.parse(cur)
        elem = _parse_const(cur, elem_ty, types)
        cur.expect(")")
        return ("splat", ty, elem)
    if word == "getelementptr":
        return _gep_const(cur, types)
    if word in _CAST_OPS:
        cur.expect("(")
        src_ty = types.parse(cur)
        src = _parse_const(cur, src_ty, types)
        cur.expect("to")
        dst_ty = types.parse(cur)
        cur.expect(")")
        return ("cast", word, src, dst_ty)
    if word in _INT_BINOPS:
        flags = []
        while cur.text() in _BINOP_FLAGS:
            flags.append(cur.next()[1])
        cur.expect("(")
        lhs_ty = types.parse(cur)
        lhs = _parse_const(cur, lhs_ty, types)
        cur.expect(",")
        rhs_ty = types.parse(cur)
        rhs = _parse_const(cur, rhs_ty, types)
        cur.expect(")")
        return ("bin", word, tuple(sorted(flags)), lhs, rhs)
    if word == "blockaddress":
        raise _ParseFailure("'blockaddress' constants (a label's address, '&&label', of GNU C's computed goto) "
                            "are not supported")
    if word in ("dso_local_equivalent", "no_cfi", "asm"):
        raise _ParseFailure(f"'{word}' constants are not supported")
    raise _ParseFailure(f"unsupported constant '{word}'")


def _gep_const(cur: _Cursor, types: _Types) -> Const:
    flags = []
    while cur.text() in _GEP_FLAGS or cur.text() == "inrange":
        if cur.next()[1] == "inrange":  # inrange(a, b): a hint for vtable loads
            cur.balanced_text()
        else:
            flags.append(cur.toks[cur.i - 1][1])
    cur.expect("(")
    elem_ty = types.parse(cur)
    cur.expect(",")
    base_ty = types.parse(cur)
    base = _parse_const(cur, base_ty, types)
    indices = []
    while cur.accept(","):
        if cur.text() == "inrange":
            cur.next()
            cur.balanced_text()
        idx_ty = types.parse(cur)
        indices.append(_parse_const(cur, idx_ty, types))
    cur.expect(")")
    return ("gep", tuple(flags), elem_ty, base, tuple(indices))


def _const_list(cur: _Cursor, close: str, types: _Types) -> tuple[Const, ...]:
    elems: list[Const] = []
    if cur.accept(close):
        return ()
    while True:
        ty = types.parse(cur)
        elems.append(_parse_const(cur, ty, types))
        if cur.accept(close):
            return tuple(elems)
        cur.expect(",")


def _const_type(c: Const) -> Attribute:
    """The LLVM type of a parsed constant."""
    tag = c[0]
    if tag in ("int", "float", "zero", "undef", "poison", "agg", "vec", "splat", "cstr"):
        return c[1]
    if tag in ("local", "global"):
        return c[2]
    if tag == "cast":
        return c[3]
    if tag == "bin":
        return _const_type(c[3])
    if tag == "gep":
        return _const_type(c[3])
    raise _ParseFailure(f"no type for constant {tag}")
