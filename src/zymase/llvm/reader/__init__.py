"""LLVM IR text -> xDSL module in the (extended) ``llvm`` dialect.

:func:`read_llvm_ir` first lets LLVM itself parse and verify the text
(``llvmlite.binding.parse_assembly`` + ``verify``; this also upgrades old IR such as
clang 14's typed pointers), prints the module once, and then reads that canonical
text with a line-oriented parser of its own. llvmlite's binding API hides
predicates, flags, GEP types, alignment and switch cases, so the printed text is
the only complete source; printing once (never ``str()`` per instruction) keeps
the reader linear in the size of the module.

Representation (a contract: the AD engine, the MLIR lowering and the writer
depend on it)
=============================================================================

Types
    ``iN`` -> ``IntegerType(N)``; ``half``/``bfloat``/``float``/``double`` ->
    ``f16``/``bf16``/``f32``/``f64`` (``x86_fp80``/``fp128`` -> ``f80``/``f128``);
    ``ptr`` -> ``!llvm.ptr`` (``ptr addrspace(N)`` -> ``!llvm.ptr<N>``);
    ``[N x T]`` -> ``!llvm.array<N x T>``; ``{...}`` -> ``!llvm.struct<(...)>``;
    named ``%struct.X`` -> ``!llvm.struct<"struct.X", (...)>`` (an opaque struct has
    an empty body); packed ``<{...}>`` -> ``!llvm.packed_struct<(...)>`` (see
    :mod:`zymase.ir.llvm_ext`; xDSL's struct has no packed flag); ``<N x T>`` ->
    ``vector<NxT>``; ``void`` -> ``!llvm.void`` (function results only).

Functions
    ``llvm.func`` with the exact symbol name, ``function_type``, ``linkage``,
    ``CConv``, ``visibility_``, ``unnamed_addr``; declarations have an empty region.
    Function attributes (attribute groups and inline ones) -> ``passthrough``:
    ``StringAttr`` for flags, verbatim LLVM text for attributes with arguments
    (``"memory(argmem: read)"``, ``"uwtable(sync)"``), and
    ``ArrayAttr[StringAttr key, StringAttr value]`` for string attributes
    (``"target-cpu"="x86-64"``; a string attribute without value has value ``""``).
    ``dso_local`` -> unit attribute ``dso_local``; ``section`` -> string attribute.
    Parameter attributes -> ``arg_attrs`` (ArrayAttr of DictionaryAttr), result
    attributes -> ``res_attrs``, keys ``llvm.<name>``: UnitAttr for flags
    (``llvm.noalias``, ``llvm.noundef``, ``llvm.signext``, ``llvm.nocapture`` for
    ``captures(none)``, ...), IntegerAttr(i64) for ``llvm.align``,
    ``llvm.dereferenceable``, ``llvm.dereferenceable_or_null``, ``llvm.alignstack``,
    the pointee type for ``llvm.sret``/``llvm.byval``/``llvm.byref``/
    ``llvm.inalloca``/``llvm.preallocated``/``llvm.elementtype``. Pure optimisation
    hints with arguments (``range(...)``, ``nofpclass(...)``, ``initializes(...)``,
    ``captures(...)`` other than ``none``) are dropped: dropping them only makes
    the program more defined.

Blocks and phis
    The entry block's arguments are the function arguments. Every ``phi`` becomes
    an argument of its block; each predecessor passes the incoming values as
    successor operands of its ``llvm.br`` / ``llvm.cond_br`` / ``llvm.switch``,
    per edge (a block listed twice as successor of one terminator gets operands
    on both edges).

Constants
    Constant operands are materialised as ops right before their use, in the
    user's block (for phi incoming values: before the predecessor's terminator);
    one materialisation is reused within a block. Integers/floats ->
    ``llvm.mlir.constant`` (IntegerAttr/FloatAttr of the exact type; LLVM's hex
    floats are decoded exactly); ``null``/``zeroinitializer`` -> ``llvm.mlir.zero``
    (scalars and vectors get a zero ``llvm.mlir.constant``); ``undef`` ->
    ``llvm.mlir.undef``; ``poison`` -> ``llvm.mlir.poison``; ``@g`` ->
    ``llvm.mlir.addressof``; vectors of numbers -> a dense ``llvm.mlir.constant``
    (otherwise a ``llvm.insertelement`` chain); structs/arrays -> ``llvm.mlir.undef``
    + ``llvm.insertvalue`` chain; constant expressions (getelementptr, casts,
    arithmetic) -> the equivalent instruction ops.

Instructions
    xDSL ``llvm`` ops (plus :mod:`zymase.ir.llvm_ext`; ``llvm.icmp``, ``llvm.fcmp``,
    ``llvm.select``, ``llvm.load``, ``llvm.store`` are built as llvm_ext's
    subclasses of xDSL's ops, which also accept pointer compares, vector
    compares/selects and volatile loads) keeping what changes
    semantics: ``overflowFlags`` (nsw=1, nuw=2), ``isExact``, ``isDisjoint``,
    ``nonNeg``, ``fastmathFlags`` (phi fast-math flags are dropped), predicates,
    alloca element type / count / alignment, load/store type / alignment /
    ``volatile_`` / atomic ``ordering`` (syncscope dropped, i.e. widened to
    system scope), GEP element type / raw constant indices / ``inbounds`` and
    ``noWrapFlags`` (MLIR encoding: inbounds=3, nusw=2, nuw=4; constant indices
    that do not fit i32 become SSA operands), calls (``callee`` symbol or, for an
    indirect call, the callee pointer as first operand; ``var_callee_type`` only
    for variadic callees; ``CConv``; ``TailCallKind``; call-site parameter and
    result attributes as discardable ``arg_attrs`` / ``res_attrs`` attributes).
    Call-site function attributes (``#N`` on calls) are dropped, and so are
    ``samesign`` on icmp, fast-math flags on casts and phis, TLS models, comdats,
    function alignment and ``personality`` (only EH instructions use it).

Intrinsics
    Calls to ``@llvm.*`` -> ``llvm.call_intrinsic "llvm.sin.f64"(...)`` with the
    full mangled name and fast-math flags. Intrinsic declarations are not kept
    (the writer re-declares what it sees used). ``llvm.dbg.*`` and ``llvm.assume``
    calls are dropped (debug info and pure hints);
    ``llvm.experimental.noalias.scope.decl`` is kept with its scope as attribute
    ``zymase.scope_decl`` (:mod:`zymase.llvm.noalias_scopes`).

Metadata
    ``!dbg`` -> ``op.location = FileLineColLoc(DIFile filename, line, column)``
    (locations with line 0 are left unknown); ``!tbaa`` -> attribute
    ``zymase.tbaa`` = the access type's name (``"double"``, ``"int"``,
    ``"any pointer"``); ``!llvm.loop`` on a branch -> attribute ``zymase.loop_hints``
    (the optimization hints among its entries, see :mod:`zymase.llvm.loop_hints`);
    ``!alias.scope`` / ``!noalias`` on loads and stores -> ``zymase.src_alias_scope`` /
    ``zymase.src_noalias`` (the scopes an inlined ``restrict`` parameter left, see
    :mod:`zymase.llvm.noalias_scopes`). Debug records (``#dbg_value``...) and all other
    metadata are dropped.

Globals
    ``llvm.mlir.global`` (sym_name, global_type, linkage, constant, alignment,
    unnamed_addr, thread_local_, addr_space, dso_local, section, visibility_).
    Scalar int/float initialisers -> ``value``; ``c"..."`` -> StringAttr ``value``
    (bytes as latin-1 characters); any other initialiser is kept verbatim as the
    StringAttr attribute ``zymase.llvm_init`` (LLVM text). External globals have
    neither. ``externally_initialized`` -> unit attribute of that name.

Module
    ``target triple`` / ``target datalayout`` -> module attributes
    ``llvm.target_triple`` / ``llvm.data_layout`` (StringAttr).

Names
    Function and global names are kept exactly (quoted names unescaped, bytes as
    latin-1 characters). SSA value and block names are not kept.

Not supported (clear ZymaseError): exception handling (invoke, landingpad,
resume, ...), indirectbr/callbr/blockaddress, inline assembly, global aliases and
ifuncs, scalable vectors, operand bundles other than on ``llvm.assume``,
``module asm``, prefix/prologue data, vector GEPs.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from zymase.errors import ZymaseError
from zymase.ir import (
    ArrayAttr,
    Attribute,
    Block,
    DenseArrayBase,
    DictionaryAttr,
    FileLineColLoc,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Operation,
    Region,
    SSAValue,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    builtin,
    llvm,
    llvm_ext,
)
from zymase.llvm.loop_hints import LOOP_HINT_TYPES, LOOP_HINTS_ATTR, hint_name
from zymase.llvm.noalias_scopes import DECL_INTRINSIC, SRC_ALIAS_SCOPE, SRC_NOALIAS, scope_decl, scope_name

__all__ = ["read_llvm_ir"]

_HINT_UNSUPPORTED = (
    "zymase reads the LLVM IR that clang emits for plain C/C++ without exceptions; "
    "rewrite or outline the construct, or compile that part separately"
)

# ------------------------------------------------------------------ tokenizer

_TOKEN_RE = re.compile(
    r"""[ \t]*(?:
      (?P<s>c?"[^"]*")
     |(?P<l>%(?:"[^"]*"|[-\w$.]+))
     |(?P<g>@(?:"[^"]*"|[-\w$.]+))
     |(?P<m>!(?:"[^"]*"|[-\w$.\\]+))
     |(?P<a>\#[\w]+)
     |(?P<h>[su]?0x[KLMHR]?[0-9A-Fa-f]+)
     |(?P<n>[-+]?\d+(?:\.\d+(?:[eE][-+]?\d+)?)?)
     |(?P<p>\.\.\.|[=,()\[\]{}<>*!|:])
     |(?P<w>[A-Za-z_$.][-\w$.]*)
     |(?P<c>;.*)
    )""",
    re.X,
)

Token = tuple[str, str, int]  # (kind, text, start offset in the line)
_EOL: Token = ("eol", "", -1)


class _ParseFailure(Exception):
    """Internal: the line does not have the expected shape (becomes a ZymaseError)."""


def _tokenize(line: str) -> list[Token]:
    """Split one line into tokens (comments dropped); unknown characters fail."""
    tokens: list[Token] = []
    pos = 0
    end = len(line)
    match = _TOKEN_RE.match
    while pos < end:
        m = match(line, pos)
        if m is None or m.end() == pos:
            if line[pos:].strip() == "":
                break
            raise _ParseFailure(f"unexpected character {line[pos]!r}")
        kind = m.lastgroup
        pos = m.end()
        if kind == "c":
            break
        tokens.append((kind, m.group(kind), m.start(kind)))
    return tokens


class _Cursor:
    """A position in the token list of one (logical) line."""

    __slots__ = ("toks", "i", "line")

    def __init__(self, line: str, toks: list[Token] | None = None):
        self.line = line
        self.toks = _tokenize(line) if toks is None else toks
        self.i = 0

    def peek(self, ahead: int = 0) -> Token:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else _EOL

    def text(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.toks[j][1] if j < len(self.toks) else ""

    def next(self) -> Token:
        if self.i >= len(self.toks):
            raise _ParseFailure("unexpected end of line")
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept(self, text: str) -> bool:
        if self.i < len(self.toks) and self.toks[self.i][1] == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> None:
        if not self.accept(text):
            raise _ParseFailure(f"expected '{text}' but found '{self.text() or 'end of line'}'")

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def expect_int(self) -> int:
        kind, text, _ = self.next()
        if kind != "n" or not _INT_RE.fullmatch(text):
            raise _ParseFailure(f"expected an integer, found '{text}'")
        return int(text)

    def balanced_text(self) -> str:
        """Consume a parenthesised group ``( ... )`` and return its inner text verbatim."""
        start_tok = self.next()
        if start_tok[1] != "(":
            raise _ParseFailure("expected '('")
        depth = 1
        while True:
            tok = self.next()
            if tok[1] == "(":
                depth += 1
            elif tok[1] == ")":
                depth -= 1
                if depth == 0:
                    return self.line[start_tok[2] + 1 : tok[2]]


_INT_RE = re.compile(r"[-+]?\d+")


_ESCAPE_RE = re.compile(r"\\([0-9A-Fa-f]{2})|\\\\")


def _unescape(text: str) -> str:
    """Decode LLVM's ``\\XX`` (and ``\\\\``) escapes; bytes become latin-1 characters."""
    if "\\" not in text:
        return text
    return _ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else "\\", text)


def _symbol_name(token_text: str) -> str:
    """``@foo`` / ``@"foo bar"`` -> the symbol name."""
    body = token_text[1:]
    if body.startswith('"'):
        return _unescape(body[1:-1])
    return body


def _string_literal(token_text: str) -> str:
    """``"abc"`` or ``c"abc\\00"`` -> decoded text."""
    start = token_text.index('"')
    return _unescape(token_text[start + 1 : -1])


# ---------------------------------------------------------------------- types

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
_I1 = IntegerType(1)
_I32 = IntegerType(32)
_I64 = IntegerType(64)
_INT_TYPE_RE = re.compile(r"i(\d+)")
_int_types: dict[str, IntegerType] = {}

_FLOAT_CLASSES = tuple(type(t) for t in _FLOAT_TYPES.values())

_TYPE_WORDS = frozenset(
    ["half", "bfloat", "float", "double", "x86_fp80", "fp128", "ppc_fp128", "ptr", "void",
     "label", "metadata", "token", "x86_amx", "target", "opaque"]
)


def _is_int_type(t: Attribute) -> bool:
    return isinstance(t, IntegerType)


def _is_float_type(t: Attribute) -> bool:
    return isinstance(t, _FLOAT_CLASSES)


def _starts_type(tok: Token) -> bool:
    kind, text, _ = tok
    if kind == "w":
        return text in _TYPE_WORDS or _INT_TYPE_RE.fullmatch(text) is not None
    return kind == "l" or text in ("[", "<", "{")


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


# ------------------------------------------------------------ constants (AST)
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
_FLOAT_BINOPS = frozenset(["fadd", "fsub", "fmul", "fdiv", "frem"])
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
    if word in ("blockaddress", "dso_local_equivalent", "no_cfi", "asm"):
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


# ------------------------------------------------------------------ metadata


_DILOCATION_RE = re.compile(r"!\d+ = !DILocation\(line: (\d+)(?:, column: (\d+))?, scope: (!\d+)")


class _Metadata:
    """Lazily parsed module metadata: DILocations -> locations, TBAA tags -> names."""

    def __init__(self, lines: dict[str, str], filename: str):
        self.lines = lines
        self.filename = filename
        self.nodes: dict[str, tuple] = {}
        self.locations: dict[str, Attribute | None] = {}
        self.tbaa: dict[str, str | None] = {}
        self.scope_files: dict[str | None, str | None] = {}
        self.file_attrs: dict[str, StringAttr] = {}

    def node(self, ref: str) -> tuple:
        """``('di', kind, fields)`` or ``('tuple', elems)`` for ``!N``; ``('none',)`` if unknown."""
        cached = self.nodes.get(ref)
        if cached is not None:
            return cached
        line = self.lines.get(ref)
        result: tuple = ("none",)
        if line is not None:
            try:
                result = self._parse_node(line)
            except _ParseFailure:
                result = ("none",)
        self.nodes[ref] = result
        return result

    @staticmethod
    def _parse_node(line: str) -> tuple:
        cur = _Cursor(line)
        cur.next()  # !N
        cur.expect("=")
        cur.accept("distinct")
        kind, text, _ = cur.next()
        if kind == "m" and text.startswith("!DI"):
            return ("di", text[1:], _Metadata._fields(cur))
        if text == "!":
            cur.expect("{")
            elems = []
            while not cur.at_end() and cur.text() != "}":
                tok = cur.next()
                if tok[1] == ",":
                    continue
                if tok[0] == "w" and not cur.at_end() and cur.text() not in (",", "}"):
                    tok = cur.next()  # typed constant: keep the value
                elems.append(tok[1])
            return ("tuple", elems)
        return ("none",)

    @staticmethod
    def _fields(cur: _Cursor) -> dict[str, str]:
        fields: dict[str, str] = {}
        cur.expect("(")
        while not cur.at_end() and cur.text() != ")":
            key = cur.next()[1]
            cur.expect(":")
            value = cur.next()[1]
            fields[key] = value
            depth = 0
            while not cur.at_end():  # skip the rest of a compound field value
                t = cur.text()
                if depth == 0 and t in (",", ")"):
                    break
                depth += t == "("
                depth -= t == ")"
                cur.next()
            cur.accept(",")
        return fields

    def location(self, ref: str) -> Attribute | None:
        """FileLineColLoc for a ``!DILocation`` reference (None for line 0 / unknown)."""
        if ref in self.locations:
            return self.locations[ref]
        loc = None
        raw = self.lines.get(ref, "")
        fast = _DILOCATION_RE.match(raw)  # the common shape, without a full tokenization
        if fast is not None:
            line, column, scope = int(fast.group(1)), int(fast.group(2) or 0), fast.group(3)
        else:
            node = self.node(ref)
            line = column = 0
            scope = None
            if node[0] == "di" and node[1] == "DILocation":
                fields = node[2]
                line = int(fields.get("line", "0"))
                column = int(fields.get("column", "0"))
                scope = fields.get("scope")
        if line > 0:
            file = self._file_of(scope) or self.filename
            name = self.file_attrs.get(file)
            if name is None:
                name = self.file_attrs[file] = StringAttr(file)
            loc = FileLineColLoc(name, builtin.IntAttr(line), builtin.IntAttr(column))
        self.locations[ref] = loc
        return loc

    def _file_of(self, scope: str | None) -> str | None:
        if scope in self.scope_files:
            return self.scope_files[scope]
        file = self._find_file(scope)
        self.scope_files[scope] = file
        return file

    def _find_file(self, scope: str | None) -> str | None:
        for _ in range(64):  # scope chains are short; the bound guards against cycles
            if scope is None:
                return None
            node = self.node(scope)
            if node[0] != "di":
                return None
            if node[1] == "DIFile":
                name = node[2].get("filename")
                return _string_literal(name) if name else None
            scope = node[2].get("file") or node[2].get("scope")
        return None

    def loop_hints(self, ref: str) -> tuple[str, ...]:
        """The optimization hints of an ``!llvm.loop`` node (``#pragma clang loop``,
        ``#pragma unroll``) that LLVM's loop passes read, as ``name`` or ``name=value``."""
        hints = []
        loop = self.node(ref)
        for elem in loop[1][1:] if loop[0] == "tuple" else ():
            entry = self.node(elem)
            if entry[0] != "tuple" or not entry[1] or not entry[1][0].startswith('!"'):
                continue
            name = hint_name(_string_literal(entry[1][0][1:]))
            if name not in LOOP_HINT_TYPES:
                continue  # followups, loop ids of other passes, debug locations
            value = entry[1][1] if len(entry[1]) > 1 else None
            if (LOOP_HINT_TYPES[name] is None) != (value is None):
                continue
            if value is not None:
                if value in ("true", "false"):
                    value = "1" if value == "true" else "0"
                if not value.lstrip("-").isdigit():
                    continue
            hints.append(name if value is None else f"{name}={value}")
        return tuple(hints)

    def tbaa_name(self, ref: str) -> str | None:
        """The access type name of a TBAA access tag (struct-path or scalar form)."""
        if ref in self.tbaa:
            return self.tbaa[ref]
        name = None
        tag = self.node(ref)
        if tag[0] == "tuple" and tag[1]:
            first = tag[1][0]
            if first.startswith('!"'):
                name = _string_literal(first[1:])  # old scalar tag: !{!"int", !parent}
            elif len(tag[1]) >= 2:
                name = self._type_name(tag[1][1])
        self.tbaa[ref] = name
        return name

    def scope_names(self, ref: str, function: str) -> list[str] | None:
        """The scopes of a scoped-noalias list ``!{!scope, ...}``, each named
        ``"<function>.<domain ref>|<scope ref>"`` (zymase.llvm.noalias_scopes): the
        refs are unique in the module, the function name keeps them apart when modules
        are joined. None if a node is not a scope."""
        node = self.node(ref)
        if node[0] != "tuple":
            return None
        names = []
        for scope_ref in node[1]:
            scope = self.node(scope_ref)
            if scope[0] != "tuple" or len(scope[1]) < 2 or not scope[1][1].startswith("!"):
                return None
            names.append(scope_name(f"{function}.{scope[1][1][1:]}", scope_ref[1:]))
        return names

    def _type_name(self, ref: str) -> str | None:
        node = self.node(ref)
        if node[0] != "tuple":
            return None
        for elem in node[1]:
            if elem.startswith('!"'):
                return _string_literal(elem[1:])
        return None


# ------------------------------------------------------------- attributes

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
            attrs["llvm." + word] = UnitAttr()
        elif word == "align":
            if cur.accept("("):
                attrs["llvm.align"] = IntegerAttr(cur.expect_int(), _I64)
                cur.expect(")")
            else:
                attrs["llvm.align"] = IntegerAttr(cur.expect_int(), _I64)
        elif word in _PARAM_INT:
            cur.expect("(")
            attrs["llvm." + word] = IntegerAttr(cur.expect_int(), _I64)
            cur.expect(")")
        elif word in _PARAM_TYPE:
            cur.expect("(")
            attrs["llvm." + word] = types.parse(cur)
            cur.expect(")")
        elif word == "captures":
            if cur.balanced_text().strip() == "none":
                attrs["llvm.nocapture"] = UnitAttr()
        else:  # pure hints with arguments: dropped (see module docstring)
            if cur.text() == "(":
                cur.balanced_text()
    return attrs


def _attr_dict_array(per_param: list[dict[str, Attribute]]) -> ArrayAttr | None:
    if not any(per_param):
        return None
    return ArrayAttr([DictionaryAttr(d) for d in per_param])


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


# ---------------------------------------------------------------- the reader


_INTRINSIC_DECL_RE = re.compile(r'declare [^@"]*@"?llvm\.')


def read_llvm_ir(text: str, filename: str = "<input>") -> ModuleOp:
    """Read LLVM IR text into an xDSL ``builtin.module`` of ``llvm`` dialect ops.

    The representation is described in this module's docstring. Malformed IR or
    an unsupported construct raises :class:`~zymase.errors.ZymaseError`.
    """
    canonical = _canonicalize(text, filename)
    return _ModuleReader(canonical, filename).read()


def _canonicalize(text: str, filename: str) -> str:
    """Parse + verify with LLVM itself, and print the module once."""
    import llvmlite.binding as binding

    try:
        # A fresh context: in the global one LLVM would rename a struct type that an
        # earlier module already defined (%struct.S -> %struct.S.0).
        module = binding.parse_assembly(text, binding.create_context())
        module.verify()
    except RuntimeError as exc:
        message = " ".join(str(exc).split()) or "LLVM rejected the module"
        raise ZymaseError(
            f"malformed LLVM IR: {message}",
            location=filename,
            hint="check the .ll text (llvm-as/opt -verify report the same problem); "
            "IR from a clang newer than LLVM 22 may not be readable",
        ) from None
    return str(module)


@dataclass
class _Pending:
    """A terminator, built once all phis (block arguments) of its successors are known."""

    kind: str
    block_label: str
    operands: list[Const] = field(default_factory=list)
    dests: list[str] = field(default_factory=list)
    case_values: list[int] = field(default_factory=list)
    location: Attribute | None = None
    line: str = ""
    loop_hints: tuple[str, ...] = ()


class _ModuleReader:
    """Reads the canonical module text produced by LLVM's printer."""

    def __init__(self, text: str, filename: str):
        self.filename = filename
        self.lines = text.split("\n")
        self.module_attrs: dict[str, Attribute] = {}
        self.ops: list[Operation] = []
        named_defs: dict[str, tuple[str, list[Token]]] = {}
        self.attr_groups: dict[str, tuple[str, list[Token]]] = {}
        md_lines: dict[str, str] = {}
        self.global_spaces: dict[str, int] = {}
        self._prescan(named_defs, md_lines)
        self.types = _Types(named_defs)
        self.metadata = _Metadata(md_lines, filename)
        self.group_cache: dict[str, list[Attribute]] = {}

    def _prescan(self, named_defs: dict, md_lines: dict) -> None:
        """Index type definitions, attribute groups and metadata (they are used before
        they are defined in the text) and the address space of every global."""
        for index, line in enumerate(self.lines):
            if not line or line[0] in " ;}\t":
                continue
            first = line[0]
            try:
                if first == "%":
                    toks = _tokenize(line)
                    if len(toks) >= 3 and toks[1][1] == "=" and toks[2][1] == "type":
                        named_defs[toks[0][1][1:]] = (line, toks[3:])
                elif first == "!":
                    ref = line.split(" ", 1)[0]
                    md_lines[ref] = line
                elif line.startswith("attributes #"):
                    toks = _tokenize(line)
                    self.attr_groups[toks[1][1]] = (line, toks)
                elif first == "@" and " addrspace(" in line:
                    m = re.match(r'(@(?:"[^"]*"|[-\w$.]+)) = [^"]*? addrspace\((\d+)\)', line)
                    if m:
                        self.global_spaces[_symbol_name(m.group(1))] = int(m.group(2))
            except _ParseFailure as exc:
                raise self._error(str(exc), line, index) from None

    # -- errors

    def _error(self, message: str, line: str, index: int, function: str | None = None,
               location: str | None = None, hint: str | None = None) -> ZymaseError:
        return ZymaseError(
            message,
            construct=line.strip()[:200],
            function=function,
            location=location or f"{self.filename} (LLVM IR line {index + 1})",
            hint=hint or _HINT_UNSUPPORTED,
        )

    # -- module level

    def read(self) -> ModuleOp:
        lines = self.lines
        index = 0
        count = len(lines)
        while index < count:
            line = lines[index]
            if not line or line[0] in " \t;":
                index += 1
                continue
            try:
                if line.startswith("define "):
                    index = self._read_function(index)
                    continue
                self._read_top_line(line)
            except _ParseFailure as exc:
                raise self._error(f"cannot read LLVM IR: {exc}", line, index) from None
            index += 1
        module = ModuleOp(self.ops)
        for key, value in self.module_attrs.items():
            module.attributes[key] = value
        return module

    def _read_top_line(self, line: str) -> None:
        if line.startswith("declare "):
            if _INTRINSIC_DECL_RE.match(line):  # re-declared by the writer from its uses
                return
            op = self._read_header(_Cursor(line))[0]
            if op is not None:
                self.ops.append(op)
        elif line.startswith("@"):
            self._read_global(line)
        elif line.startswith("target "):
            cur = _Cursor(line)
            cur.next()
            what = cur.next()[1]
            cur.expect("=")
            value = StringAttr(_string_literal(cur.next()[1]))
            if what == "triple":
                self.module_attrs["llvm.target_triple"] = value
            elif what == "datalayout":
                self.module_attrs["llvm.data_layout"] = value
        elif line.startswith("module asm"):
            raise _ParseFailure("module-level inline assembly is not supported")
        # source_filename, type definitions, attribute groups, metadata, comdats,
        # uselistorder directives: indexed by the prescan or not needed.

    # -- globals

    def _read_global(self, line: str) -> None:
        cur = _Cursor(line)
        name = _symbol_name(cur.next()[1])
        cur.expect("=")
        props: dict[str, Attribute] = {}
        attrs: dict[str, Attribute] = {}
        linkage, addr_space = self._global_prefix(cur, props, attrs)
        global_type = self.types.parse(cur)
        if not cur.at_end() and cur.text() != ",":
            start = cur.peek()[2]
            init = _parse_const(cur, global_type, self.types)
            end = cur.peek()[2] if not cur.at_end() else len(line)
            value = self._global_value(init, global_type)
            if value is not None:
                props["value"] = value
            else:
                attrs["zymase.llvm_init"] = StringAttr(line[start:end].strip())
        self._global_tail(cur, props, attrs)
        props |= {
            "global_type": global_type,
            "sym_name": StringAttr(name),
            "linkage": llvm.LinkageAttr(linkage),
            "addr_space": IntegerAttr(addr_space, _I32),
        }
        self.ops.append(llvm.GlobalOp.create(properties=props, attributes=attrs, regions=[Region()]))

    @staticmethod
    def _global_prefix(cur: _Cursor, props: dict, attrs: dict) -> tuple[str, int]:
        """The words before the type, up to ``global``/``constant``: (linkage, addr space)."""
        linkage, addr_space = "external", 0
        while True:
            word = cur.next()[1]
            if word in _LINKAGES:
                linkage = word
            elif word == "dso_local":
                props["dso_local"] = UnitAttr()
            elif word in _VISIBILITY:
                if _VISIBILITY[word]:
                    props["visibility_"] = IntegerAttr(_VISIBILITY[word], _I64)
            elif word == "thread_local":  # the TLS model is an optimisation hint
                props["thread_local_"] = UnitAttr()
                if cur.text() == "(":
                    cur.balanced_text()
            elif word in ("unnamed_addr", "local_unnamed_addr"):
                props["unnamed_addr"] = IntegerAttr(2 if word == "unnamed_addr" else 1, _I64)
            elif word == "addrspace":
                cur.expect("(")
                addr_space = cur.expect_int()
                cur.expect(")")
            elif word == "externally_initialized":
                attrs["externally_initialized"] = UnitAttr()
            elif word in ("global", "constant"):
                if word == "constant":
                    props["constant"] = UnitAttr()
                return linkage, addr_space
            elif word in ("alias", "ifunc"):
                raise _ParseFailure(f"global {'aliases' if word == 'alias' else 'ifuncs'} are not supported")
            elif word not in _PREEMPTION and word not in _DLL:
                raise _ParseFailure(f"unexpected '{word}' in a global definition")

    @staticmethod
    def _global_value(init: Const, ty: Attribute) -> Attribute | None:
        """Scalar and string initialisers as attributes; None -> keep the LLVM text."""
        tag = init[0]
        if tag == "int":
            return IntegerAttr(init[2], ty)
        if tag == "float" and not isinstance(ty, (builtin.Float80Type, builtin.Float128Type)):
            return FloatAttr(_bits_float(init[2]), ty)  # (xDSL cannot print f80/f128 floats)
        if tag == "cstr":
            return StringAttr(init[2])
        return None

    def _global_tail(self, cur: _Cursor, props: dict, attrs: dict) -> None:
        while cur.accept(","):
            word = cur.next()[1]
            if word == "align":
                props["alignment"] = IntegerAttr(cur.expect_int(), _I64)
            elif word == "section":
                props["section"] = StringAttr(_string_literal(cur.next()[1]))
            elif word == "comdat":
                if cur.text() == "(":
                    cur.balanced_text()
            elif word in ("partition", "code_model"):
                cur.next()
            elif word.startswith("!"):
                cur.next()  # metadata attachment
            elif word in ("no_sanitize_address", "no_sanitize_hwaddress", "sanitize_memtag",
                          "sanitize_address_dyninit"):
                pass
            else:
                raise _ParseFailure(f"unexpected '{word}' after a global")

    # -- functions

    def _read_header(self, cur: _Cursor):
        """Parse a define/declare line up to ``{``.

        Returns (the llvm.func op, or None for an ``llvm.*`` name; the argument
        names; the implicit label of the entry block, i.e. the number LLVM gives
        it after the unnamed arguments)."""
        cur.next()  # define / declare
        props: dict[str, Attribute] = {"visibility_": IntegerAttr(0, _I64)}
        attrs: dict[str, Attribute] = {}
        linkage, cconv = self._function_prefix(cur, props, attrs)
        res_attrs = _parse_param_attrs(cur, self.types)
        result_type = self.types.parse(cur)
        name = _symbol_name(cur.next()[1])
        arg_types, arg_names, arg_attrs, variadic = self._function_params(cur)
        passthrough = self._function_suffix(cur, props, attrs)
        entry_label = str(sum(1 for n in arg_names if n is None or n[1:].isdigit()))
        if name.startswith("llvm."):
            return None, arg_names, entry_label
        props |= {
            "sym_name": StringAttr(name),
            "function_type": llvm.LLVMFunctionType(arg_types, result_type, variadic),
            "CConv": llvm.CallingConventionAttr(cconv),
            "linkage": llvm.LinkageAttr(linkage),
        }
        if passthrough:
            props["passthrough"] = ArrayAttr(passthrough)
        if (a := _attr_dict_array(arg_attrs)) is not None:
            props["arg_attrs"] = a
        if res_attrs:
            props["res_attrs"] = ArrayAttr([DictionaryAttr(res_attrs)])
        op = llvm.FuncOp.create(properties=props, attributes=attrs, regions=[Region()])
        return op, arg_names, entry_label

    @staticmethod
    def _function_prefix(cur: _Cursor, props: dict, attrs: dict) -> tuple[str, str]:
        """Linkage, preemption, visibility, calling convention: (linkage, cconv)."""
        linkage, cconv = "external", "ccc"
        while True:
            word = cur.text()
            if word in _LINKAGES:
                linkage = word
            elif word == "dso_local":
                attrs["dso_local"] = UnitAttr()
            elif word in _VISIBILITY:
                props["visibility_"] = IntegerAttr(_VISIBILITY[word], _I64)
            elif word in _CCONVS:
                cconv = word
            elif word == "cc":
                cur.next()
                cconv = f"cc {cur.expect_int()}"
                continue
            elif cur.peek()[0] == "m":  # declare !dbg !N ...
                cur.next()
            elif word not in _PREEMPTION and word not in _DLL:
                return linkage, cconv
            cur.next()

    def _function_params(self, cur: _Cursor):
        """``(T attrs %name, ..., ...)``: types, names, attribute dicts, variadic."""
        cur.expect("(")
        types: list[Attribute] = []
        names: list[str | None] = []
        attrs: list[dict[str, Attribute]] = []
        variadic = False
        while not cur.accept(")"):
            if cur.accept("..."):
                variadic = True
            elif not cur.accept(","):
                types.append(self.types.parse(cur))
                attrs.append(_parse_param_attrs(cur, self.types))
                names.append(cur.next()[1] if cur.peek()[0] == "l" else None)
        return types, names, attrs, variadic

    def _function_suffix(self, cur: _Cursor, props: dict, attrs: dict) -> list[Attribute]:
        """Everything after the parameters up to ``{``; returns the passthrough list."""
        passthrough: list[Attribute] = []
        while not cur.at_end() and cur.text() != "{":
            kind, word, _ = cur.peek()
            if word in ("unnamed_addr", "local_unnamed_addr"):
                cur.next()
                props["unnamed_addr"] = IntegerAttr(2 if word == "unnamed_addr" else 1, _I64)
            elif kind == "a":
                cur.next()
                passthrough += self._attr_group(word)
            elif word == "section":
                cur.next()
                attrs["section"] = StringAttr(_string_literal(cur.next()[1]))
            elif word in ("align", "partition"):  # function alignment: not semantic
                cur.next()
                cur.next()
            elif word in ("comdat", "addrspace"):
                cur.next()
                if cur.text() == "(":
                    cur.balanced_text()
            elif word == "personality":  # only used by EH instructions, which are rejected
                cur.next()
                self.types.parse(cur)
                _parse_const(cur, _PTR, self.types)
            elif word in ("prefix", "prologue", "gc"):
                raise _ParseFailure(f"functions with '{word}' are not supported")
            elif kind == "m":  # !dbg !N
                cur.next()
                cur.next()
            else:  # inline function attributes
                passthrough += _parse_fn_attr_items(cur, _ends_inline_fn_attrs)
        return passthrough

    def _attr_group(self, ref: str) -> list[Attribute]:
        cached = self.group_cache.get(ref)
        if cached is not None:
            return cached
        if ref not in self.attr_groups:
            raise _ParseFailure(f"unknown attribute group {ref}")
        line, toks = self.attr_groups[ref]
        cur = _Cursor(line, toks)
        cur.next()  # attributes
        cur.next()  # #N
        cur.expect("=")
        cur.expect("{")
        items = _parse_fn_attr_items(cur, lambda t: t[1] == "}")
        self.group_cache[ref] = items
        return items

    def _read_function(self, index: int) -> int:
        """Read ``define ... { ... }`` starting at line ``index``; returns the next line."""
        line = self.lines[index]
        op, arg_names, entry_label = self._read_header(_Cursor(line))
        end = index + 1
        while end < len(self.lines) and self.lines[end] != "}":
            end += 1
        if op is None:  # a definition of an llvm.* name: not ours to keep
            return end + 1
        body = _FunctionReader(self, op, arg_names, entry_label, index)
        body.read(self.lines, index + 1, end)
        self.ops.append(op)
        return end + 1


# --------------------------------------------------------- function bodies

_ICMP_PREDICATES = {p.value: p.to_int() for p in llvm.ICmpPredicateFlag}
_FCMP_PREDICATES = {p.value.lstrip("_"): p.to_int() for p in llvm.FCmpPredicateFlag}
_fmf_cache: dict[frozenset, Attribute] = {}


def _fast_math(words: list[str]) -> Attribute:
    key = frozenset(words)
    attr = _fmf_cache.get(key)
    if attr is None:
        if "fast" in key:
            attr = llvm.FastMathAttr("fast")
        else:
            attr = llvm.FastMathAttr(tuple(sorted(key)) if key else None)
        _fmf_cache[key] = attr
    return attr


def _parse_fmf(cur: _Cursor) -> Attribute:
    words = []
    while cur.text() in _FMF_WORDS:
        words.append(cur.next()[1])
    return _fast_math(words)


_INT_BINOP_CLASSES = {
    "add": llvm.AddOp, "sub": llvm.SubOp, "mul": llvm.MulOp, "shl": llvm.ShlOp,
    "udiv": llvm.UDivOp, "sdiv": llvm.SDivOp, "lshr": llvm.LShrOp, "ashr": llvm.AShrOp,
    "urem": llvm.URemOp, "srem": llvm.SRemOp, "and": llvm.AndOp, "xor": llvm.XOrOp,
    "or": llvm.OrOp,
}
_OVERFLOW_OPS = frozenset(["add", "sub", "mul", "shl"])
_EXACT_OPS = frozenset(["udiv", "sdiv", "lshr", "ashr"])
_FLOAT_BINOP_CLASSES = {
    "fadd": llvm.FAddOp, "fsub": llvm.FSubOp, "fmul": llvm.FMulOp, "fdiv": llvm.FDivOp,
    "frem": llvm.FRemOp,
}
_SIMPLE_CASTS = {
    "sext": llvm.SExtOp, "fptrunc": llvm.FPTruncOp, "fpext": llvm.FPExtOp,
    "sitofp": llvm.SIToFPOp, "fptosi": llvm_ext.FPToSIOp, "fptoui": llvm_ext.FPToUIOp,
    "ptrtoint": llvm.PtrToIntOp, "inttoptr": llvm.IntToPtrOp, "bitcast": llvm.BitcastOp,
    "addrspacecast": llvm_ext.AddrSpaceCastOp,
}
_UNSUPPORTED_INSTRUCTIONS = {
    "invoke": "exception handling (invoke) is not supported",
    "landingpad": "exception handling (landingpad) is not supported",
    "resume": "exception handling (resume) is not supported",
    "catchswitch": "exception handling (catchswitch) is not supported",
    "catchpad": "exception handling (catchpad) is not supported",
    "cleanuppad": "exception handling (cleanuppad) is not supported",
    "catchret": "exception handling (catchret) is not supported",
    "cleanupret": "exception handling (cleanupret) is not supported",
    "indirectbr": "indirect branches (indirectbr) are not supported",
    "callbr": "callbr (asm goto) is not supported",
}
_DROPPED_INTRINSICS = ("llvm.dbg.", "llvm.assume",
                       "llvm.pseudoprobe")
_TAIL_KINDS = {"tail": llvm.TailCallKind.TAIL, "musttail": llvm.TailCallKind.MUST_TAIL,
               "notail": llvm.TailCallKind.NOTAIL}
_ORDERINGS = llvm_ext.ATOMIC_ORDERING_BY_NAME


class _FunctionReader:
    """Builds the body of one ``llvm.func`` from its lines."""

    def __init__(self, module: _ModuleReader, func: Operation, arg_names: list[str | None],
                 entry_label: str, header_index: int):
        self.module = module
        self.types = module.types
        self.metadata = module.metadata
        self.func = func
        self.name = func.properties["sym_name"].data
        self.arg_names = arg_names
        self.entry_label = entry_label
        self.header_index = header_index
        self.values: dict[str, SSAValue] = {}
        self.placeholders: dict[str, Operation] = {}
        self.blocks: dict[str, Block] = {}
        self.block_order: list[str] = []
        self.block: Block | None = None
        self.label = ""
        self.const_cache: dict[int, dict[Const, SSAValue]] = {}
        self.phis: dict[str, list[list[tuple[Const, str]]]] = {}  # label -> incoming per phi
        self.pending: list[_Pending] = []
        self.has_terminator: set[str] = set()
        self.pending_labels: set[str] = set()
        self.cur_line: tuple[str, int, Attribute | None] = ("", header_index, None)

    # -- driving

    def read(self, lines: list[str], start: int, end: int) -> None:
        region = self.func.regions[0]
        fn_type = self.func.properties["function_type"]
        entry = self._start_block(self._entry_label(lines, start, end))
        for arg_type, name in zip(fn_type.inputs.data, self.arg_names):
            arg = entry.insert_arg(arg_type, len(entry.args))
            if name is not None:
                self.values[name] = arg
        index = start
        while index < end:
            line = lines[index]
            index += 1
            stripped = line.strip()
            if not stripped or stripped[0] in ";#":
                continue
            if line[0] not in " \t":
                label = self._label_of(line, index - 1)
                if label != self.label or self.block.ops.first is not None or label in self.pending_labels:
                    self._start_block(label)
                self.pending_labels.add(label)
                continue
            first_index = index - 1
            if stripped.startswith("switch ") and stripped.endswith("["):
                while index < end:  # the cases follow on their own lines, up to "]"
                    case_line = lines[index].strip()
                    index += 1
                    stripped += " " + case_line
                    if case_line.startswith("]"):
                        break
            self._instruction(stripped, first_index)
        self._finish()
        for label in self.block_order:
            region.add_block(self.blocks[label])

    def _entry_label(self, lines: list[str], start: int, end: int) -> str:
        for index in range(start, end):
            line = lines[index]
            if not line.strip() or line.strip().startswith(";"):
                continue
            if line[0] not in " \t":
                return self._label_of(line, index)
            break
        return self.entry_label

    def _label_of(self, line: str, index: int) -> str:
        toks = _tokenize(line)
        if len(toks) < 2 or toks[1][1] != ":":
            raise self.module._error("cannot read block label", line, index, self.name)
        return toks[0][1]

    def _block(self, label: str) -> Block:
        block = self.blocks.get(label)
        if block is None:
            block = self.blocks[label] = Block()
        return block

    def _start_block(self, label: str) -> Block:
        self.block = self._block(label)
        self.label = label
        self.block_order.append(label)
        return self.block

    def _error(self, message: str, line: str, index: int, loc: Attribute | None = None,
               hint: str | None = None) -> ZymaseError:
        location = None
        if isinstance(loc, FileLineColLoc):
            location = f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        return self.module._error(message, line, index, self.name, location, hint)

    # -- one instruction

    def _instruction(self, text: str, index: int) -> None:
        try:
            toks = _tokenize(text)
        except _ParseFailure as exc:
            raise self._error(f"cannot read instruction: {exc}", text, index) from None
        attachments: dict[str, str] = {}
        while len(toks) >= 3 and toks[-3][1] == "," and toks[-2][0] == "m" and toks[-1][0] == "m":
            attachments[toks[-2][1]] = toks[-1][1]
            del toks[-3:]
        loc = self.metadata.location(attachments["!dbg"]) if "!dbg" in attachments else None
        cur = _Cursor(text, toks)
        result_name = None
        if len(toks) >= 2 and toks[0][0] == "l" and toks[1][1] == "=":
            result_name = toks[0][1]
            cur.i = 2
        opcode = cur.text()
        if opcode in _UNSUPPORTED_INSTRUCTIONS:
            raise self._error(_UNSUPPORTED_INSTRUCTIONS[opcode], text, index, loc)
        handler = _HANDLERS.get(opcode)
        if handler is None:
            if opcode in _TAIL_KINDS:
                handler = _FunctionReader._call
            else:
                raise self._error(f"unsupported LLVM instruction '{opcode}'", text, index, loc)
        self.cur_line = (text, index, loc)
        self.cur_attachments = attachments
        try:
            if handler is not _FunctionReader._call:
                cur.next()
            result = handler(self, cur, loc)
            if not cur.at_end():
                raise _ParseFailure(f"unexpected '{cur.text()}'")
        except _ParseFailure as exc:
            raise self._error(f"cannot read instruction: {exc}", text, index, loc) from None
        if isinstance(result, Operation):
            self._append(result, loc)
            if "!tbaa" in attachments:
                name = self.metadata.tbaa_name(attachments["!tbaa"])
                if name is not None:
                    result.attributes["zymase.tbaa"] = StringAttr(name)
            if isinstance(result, (llvm.LoadOp, llvm.StoreOp)):
                for key, attr in (("!alias.scope", SRC_ALIAS_SCOPE), ("!noalias", SRC_NOALIAS)):
                    names = self.metadata.scope_names(attachments[key], self.name) if key in attachments else None
                    if names:
                        result.attributes[attr] = ArrayAttr([StringAttr(n) for n in names])
            value = result.results[0] if result.results else None
        else:
            value = result
        if result_name is not None:
            if value is None:
                raise self._error("instruction has no result", text, index, loc)
            self._define(result_name, value)

    def _append(self, op: Operation, loc: Attribute | None = None) -> Operation:
        if loc is not None:
            op.location = loc
        self.block.add_op(op)
        return op

    def _define(self, name: str, value: SSAValue) -> None:
        self.values[name] = value
        placeholder = self.placeholders.pop(name, None)
        if placeholder is not None:
            placeholder.results[0].replace_all_uses_with(value)
            placeholder.erase()

    # -- operands

    def _value(self, cur: _Cursor, ty: Attribute) -> SSAValue:
        """Parse a value of a known type and return it as an SSA value in this block."""
        return self._materialize(_parse_const(cur, ty, self.types))

    def _typed_value(self, cur: _Cursor) -> SSAValue:
        ty = self.types.parse(cur)
        return self._value(cur, ty)

    def _lookup(self, name: str, ty: Attribute) -> SSAValue:
        value = self.values.get(name)
        if value is not None:
            return value
        placeholder = self.placeholders.get(name)
        if placeholder is None:  # forward reference: a stand-in replaced at the definition
            placeholder = self.placeholders[name] = llvm.UndefOp(ty)
        return placeholder.results[0]

    def _materialize(self, c: Const) -> SSAValue:
        tag = c[0]
        if tag == "local":
            return self._lookup(c[1], c[2])
        if tag == "meta":
            raise _ParseFailure("metadata operands are only supported on dropped intrinsics")
        cache = self.const_cache.setdefault(id(self.block), {})
        value = cache.get(c)
        if value is None:
            value = self._build_const(c)
            cache[c] = value
        return value

    def _emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def _build_const(self, c: Const) -> SSAValue:
        tag = c[0]
        if tag == "int":
            return self._emit(llvm.ConstantOp(IntegerAttr(c[2], c[1]), c[1]))
        if tag == "float":
            value = _bits_float(c[2]) if len(c) == 3 else WideFloat(_bits_float(c[2]), c[3])
            return self._emit(llvm.ConstantOp(FloatAttr(value, c[1]), c[1]))
        if tag == "zero":
            return self._emit(_zero_op(c[1]))
        if tag == "undef":
            return self._emit(llvm.UndefOp(c[1]))
        if tag == "poison":
            return self._emit(llvm_ext.PoisonOp(c[1]))
        if tag == "global":
            space = self.module.global_spaces.get(c[1], 0)
            ptr = llvm.LLVMPointerType(builtin.IntAttr(space)) if space else _PTR
            return self._emit(llvm.AddressOfOp(SymbolRefAttr(c[1]), ptr))
        if tag in ("vec", "splat"):
            return self._build_vector(c)
        if tag == "agg":
            return self._build_aggregate(c[1], c[2])
        if tag == "cstr":
            elems = tuple(("int", _element_type(c[1], 0), b) for b in c[2].encode("latin-1"))
            return self._build_aggregate(c[1], elems)
        if tag == "cast":
            return self._emit(_cast_op(c[1], self._materialize(c[2]), c[3], False))
        if tag == "bin":
            lhs, rhs = self._materialize(c[3]), self._materialize(c[4])
            return self._emit(_int_binop(c[1], set(c[2]), lhs, rhs))
        if tag == "gep":
            return self._emit(self._gep(c[1], c[2], self._materialize(c[3]), list(c[4])))
        raise _ParseFailure(f"unsupported constant {tag}")

    def _build_vector(self, c: Const) -> SSAValue:
        ty = c[1]
        count = ty.get_shape()[0]
        elems = list(c[2]) if c[0] == "vec" else [c[2]] * count
        if all(e[0] in ("int", "float") for e in elems):
            values = [e[2] if e[0] == "int" else _bits_float(e[2]) for e in elems]
            dense = builtin.DenseIntOrFPElementsAttr.from_list(ty, values)
            return self._emit(llvm.ConstantOp(dense, ty))
        vector = self._emit(llvm_ext.PoisonOp(ty))
        for lane, elem in enumerate(elems):
            if elem[0] == "poison":
                continue
            index = self._materialize(("int", _I32, lane))
            vector = self._emit(llvm.InsertElementOp(vector, self._materialize(elem), index))
        return vector

    def _build_aggregate(self, ty: Attribute, elems: tuple) -> SSAValue:
        value = self._emit(llvm.UndefOp(ty))
        for position, elem in enumerate(elems):
            if elem[0] == "undef":
                continue
            member = self._materialize(elem)
            value = self._emit(
                llvm.InsertValueOp(DenseArrayBase.from_list(_I64, [position]), value, member)
            )
        return value

    def _gep(self, flags, elem_type: Attribute, base: SSAValue, indices: list[Const]) -> Operation:
        raw: list[int] = []
        dynamic: list[SSAValue] = []
        for idx in indices:
            if isinstance(_const_type(idx), builtin.VectorType):
                raise _ParseFailure("vector getelementptr is not supported")
            if idx[0] == "int" and -(2**31) < idx[2] < 2**31:
                raw.append(idx[2])
            else:
                raw.append(llvm.GEP_USE_SSA_VAL)
                dynamic.append(self._materialize(idx))
        if not isinstance(base.type, llvm.LLVMPointerType):
            raise _ParseFailure("vector getelementptr is not supported")
        op = llvm.GEPOp(base, raw, elem_type, dynamic, result_type=base.type,
                        inbounds="inbounds" in flags)
        bits = (3 if "inbounds" in flags else 0) | (2 if "nusw" in flags else 0) | (4 if "nuw" in flags else 0)
        op.properties["noWrapFlags"] = IntegerAttr(bits, _I32)
        return op

    # -- instruction handlers (cursor after the opcode)

    def _int_binop(self, cur: _Cursor, loc) -> Operation:
        opcode = cur.toks[cur.i - 1][1]
        flags = set()
        while cur.text() in _BINOP_FLAGS:
            flags.add(cur.next()[1])
        ty = self.types.parse(cur)
        lhs = self._value(cur, ty)
        cur.expect(",")
        rhs = self._value(cur, ty)
        return _int_binop(opcode, flags, lhs, rhs)

    def _float_binop(self, cur: _Cursor, loc) -> Operation:
        cls = _FLOAT_BINOP_CLASSES[cur.toks[cur.i - 1][1]]
        fmf = _parse_fmf(cur)
        ty = self.types.parse(cur)
        lhs = self._value(cur, ty)
        cur.expect(",")
        rhs = self._value(cur, ty)
        return cls.create(operands=[lhs, rhs], result_types=[ty], properties={"fastmathFlags": fmf})

    def _fneg(self, cur: _Cursor, loc) -> Operation:
        fmf = _parse_fmf(cur)
        arg = self._typed_value(cur)
        return llvm.FNegOp(arg, fmf)

    def _icmp(self, cur: _Cursor, loc) -> Operation:
        cur.accept("samesign")  # a poison-generating hint: dropping it is sound
        predicate = cur.next()[1]
        ty = self.types.parse(cur)
        lhs = self._value(cur, ty)
        cur.expect(",")
        rhs = self._value(cur, ty)
        return llvm_ext.ICmpOp(lhs, rhs, IntegerAttr(_ICMP_PREDICATES[predicate], _I64))

    def _fcmp(self, cur: _Cursor, loc) -> Operation:
        fmf = _parse_fmf(cur)
        predicate = cur.next()[1]
        ty = self.types.parse(cur)
        lhs = self._value(cur, ty)
        cur.expect(",")
        rhs = self._value(cur, ty)
        pred = IntegerAttr(_FCMP_PREDICATES[predicate], _I64)
        return llvm_ext.FCmpOp(lhs, rhs, pred, fast_math=fmf)

    def _cast(self, cur: _Cursor, loc) -> Operation:
        opcode = cur.toks[cur.i - 1][1]
        flags = set()
        while cur.text() in ("nuw", "nsw", "nneg") or cur.text() in _FMF_WORDS:
            flags.add(cur.next()[1])
        arg = self._typed_value(cur)
        cur.expect("to")
        result_type = self.types.parse(cur)
        return _cast_op(opcode, arg, result_type, flags)

    def _select(self, cur: _Cursor, loc) -> Operation:
        fmf = _parse_fmf(cur)
        cond = self._typed_value(cur)
        cur.expect(",")
        lhs = self._typed_value(cur)
        cur.expect(",")
        rhs = self._typed_value(cur)
        return llvm_ext.SelectOp.create(
            operands=[cond, lhs, rhs], result_types=[lhs.type], properties={"fastmathFlags": fmf}
        )

    def _alloca(self, cur: _Cursor, loc) -> Operation:
        if cur.accept("inalloca"):
            raise _ParseFailure("inalloca is not supported")
        elem_type = self.types.parse(cur)
        size = None
        props: dict[str, Attribute] = {"elem_type": elem_type}
        result_type: Attribute = _PTR
        while cur.accept(","):
            if cur.accept("align"):
                props["alignment"] = IntegerAttr(cur.expect_int(), _I64)
            elif cur.accept("addrspace"):
                cur.expect("(")
                space = cur.expect_int()
                cur.expect(")")
                result_type = llvm.LLVMPointerType(builtin.IntAttr(space)) if space else _PTR
            else:
                size = self._typed_value(cur)
        if size is None:
            size = self._materialize(("int", _I32, 1))
        return llvm.AllocaOp.create(operands=[size], result_types=[result_type], properties=props)

    def _atomic_tail(self, cur: _Cursor) -> None:
        if cur.text() == "syncscope":
            cur.next()
            cur.balanced_text()

    def _load(self, cur: _Cursor, loc) -> Operation:
        atomic = cur.accept("atomic")
        volatile = cur.accept("volatile")
        ty = self.types.parse(cur)
        cur.expect(",")
        ptr = self._typed_value(cur)
        ordering = 0
        if atomic:
            self._atomic_tail(cur)
            ordering = _ORDERINGS[cur.next()[1]]
        alignment = self._align_tail(cur)
        return llvm_ext.LoadOp(ptr, ty, alignment=alignment, ordering=ordering, volatile=volatile)

    def _align_tail(self, cur: _Cursor) -> int | None:
        alignment = None
        while cur.accept(","):
            cur.expect("align")
            alignment = cur.expect_int()
        return alignment

    def _store(self, cur: _Cursor, loc) -> Operation:
        atomic = cur.accept("atomic")
        volatile = cur.accept("volatile")
        value = self._typed_value(cur)
        cur.expect(",")
        ptr = self._typed_value(cur)
        ordering = 0
        if atomic:
            self._atomic_tail(cur)
            ordering = _ORDERINGS[cur.next()[1]]
        alignment = self._align_tail(cur)
        return llvm_ext.StoreOp(value, ptr, alignment=alignment, ordering=ordering, volatile=volatile)

    def _getelementptr(self, cur: _Cursor, loc) -> Operation:
        flags = []
        while cur.text() in _GEP_FLAGS:
            flags.append(cur.next()[1])
        elem_type = self.types.parse(cur)
        cur.expect(",")
        base = self._typed_value(cur)
        indices: list[Const] = []
        while cur.accept(","):
            ty = self.types.parse(cur)
            indices.append(_parse_const(cur, ty, self.types))
        return self._gep(tuple(flags), elem_type, base, indices)

    def _extractvalue(self, cur: _Cursor, loc) -> Operation:
        container = self._typed_value(cur)
        positions = []
        ty = container.type
        while cur.accept(","):
            positions.append(cur.expect_int())
            ty = _element_type(ty, positions[-1])
        return llvm.ExtractValueOp(DenseArrayBase.from_list(_I64, positions), container, ty)

    def _insertvalue(self, cur: _Cursor, loc) -> Operation:
        container = self._typed_value(cur)
        cur.expect(",")
        value = self._typed_value(cur)
        positions = []
        while cur.accept(","):
            positions.append(cur.expect_int())
        return llvm.InsertValueOp(DenseArrayBase.from_list(_I64, positions), container, value)

    def _extractelement(self, cur: _Cursor, loc) -> Operation:
        vector = self._typed_value(cur)
        cur.expect(",")
        index = self._typed_value(cur)
        return llvm_ext.ExtractElementOp(vector, index)

    def _insertelement(self, cur: _Cursor, loc) -> Operation:
        vector = self._typed_value(cur)
        cur.expect(",")
        value = self._typed_value(cur)
        cur.expect(",")
        index = self._typed_value(cur)
        return llvm.InsertElementOp(vector, value, index)

    def _shufflevector(self, cur: _Cursor, loc) -> Operation:
        v1 = self._typed_value(cur)
        cur.expect(",")
        v2 = self._typed_value(cur)
        cur.expect(",")
        mask_type = self.types.parse(cur)
        mask = _parse_const(cur, mask_type, self.types)
        count = mask_type.get_shape()[0]
        if mask[0] == "vec":
            lanes = [e[2] if e[0] == "int" else -1 for e in mask[2]]
        elif mask[0] == "splat":
            lanes = [mask[2][2] if mask[2][0] == "int" else -1] * count
        elif mask[0] == "zero":
            lanes = [0] * count
        else:
            lanes = [-1] * count
        result_type = builtin.VectorType(v1.type.element_type, [count])
        return llvm.ShuffleVectorOp(v1, v2, DenseArrayBase.from_list(_I32, lanes), result_type)

    def _freeze(self, cur: _Cursor, loc) -> Operation:
        return llvm_ext.FreezeOp(self._typed_value(cur))

    def _va_arg(self, cur: _Cursor, loc) -> Operation:
        va_list = self._typed_value(cur)
        cur.expect(",")
        return llvm_ext.VaArgOp(va_list, self.types.parse(cur))

    def _atomicrmw(self, cur: _Cursor, loc) -> Operation:
        volatile = cur.accept("volatile")
        bin_op = cur.next()[1]
        ptr = self._typed_value(cur)
        cur.expect(",")
        value = self._typed_value(cur)
        self._atomic_tail(cur)
        ordering = _ORDERINGS[cur.next()[1]]
        alignment = self._align_tail(cur)
        return llvm_ext.AtomicRMWOp(bin_op, ptr, value, ordering, alignment, volatile=volatile)

    def _cmpxchg(self, cur: _Cursor, loc) -> Operation:
        weak = cur.accept("weak")
        volatile = cur.accept("volatile")
        ptr = self._typed_value(cur)
        cur.expect(",")
        cmp = self._typed_value(cur)
        cur.expect(",")
        new = self._typed_value(cur)
        self._atomic_tail(cur)
        success = _ORDERINGS[cur.next()[1]]
        failure = _ORDERINGS[cur.next()[1]]
        alignment = self._align_tail(cur)
        return llvm_ext.AtomicCmpXchgOp(ptr, cmp, new, success, failure, alignment,
                                        weak=weak, volatile=volatile)

    def _fence(self, cur: _Cursor, loc) -> Operation:
        self._atomic_tail(cur)
        return llvm_ext.FenceOp(_ORDERINGS[cur.next()[1]])

    def _phi(self, cur: _Cursor, loc) -> SSAValue:
        _parse_fmf(cur)
        ty = self.types.parse(cur)
        incoming: list[tuple[Const, str]] = []
        while True:
            cur.expect("[")
            value = _parse_const(cur, ty, self.types)
            cur.expect(",")
            pred = cur.next()[1][1:]
            cur.expect("]")
            incoming.append((value, pred))
            if not cur.accept(","):
                break
        if self.block.ops.first is not None:
            raise _ParseFailure("phi after a non-phi instruction")
        arg = self.block.insert_arg(ty, len(self.block.args))
        self.phis.setdefault(self.label, []).append(incoming)
        return arg

    # -- calls

    def _call(self, cur: _Cursor, loc) -> Operation | None:
        tail = llvm.TailCallKind.NONE
        if cur.text() in _TAIL_KINDS:
            tail = _TAIL_KINDS[cur.next()[1]]
        cur.expect("call")
        fmf = _parse_fmf(cur)
        cconv = "ccc"
        if cur.text() in _CCONVS:
            cconv = cur.next()[1]
        elif cur.text() == "cc":
            cur.next()
            cconv = f"cc {cur.expect_int()}"
        res_attrs = _parse_param_attrs(cur, self.types)
        if cur.text() == "addrspace":
            cur.next()
            cur.balanced_text()
        result_type = self.types.parse(cur)
        fn_params: list[Attribute] | None = None
        variadic = False
        if cur.text() == "(":
            cur.next()
            fn_params = []
            while not cur.accept(")"):
                if cur.accept("..."):
                    variadic = True
                elif not cur.accept(","):
                    fn_params.append(self.types.parse(cur))
        kind, callee_text, _ = cur.next()
        if kind == "w" and callee_text == "asm":
            raise _ParseFailure("inline assembly is not supported")
        if kind not in ("g", "l"):
            raise _ParseFailure(f"unsupported callee '{callee_text}'")
        callee = _symbol_name(callee_text) if kind == "g" else None
        cur.expect("(")
        args: list[Const] = []
        arg_attrs: list[dict[str, Attribute]] = []
        while not cur.accept(")"):
            if cur.accept(","):
                continue
            if cur.accept("metadata"):  # only legal on intrinsics (most are dropped)
                ref = cur.text()
                _skip_operand(cur)
                args.append(("meta", ref))
                arg_attrs.append({})
                continue
            ty = self.types.parse(cur)
            arg_attrs.append(_parse_param_attrs(cur, self.types))
            args.append(_parse_const(cur, ty, self.types))
        bundles = []
        while not cur.at_end():
            kind, word, _ = cur.peek()
            if kind == "a":
                cur.next()
            elif word == "[":
                bundles.append(self._skip_bundles(cur))
            elif kind == "w":
                _parse_fn_attr_items(cur, lambda t: t[0] != "w")
            else:
                break
        if callee is not None and callee.startswith("llvm."):
            return self._intrinsic(callee, args, result_type, fmf)
        if bundles:
            raise _ParseFailure("operand bundles on calls are not supported")
        operands = [self._materialize(a) for a in args]
        if callee is None:
            operands.insert(0, self._lookup(callee_text, _PTR))
        props: dict[str, Attribute] = {
            "fastmathFlags": fmf,
            "CConv": llvm.CallingConventionAttr(cconv),
            "TailCallKind": llvm.TailCallKindAttr(tail),
            "op_bundle_sizes": DenseArrayBase.from_list(_I32, []),
            "operandSegmentSizes": DenseArrayBase.from_list(_I32, [len(operands), 0]),
        }
        if callee is not None:
            props["callee"] = SymbolRefAttr(callee)
        if variadic:
            props["var_callee_type"] = llvm.LLVMFunctionType(fn_params or [], result_type, True)
        attrs: dict[str, Attribute] = {}
        if (a := _attr_dict_array(arg_attrs)) is not None:
            attrs["arg_attrs"] = a
        if res_attrs:
            attrs["res_attrs"] = ArrayAttr([DictionaryAttr(res_attrs)])
        results = [] if isinstance(result_type, llvm.LLVMVoidType) else [result_type]
        return llvm.CallOp.create(operands=operands, result_types=results, properties=props,
                                  attributes=attrs)

    def _skip_bundles(self, cur: _Cursor) -> str:
        start = cur.peek()[2]
        depth = 0
        while not cur.at_end():
            t = cur.next()[1]
            depth += t == "["
            depth -= t == "]"
            if depth == 0:
                break
        return cur.line[start : cur.toks[cur.i - 1][2] + 1]

    def _intrinsic(self, name: str, args: list[Const], result_type: Attribute, fmf) -> Operation | None:
        if name == DECL_INTRINSIC:
            # kept: it marks where an inlined callee's restrict promise starts
            names = self.metadata.scope_names(args[0][1], self.name) if args and args[0][0] == "meta" else None
            return scope_decl(names[0]) if names and len(names) == 1 else None
        if name.startswith(_DROPPED_INTRINSICS):
            return None
        if any(a[0] == "meta" for a in args):
            raise _ParseFailure(f"intrinsic {name} with metadata operands is not supported")
        operands = [self._materialize(a) for a in args]
        results = [] if isinstance(result_type, llvm.LLVMVoidType) else [result_type]
        op = llvm.CallIntrinsicOp(name, operands, results)
        op.properties["fastmathFlags"] = fmf
        return op

    # -- terminators (deferred until all block arguments are known)

    def _defer(self, pending: _Pending) -> None:
        pending.location = self.cur_line[2]
        pending.line = self.cur_line[0]
        loop = self.cur_attachments.get("!llvm.loop")
        if loop is not None:
            pending.loop_hints = self.metadata.loop_hints(loop)
        self.pending.append(pending)
        self.has_terminator.add(self.label)

    def _br(self, cur: _Cursor, loc) -> None:
        if cur.accept("label"):
            self._defer(_Pending("br", self.label, dests=[cur.next()[1][1:]]))
            return None
        ty = self.types.parse(cur)
        cond = _parse_const(cur, ty, self.types)
        dests = []
        while cur.accept(","):
            cur.expect("label")
            dests.append(cur.next()[1][1:])
        self._defer(_Pending("cond_br", self.label, operands=[cond], dests=dests))
        return None

    def _switch(self, cur: _Cursor, loc) -> None:
        ty = self.types.parse(cur)
        value = _parse_const(cur, ty, self.types)
        cur.expect(",")
        cur.expect("label")
        dests = [cur.next()[1][1:]]
        cur.expect("[")
        cases = []
        while not cur.accept("]"):
            case_ty = self.types.parse(cur)
            case = _parse_const(cur, case_ty, self.types)
            if case[0] != "int":
                raise _ParseFailure("switch case values must be integer constants")
            cur.expect(",")
            cur.expect("label")
            cases.append(case[2])
            dests.append(cur.next()[1][1:])
        self._defer(_Pending("switch", self.label, operands=[value], dests=dests, case_values=cases))
        return None

    def _ret(self, cur: _Cursor, loc) -> None:
        if cur.accept("void"):
            self._defer(_Pending("ret", self.label))
            return None
        ty = self.types.parse(cur)
        self._defer(_Pending("ret", self.label, operands=[_parse_const(cur, ty, self.types)]))
        return None

    def _unreachable(self, cur: _Cursor, loc) -> None:
        self._defer(_Pending("unreachable", self.label))
        return None

    def _finish(self) -> None:
        """Build terminators with successor operands from the phis, then check refs."""
        incoming = self._incoming_by_pred()
        for pending in self.pending:
            self.block = self.blocks[pending.block_label]
            self.label = pending.block_label
            try:
                op = self._terminator(pending, incoming)
            except _ParseFailure as exc:
                raise self._error(f"cannot read instruction: {exc}", pending.line,
                                  self.header_index, pending.location) from None
            if pending.loop_hints:
                op.attributes[LOOP_HINTS_ATTR] = ArrayAttr([StringAttr(h) for h in pending.loop_hints])
            self._append(op, pending.location)
        for label in self.block_order:
            if label not in self.has_terminator:
                raise self._error(f"block %{label} has no terminator", label, self.header_index)
        if self.placeholders:
            name = next(iter(self.placeholders))
            raise self._error(f"use of undefined value {name}", name, self.header_index)

    def _incoming_by_pred(self) -> dict[tuple[str, str], list[Const]]:
        """(dest, pred) -> the values the phis of dest receive from pred, in phi order."""
        table: dict[tuple[str, str], list[Const]] = {}
        for dest, phis in self.phis.items():
            for position, entries in enumerate(phis):
                for value, pred in entries:
                    row = table.setdefault((dest, pred), [None] * len(phis))
                    row[position] = value
        return table

    def _edge_operands(self, dest: str, incoming) -> list[SSAValue]:
        if dest not in self.blocks:
            raise _ParseFailure(f"branch to unknown block %{dest}")
        row = incoming.get((dest, self.label))
        if row is None:
            if self.phis.get(dest):
                raise _ParseFailure(f"phi in %{dest} has no value for predecessor %{self.label}")
            return []
        return [self._materialize(v) for v in row]

    def _terminator(self, p: _Pending, incoming) -> Operation:
        if p.kind == "ret":
            return llvm.ReturnOp(self._materialize(p.operands[0]) if p.operands else None)
        if p.kind == "unreachable":
            return llvm.UnreachableOp.create()
        if p.kind == "br":
            return llvm.BrOp(self.blocks[p.dests[0]], *self._edge_operands(p.dests[0], incoming))
        if p.kind == "cond_br":
            then_ops = self._edge_operands(p.dests[0], incoming)
            else_ops = self._edge_operands(p.dests[1], incoming)
            cond = self._materialize(p.operands[0])
            return llvm.CondBrOp(cond, self.blocks[p.dests[0]], then_ops, self.blocks[p.dests[1]], else_ops)
        operands = [self._edge_operands(d, incoming) for d in p.dests]
        value = self._materialize(p.operands[0])
        return llvm_ext.SwitchOp(
            value, self.blocks[p.dests[0]], operands[0], p.case_values,
            [self.blocks[d] for d in p.dests[1:]], operands[1:],
        )


def _skip_operand(cur: _Cursor) -> None:
    """Skip tokens up to the next top-level ``,`` or ``)`` (a metadata operand)."""
    depth = 0
    while not cur.at_end():
        text = cur.text()
        if depth == 0 and text in (",", ")"):
            return
        depth += text in ("(", "{", "[")
        depth -= text in (")", "}", "]")
        cur.next()


def _zero_op(ty: Attribute) -> Operation:
    """``zeroinitializer``/``null`` of any type."""
    if isinstance(ty, IntegerType):
        return llvm.ConstantOp(IntegerAttr(0, ty), ty)
    if _is_float_type(ty):
        return llvm.ConstantOp(FloatAttr(0.0, ty), ty)
    if isinstance(ty, builtin.VectorType):
        elem = ty.element_type
        count = ty.get_shape()[0]
        if isinstance(elem, IntegerType) or _is_float_type(elem):
            zero = 0 if isinstance(elem, IntegerType) else 0.0
            return llvm.ConstantOp(builtin.DenseIntOrFPElementsAttr.from_list(ty, [zero] * count), ty)
    return llvm.ZeroOp.create(result_types=[ty])


def _int_binop(opcode: str, flags: set, lhs: SSAValue, rhs: SSAValue) -> Operation:
    cls = _INT_BINOP_CLASSES[opcode]
    props: dict[str, Attribute] = {}
    if opcode in _OVERFLOW_OPS:
        bits = (1 if "nsw" in flags else 0) | (2 if "nuw" in flags else 0)
        props["overflowFlags"] = IntegerAttr(bits, _I32)
    elif opcode in _EXACT_OPS and "exact" in flags:
        props["isExact"] = UnitAttr()
    elif opcode == "or" and "disjoint" in flags:
        props["isDisjoint"] = UnitAttr()
    return cls.create(operands=[lhs, rhs], result_types=[lhs.type], properties=props)


def _cast_op(opcode: str, arg: SSAValue, result_type: Attribute, flags) -> Operation:
    flags = flags or ()
    if opcode == "trunc":
        overflow = [f for f in ("nsw", "nuw") if f in flags]
        return llvm.TruncOp.create(
            operands=[arg], result_types=[result_type],
            properties={"overflowFlags": llvm.OverflowAttr(tuple(overflow) if overflow else "none")},
        )
    if opcode in ("zext", "uitofp"):
        cls = llvm.ZExtOp if opcode == "zext" else llvm_ext.UIToFPOp
        props = {"nonNeg": UnitAttr()} if "nneg" in flags else {}
        return cls.create(operands=[arg], result_types=[result_type], properties=props)
    cls = _SIMPLE_CASTS.get(opcode)
    if cls is None:
        raise _ParseFailure(f"unsupported cast '{opcode}'")
    return cls.create(operands=[arg], result_types=[result_type])


_HANDLERS: dict[str, Callable] = {
    **{op: _FunctionReader._int_binop for op in _INT_BINOP_CLASSES},
    **{op: _FunctionReader._float_binop for op in _FLOAT_BINOP_CLASSES},
    **{op: _FunctionReader._cast for op in _CAST_OPS},
    "fneg": _FunctionReader._fneg,
    "icmp": _FunctionReader._icmp,
    "fcmp": _FunctionReader._fcmp,
    "select": _FunctionReader._select,
    "alloca": _FunctionReader._alloca,
    "load": _FunctionReader._load,
    "store": _FunctionReader._store,
    "getelementptr": _FunctionReader._getelementptr,
    "extractvalue": _FunctionReader._extractvalue,
    "insertvalue": _FunctionReader._insertvalue,
    "extractelement": _FunctionReader._extractelement,
    "insertelement": _FunctionReader._insertelement,
    "shufflevector": _FunctionReader._shufflevector,
    "freeze": _FunctionReader._freeze,
    "va_arg": _FunctionReader._va_arg,
    "atomicrmw": _FunctionReader._atomicrmw,
    "cmpxchg": _FunctionReader._cmpxchg,
    "fence": _FunctionReader._fence,
    "phi": _FunctionReader._phi,
    "call": _FunctionReader._call,
    "br": _FunctionReader._br,
    "switch": _FunctionReader._switch,
    "ret": _FunctionReader._ret,
    "unreachable": _FunctionReader._unreachable,
}
