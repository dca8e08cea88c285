"""How LLVM IR spells names, strings, numbers and instruction flags, for the modules of
the LLVM IR writer (:mod:`zymase.llvm.writer`), and the writer's internal error."""

from __future__ import annotations

import re
import struct

from zymase.ir import Attribute, IntegerAttr, IntegerType, Operation, builtin

WRITER_BUG_HINT = "this is a bug in the pass that produced the module; print it with zymase.ir.print_mlir to inspect it"


class WriteError(Exception):
    """Internal: turned into a ZymaseError naming the op and the function."""


# ----------------------------------------------------------------- names


#: a name LLVM's identifier syntax allows unquoted (when it does not start with a digit)
_IDENTIFIER = re.compile(r"[-$._A-Za-z0-9]+")

#: each byte as an LLVM string literal spells it: printable ASCII as is, the rest as ``\\XX``
#: (a table: the writer spells every name and string, byte by byte in a loop before)
_BYTE_TEXT = tuple(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02X}" for b in range(256))


def quote_bytes(data: bytes) -> str:
    """LLVM string-literal body: printable ASCII as is, the rest as ``\\XX``."""
    return "".join(map(_BYTE_TEXT.__getitem__, data))


def encode_text(text: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def symbol_text(prefix: str, name: str) -> str:
    """``@name`` / ``%name``, quoted when LLVM's identifier syntax does not allow it.

    An all-digit global name is LLVM's numbered global (``@0``, clang's unnamed
    strings and OpenMP's ident structs): it stays unquoted, because ``@"0"`` is a
    different, named global to which the ``@0`` in initializers kept as text would
    not refer."""
    if _IDENTIFIER.fullmatch(name) and not name[0].isdigit():
        return prefix + name
    if prefix == "@" and name.isascii() and name.isdigit():
        return prefix + name
    return f'{prefix}"{quote_bytes(encode_text(name))}"'


def metadata_string(text: str) -> str:
    return f'!"{quote_bytes(encode_text(text))}"'


def string_text(text: str) -> str:
    return f'"{quote_bytes(encode_text(text))}"'


# ---------------------------------------------------------------- floats


def _double_hex(value: float) -> str:
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


def _round_bf16(value: float) -> float:
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:  # NaN: keep it quiet
        return struct.unpack("<f", struct.pack("<I", (bits | 0x400000) & 0xFFFF0000))[0]
    bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest, ties to even
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFF0000))[0]


def _fp80_hex(value: float) -> str:
    """x86_fp80 literal (``0xK`` + sign/exponent + 64-bit mantissa) of a double."""
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    sign = bits >> 63
    exponent = (bits >> 52) & 0x7FF
    fraction = bits & ((1 << 52) - 1)
    if exponent == 0x7FF:
        ext_exp, mantissa = 0x7FFF, (1 << 63) | (fraction << 11)
    elif exponent == 0 and fraction == 0:
        ext_exp, mantissa = 0, 0
    elif exponent == 0:  # subnormal double: normalise
        shift = 52 - fraction.bit_length() + 1
        ext_exp = 1 - 1023 - shift + 16383
        mantissa = (fraction << (11 + shift)) & ((1 << 64) - 1)
        mantissa |= 1 << 63
    else:
        ext_exp, mantissa = exponent - 1023 + 16383, (1 << 63) | (fraction << 11)
    return "0xK%04X%016X" % ((sign << 15) | ext_exp, mantissa)


def _fp128_hex(value: float) -> str:
    """fp128 literal (``0xL`` + low 64 bits + high 64 bits) of a double."""
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    sign = bits >> 63
    exponent = (bits >> 52) & 0x7FF
    fraction = bits & ((1 << 52) - 1)
    if exponent == 0x7FF:
        q_exp = 0x7FFF
    elif exponent == 0 and fraction == 0:
        q_exp = 0
    elif exponent == 0:
        shift = 52 - fraction.bit_length() + 1
        q_exp = 1 - 1023 - shift + 16383
        fraction = (fraction << shift) & ((1 << 52) - 1)
    else:
        q_exp = exponent - 1023 + 16383
    q_bits = (sign << 127) | (q_exp << 112) | (fraction << 60)
    return "0xL%016X%016X" % (q_bits & ((1 << 64) - 1), q_bits >> 64)


def float_literal(value: float, ty: Attribute) -> str:
    """An exact LLVM float literal of type ``ty`` for the Python float ``value`` (an
    x86_fp80/fp128 constant the reader could not hold in a double carries its literal)."""
    literal = getattr(value, "llvm_literal", None)
    if literal is not None and isinstance(ty, (builtin.Float80Type, builtin.Float128Type)):
        return literal
    if isinstance(ty, builtin.Float64Type):
        return _double_hex(value)
    if isinstance(ty, builtin.Float32Type):
        return _double_hex(struct.unpack("<f", struct.pack("<f", value))[0])
    if isinstance(ty, builtin.Float16Type):
        return _double_hex(struct.unpack("<e", struct.pack("<e", value))[0])
    if isinstance(ty, builtin.BFloat16Type):
        return _double_hex(_round_bf16(value))
    if isinstance(ty, builtin.Float80Type):
        return _fp80_hex(value)
    if isinstance(ty, builtin.Float128Type):
        return _fp128_hex(value)
    raise WriteError(f"no LLVM float literal for type {ty}")


def int_literal(value: int, ty: Attribute) -> str:
    if isinstance(ty, IntegerType) and ty.width.data == 1:
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------- helpers


def prop_or_attr(op: Operation, name: str) -> Attribute | None:
    """A property, or the same name as a discardable attribute (MLIR text re-parsing
    puts some properties into the attribute dictionary)."""
    value = op.properties.get(name)
    if value is None:
        value = op.attributes.get(name)
    return value


_FMF_ORDER = ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn")


def fastmath_text(op: Operation) -> str:
    """`` fast`` / `` nnan ninf`` / ``""`` from the fastmathFlags property."""
    attr = prop_or_attr(op, "fastmathFlags")
    if attr is None or not getattr(attr, "data", None):
        return ""
    flags = {str(f.value) if hasattr(f, "value") else str(f) for f in attr.data}
    if all(f in flags for f in _FMF_ORDER):
        return " fast"
    return "".join(f" {f}" for f in _FMF_ORDER if f in flags)


def overflow_text(bits: int) -> str:
    return ("" if not bits & 2 else " nuw") + ("" if not bits & 1 else " nsw")


def int_value(attr: Attribute | None, default: int = 0) -> int:
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    return default
