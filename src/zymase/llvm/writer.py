"""xDSL module in the (extended) ``llvm`` dialect -> LLVM IR text.

:func:`write_llvm_ir` prints LLVM IR that ``llvmlite.binding.parse_assembly``
accepts and verifies, for everything :mod:`zymase.llvm.reader` produces and for
what other producers put into ``llvm.func`` bodies (the AD engine: new functions,
struct-returning calls, constants anywhere, block arguments everywhere; the MLIR
lowering: multi-block functions, xDSL's ``llvm.intr.*`` ops, dense constants).

How the dialect maps back to LLVM IR:

* Constant-like ops (``llvm.mlir.constant`` / ``zero`` / ``undef`` / ``poison`` /
  ``addressof``) are not instructions in LLVM: their results are printed as
  literals at every use (which also satisfies ``immarg`` parameters).
  Floats are printed exactly: doubles as ``0x`` + 16 hex digits of their bits;
  float/half/bfloat as the double-hex of their exactly representable value.
* Block arguments become ``phi``s; the incoming values are gathered from each
  predecessor's terminator, one entry per edge. When one terminator sends
  different operand lists to the same block (``cond_br %c, ^b(%x), ^b(%y)``, or a
  switch naming a block twice), the extra edges are split with a trampoline
  block that only branches on.
* ``llvm.call_intrinsic`` and xDSL's ``llvm.intr.*`` ops become calls; every
  intrinsic used is declared from its call's types (LLVM re-attaches ``immarg``
  and the other intrinsic attributes itself). Calls to undeclared symbols get a
  declaration from the call's types.
* Named struct types get one ``%name = type {...}`` definition each.
* Discardable attributes the writer does not know (``zymase.*``, ``zymase.tbaa``,
  locations) are ignored, except ``zymase.llvm_init`` on globals, which is the
  initializer's LLVM text and is printed back verbatim, ``zymase.alias_scope`` /
  ``zymase.noalias`` on memory accesses (with the source's ``zymase.src_alias_scope`` /
  ``zymase.src_noalias`` and ``zymase.scope_decl`` calls, zymase.llvm.noalias_scopes) and
  ``zymase.loop_hints`` on branches, which become metadata. Debug info is not written.

Anything that cannot be expressed raises :class:`~zymase.errors.ZymaseError`
(an internal-contract failure, but a readable one). The writer is linear in the
size of the module.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from zymase.errors import ZymaseError
from zymase.ir import (
    ArrayAttr,
    Attribute,
    Block,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Operation,
    SSAValue,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    builtin,
    llvm,
    llvm_ext,
)
from zymase.ir.llvm_eh import PERSONALITY_ATTR
from zymase.llvm.loop_hints import LOOP_HINT_TYPES, LOOP_HINTS_ATTR
from zymase.llvm.noalias_scopes import DECL_INTRINSIC, SCOPE_DECL, SRC_ALIAS_SCOPE, SRC_NOALIAS, scope_domain
from zymase.llvm.writer_eh import EH_WRITERS

__all__ = ["write_llvm_ir"]

_HINT = "this is a bug in the pass that produced the module; print it with zymase.ir.print_mlir to inspect it"


class _WriteError(Exception):
    """Internal: turned into a ZymaseError naming the op and the function."""


def write_llvm_ir(module: ModuleOp) -> str:
    """Print an xDSL module of ``llvm`` dialect ops as LLVM IR text."""
    return _ModuleWriter(module).write()


# ----------------------------------------------------------------- names


def _is_ident_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch in "-$._")


def _quote_bytes(data: bytes) -> str:
    """LLVM string-literal body: printable ASCII as is, the rest as ``\\XX``."""
    out = []
    for b in data:
        if 0x20 <= b < 0x7F and b not in (0x22, 0x5C):
            out.append(chr(b))
        else:
            out.append(f"\\{b:02X}")
    return "".join(out)


def _encode(text: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def _symbol(prefix: str, name: str) -> str:
    """``@name`` / ``%name``, quoted when LLVM's identifier syntax does not allow it.

    An all-digit global name is LLVM's numbered global (``@0``, clang's unnamed
    strings and OpenMP's ident structs): it stays unquoted, because ``@"0"`` is a
    different, named global to which the ``@0`` in initializers kept as text would
    not refer."""
    if name and all(_is_ident_char(c) for c in name) and not name[0].isdigit():
        return prefix + name
    if prefix == "@" and name.isascii() and name.isdigit():
        return prefix + name
    return f'{prefix}"{_quote_bytes(_encode(name))}"'


def _metadata_string(text: str) -> str:
    return f'!"{_quote_bytes(_encode(text))}"'


def _string(text: str) -> str:
    return f'"{_quote_bytes(_encode(text))}"'


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


def _float_literal(value: float, ty: Attribute) -> str:
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
    raise _WriteError(f"no LLVM float literal for type {ty}")


def _int_literal(value: int, ty: Attribute) -> str:
    if isinstance(ty, IntegerType) and ty.width.data == 1:
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------- helpers


def _prop(op: Operation, name: str) -> Attribute | None:
    """A property, or the same name as a discardable attribute (MLIR text re-parsing
    puts some properties into the attribute dictionary)."""
    value = op.properties.get(name)
    if value is None:
        value = op.attributes.get(name)
    return value


_FMF_ORDER = ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn")


def _fmf(op: Operation) -> str:
    """`` fast`` / `` nnan ninf`` / ``""`` from the fastmathFlags property."""
    attr = _prop(op, "fastmathFlags")
    if attr is None or not getattr(attr, "data", None):
        return ""
    flags = {str(f.value) if hasattr(f, "value") else str(f) for f in attr.data}
    if all(f in flags for f in _FMF_ORDER):
        return " fast"
    return "".join(f" {f}" for f in _FMF_ORDER if f in flags)


def _overflow_text(bits: int) -> str:
    return ("" if not bits & 2 else " nuw") + ("" if not bits & 1 else " nsw")


def _int_value(attr: Attribute | None, default: int = 0) -> int:
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    return default


_ORDERINGS = llvm_ext.ATOMIC_ORDERINGS
_ICMP_NAMES = {p.to_int(): p.value for p in llvm.ICmpPredicateFlag}
_FCMP_NAMES = {p.to_int(): p.value.lstrip("_") for p in llvm.FCmpPredicateFlag}

_PARAM_INT_WORDS = {"llvm.dereferenceable": "dereferenceable", "llvm.dereferenceable_or_null":
                    "dereferenceable_or_null", "llvm.alignstack": "alignstack"}


# ----------------------------------------------------------------- module


class _ModuleWriter:
    def __init__(self, module: ModuleOp):
        self.module = module
        self.type_cache: dict[Attribute, str] = {}
        self.named_structs: dict[str, Attribute] = {}
        self.intrinsics: dict[str, str] = {}
        self.declared: set[str] = set()
        self.auto_declarations: dict[str, str] = {}
        self.metadata: list[str] = []  # numbered metadata nodes, !0 first
        self.scope_ids: dict[str, int] = {}
        self.scope_domains: dict[str, int] = {}
        self.loop_hint_ids: dict[tuple[str, str], int] = {}
        self.scope_list_ids: dict[tuple[str, ...], int] = {}

    def alias_metadata(self, op: Operation) -> str:
        """``, !alias.scope !a, !noalias !b`` for a load/store carrying the scope
        attributes of zymase.transforms.alias_scopes and those the source program gave
        it (zymase.llvm.noalias_scopes), the two sets in separate domains."""
        text = ""
        for attrs, kind in ((("zymase.alias_scope", SRC_ALIAS_SCOPE), "alias.scope"),
                            (("zymase.noalias", SRC_NOALIAS), "noalias")):
            names = [a.data for key in attrs if isinstance(sc := op.attributes.get(key), ArrayAttr) for a in sc.data]
            if names:
                text += f", !{kind} !{self._scope_list(tuple(names))}"
        return text

    def scope_decl(self, op: Operation) -> str:
        """The call of ``llvm.experimental.noalias.scope.decl`` an op of
        zymase.llvm.noalias_scopes stands for."""
        if DECL_INTRINSIC not in self.intrinsics:
            self.intrinsics[DECL_INTRINSIC] = f"void {_symbol('@', DECL_INTRINSIC)}(metadata)"
        scope = op.attributes[SCOPE_DECL].data
        return f"call void {_symbol('@', DECL_INTRINSIC)}(metadata !{self._scope_list((scope,))})"

    def loop_metadata(self, op: Operation) -> str:
        """``, !llvm.loop !N`` for a branch carrying the reader's loop hints: a distinct
        loop id per branch (LLVM identifies loops by it), the hint nodes shared."""
        hints = op.attributes.get(LOOP_HINTS_ATTR)
        if not isinstance(hints, ArrayAttr) or not hints.data:
            return ""
        entries = []
        for hint in hints.data:
            name, _, value = hint.data.partition("=")
            key = (name, value)
            if key not in self.loop_hint_ids:
                operand = f", {LOOP_HINT_TYPES.get(name) or 'i32'} {value}" if value else ""
                self.loop_hint_ids[key] = self._node(f"!{{{_metadata_string(name)}{operand}}}")
            entries.append(f"!{self.loop_hint_ids[key]}")
        k = len(self.metadata)
        return f", !llvm.loop !{self._node('distinct !{' + ', '.join([f'!{k}', *entries]) + '}')}"

    def _node(self, text: str) -> int:
        self.metadata.append(text)
        return len(self.metadata) - 1

    def _scope_list(self, names: tuple[str, ...]) -> int:
        if names not in self.scope_list_ids:
            ids = []
            for n in names:
                if n not in self.scope_ids:
                    domain = self._scope_domain(scope_domain(n) or "zymase")
                    k = len(self.metadata)
                    self.scope_ids[n] = self._node(f"distinct !{{!{k}, !{domain}, {_metadata_string(n)}}}")
                ids.append(f"!{self.scope_ids[n]}")
            self.scope_list_ids[names] = self._node("!{" + ", ".join(ids) + "}")
        return self.scope_list_ids[names]

    def _scope_domain(self, name: str) -> int:
        if name not in self.scope_domains:
            k = len(self.metadata)
            self.scope_domains[name] = self._node(f"distinct !{{!{k}, {_metadata_string(name)}}}")
        return self.scope_domains[name]

    def write(self) -> str:
        ops = list(self.module.body.block.ops) if self.module.body.blocks else []
        for op in ops:
            if op.name in ("llvm.func", "llvm.mlir.global"):
                self.declared.add(op.properties["sym_name"].data)
        body: list[str] = []
        for op in ops:
            if op.name == "llvm.mlir.global":
                body.append(self._guard(op, None, self._global))
            elif op.name == "llvm.func":
                body.append(self._guard(op, None, self._function))
            else:
                raise ZymaseError(
                    f"cannot write top-level op '{op.name}' as LLVM IR",
                    construct=op.name,
                    hint="lower the module to the llvm dialect first (zymase.transforms)",
                )
        header = []
        attrs = self.module.attributes
        layout = attrs.get("llvm.data_layout") or attrs.get("dlti.dl_spec")
        triple = attrs.get("llvm.target_triple")
        if isinstance(layout, StringAttr):
            header.append(f"target datalayout = {_string(layout.data)}")
        if isinstance(triple, StringAttr):
            header.append(f"target triple = {_string(triple.data)}")
        types = self._type_definitions()
        decls = [f"declare {sig}" for sig in self.auto_declarations.values()]
        decls += [f"declare {sig}" for sig in self.intrinsics.values()]
        globals_ = [text for text in body if not text.startswith(("define", "declare"))]
        functions = [text for text in body if text.startswith(("define", "declare"))]
        metadata = [f"!{i} = {text}" for i, text in enumerate(self.metadata)]
        parts = ["\n".join(header), "\n".join(types), "\n".join(globals_),
                 "\n\n".join(functions), "\n".join(decls), "\n".join(metadata)]
        return "\n\n".join(p for p in parts if p) + "\n"

    def _guard(self, op: Operation, function: str | None, fn: Callable[[Operation], str]) -> str:
        try:
            return fn(op)
        except _WriteError as exc:
            name = op.properties.get("sym_name")
            raise ZymaseError(
                f"cannot write LLVM IR: {exc}",
                construct=op.name,
                function=function or (name.data if isinstance(name, StringAttr) else None),
                hint=_HINT,
            ) from None

    # -- types

    def type(self, ty: Attribute) -> str:
        text = self.type_cache.get(ty)
        if text is None:
            text = self.type_cache[ty] = self._type_text(ty)
        return text

    def _type_text(self, ty: Attribute) -> str:
        if isinstance(ty, IntegerType):
            return f"i{ty.width.data}"
        if isinstance(ty, builtin.Float64Type):
            return "double"
        if isinstance(ty, builtin.Float32Type):
            return "float"
        if isinstance(ty, builtin.Float16Type):
            return "half"
        if isinstance(ty, builtin.BFloat16Type):
            return "bfloat"
        if isinstance(ty, builtin.Float80Type):
            return "x86_fp80"
        if isinstance(ty, builtin.Float128Type):
            return "fp128"
        if isinstance(ty, builtin.IndexType):
            return "i64"
        if isinstance(ty, llvm.LLVMPointerType):
            space = ty.addr_space
            if isinstance(space, builtin.IntAttr) and space.data:
                return f"ptr addrspace({space.data})"
            return "ptr"
        if isinstance(ty, llvm.LLVMVoidType):
            return "void"
        if isinstance(ty, llvm.LLVMArrayType):
            return f"[{ty.size.data} x {self.type(ty.type)}]"
        if isinstance(ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType)):
            name = ty.struct_name.data
            if name:
                known = self.named_structs.setdefault(name, ty)
                if known != ty:
                    raise _WriteError(f"two different struct types are named '{name}'")
                return _symbol("%", name)
            return self._struct_body(ty)
        if isinstance(ty, builtin.VectorType):
            shape = ty.get_shape()
            if len(shape) != 1 or ty.get_num_scalable_dims():
                raise _WriteError(f"only fixed 1-D vectors exist in LLVM IR, not {ty}")
            return f"<{shape[0]} x {self.type(ty.element_type)}>"
        if isinstance(ty, llvm.LLVMFunctionType):
            params = [self.type(t) for t in ty.inputs.data]
            if ty.is_variadic:
                params.append("...")
            return f"{self.type(ty.output)} ({', '.join(params)})"
        raise _WriteError(f"type {ty} has no LLVM IR equivalent")

    def _struct_body(self, ty: Attribute) -> str:
        fields = ", ".join(self.type(t) for t in ty.types.data)
        body = f"{{ {fields} }}" if fields else "{}"
        if isinstance(ty, llvm_ext.LLVMPackedStructType):
            return f"<{body}>"
        return body

    def _type_definitions(self) -> list[str]:
        lines: list[str] = []
        done: set[str] = set()
        while len(done) < len(self.named_structs):  # bodies may name further structs
            for name, ty in list(self.named_structs.items()):
                if name not in done:
                    done.add(name)
                    lines.append(f"{_symbol('%', name)} = type {self._struct_body(ty)}")
        return lines

    # -- globals

    def _global(self, op: Operation) -> str:
        props = op.properties
        name = props["sym_name"].data
        ty = props["global_type"]
        linkage = props["linkage"].linkage.data if "linkage" in props else "external"
        init = self._global_init(op, ty)
        words = [f"{_symbol('@', name)} ="]
        if init is None:
            words.append("external" if linkage not in ("extern_weak",) else linkage)
        elif linkage != "external":
            words.append(linkage)
        if "dso_local" in props or "dso_local" in op.attributes:
            words.append("dso_local")
        visibility = _int_value(props.get("visibility_"))
        if visibility and linkage not in ("private", "internal"):
            words.append({1: "hidden", 2: "protected"}.get(visibility, ""))
        if "thread_local_" in props:
            words.append("thread_local")
        unnamed = _int_value(props.get("unnamed_addr"))
        if unnamed:
            words.append("unnamed_addr" if unnamed == 2 else "local_unnamed_addr")
        space = _int_value(props.get("addr_space"))
        if space:
            words.append(f"addrspace({space})")
        if "externally_initialized" in op.attributes:
            words.append("externally_initialized")
        words.append("constant" if "constant" in props else "global")
        words.append(self.type(ty))
        if init is not None:
            words.append(init)
        text = " ".join(w for w in words if w)
        if (section := props.get("section")) is not None:
            text += f", section {_string(section.data)}"
        if (align := props.get("alignment")) is not None:
            text += f", align {_int_value(align)}"
        return text

    def _global_init(self, op: Operation, ty: Attribute) -> str | None:
        verbatim = op.attributes.get("zymase.llvm_init")
        if isinstance(verbatim, StringAttr):
            return verbatim.data
        value = op.properties.get("value")
        if value is not None:
            return self._attr_literal(value, ty)
        body = op.regions[0] if op.regions else None
        if body is not None and body.blocks:
            return self._region_init(body.blocks[0])
        linkage = op.properties["linkage"].linkage.data
        if linkage in ("external", "extern_weak"):
            return None
        return "zeroinitializer"

    def _attr_literal(self, value: Attribute, ty: Attribute) -> str:
        """A constant attribute (int/float/string/dense) as an LLVM constant of type ty."""
        if isinstance(value, IntegerAttr):
            return _int_literal(value.value.data, ty)
        if isinstance(value, FloatAttr):
            return _float_literal(value.value.data, ty)
        if isinstance(value, StringAttr):
            data = _encode(value.data)
            if isinstance(ty, llvm.LLVMArrayType) and ty.size.data > len(data):
                data += b"\0" * (ty.size.data - len(data))
            return f'c"{_quote_bytes(data)}"'
        if isinstance(value, builtin.DenseIntOrFPElementsAttr):
            return self._dense_literal(value, ty)
        raise _WriteError(f"cannot print constant {value} as LLVM IR")

    def _dense_literal(self, value: Attribute, ty: Attribute) -> str:
        values = list(value.get_values())
        if isinstance(ty, builtin.VectorType):
            elem_ty = ty.element_type
            open_, close = "<", ">"
        elif isinstance(ty, llvm.LLVMArrayType):
            elem_ty = ty.type
            open_, close = "[", "]"
            if isinstance(elem_ty, llvm.LLVMArrayType):  # nested arrays: row by row
                inner = elem_ty.size.data
                rows = [values[i : i + inner] for i in range(0, len(values), inner)]
                return "[" + ", ".join(
                    f"{self.type(elem_ty)} {self._flat_literal(r, elem_ty.type, '[', ']')}" for r in rows
                ) + "]"
        else:
            if len(values) == 1:
                return self._scalar_literal(values[0], ty)
            raise _WriteError(f"dense constant for non-vector type {ty}")
        return self._flat_literal(values, elem_ty, open_, close)

    def _flat_literal(self, values: Sequence, elem_ty: Attribute, open_: str, close: str) -> str:
        elem = self.type(elem_ty)
        return open_ + ", ".join(f"{elem} {self._scalar_literal(v, elem_ty)}" for v in values) + close

    @staticmethod
    def _scalar_literal(value, ty: Attribute) -> str:
        if isinstance(ty, IntegerType):
            return _int_literal(int(value), ty)
        return _float_literal(float(value), ty)

    def _region_init(self, block: Block) -> str:
        """Initializer region of a global (MLIR style): fold it to an LLVM constant."""
        last = block.last_op
        if last is None or last.name != "llvm.return" or not last.operands:
            raise _WriteError("global initializer region must end in llvm.return of a value")
        return _ConstFolder(self).literal(last.operands[0])

    # -- functions

    def _function(self, op: Operation) -> str:
        props = op.properties
        name = props["sym_name"].data
        fn_type = props["function_type"]
        is_decl = not op.regions[0].blocks
        linkage = props["linkage"].linkage.data if "linkage" in props else "external"
        if is_decl and linkage not in ("extern_weak",):
            linkage = "external"
        words = ["declare" if is_decl else "define"]
        if linkage != "external":
            words.append(linkage)
        if "dso_local" in op.attributes or "dso_local" in props:
            words.append("dso_local")
        visibility = _int_value(props.get("visibility_"))
        if visibility and linkage not in ("private", "internal"):
            words.append({1: "hidden", 2: "protected"}.get(visibility, ""))
        cconv = props.get("CConv")
        if isinstance(cconv, llvm.CallingConventionAttr) and cconv.cconv_name != "ccc":
            words.append(cconv.cconv_name)
        res_attrs = _prop(op, "res_attrs")
        if isinstance(res_attrs, ArrayAttr) and res_attrs.data:
            words.append(self._param_attrs(res_attrs.data[0]))
        words.append(self.type(fn_type.output))
        arg_attrs = _prop(op, "arg_attrs")
        arg_attr_list = arg_attrs.data if isinstance(arg_attrs, ArrayAttr) else ()
        namer = _Namer() if not is_decl else None
        params = []
        entry_args = op.regions[0].blocks[0].args if not is_decl else ()
        for index, arg_type in enumerate(fn_type.inputs.data):
            text = self.type(arg_type)
            if index < len(arg_attr_list):
                attrs = self._param_attrs(arg_attr_list[index])
                if attrs:
                    text += " " + attrs
            if namer is not None:
                text += " " + namer.name(entry_args[index], "a")
            params.append(text)
        if fn_type.is_variadic:
            params.append("...")
        words.append(f"{_symbol('@', name)}({', '.join(params)})")
        unnamed = _int_value(props.get("unnamed_addr"))
        if unnamed:
            words.append("unnamed_addr" if unnamed == 2 else "local_unnamed_addr")
        fn_attrs = self._function_attributes(op)
        if fn_attrs:
            words.append(fn_attrs)
        section = op.attributes.get("section")
        if isinstance(section, StringAttr):
            words.append(f"section {_string(section.data)}")
        personality = op.attributes.get(PERSONALITY_ATTR)
        if isinstance(personality, SymbolRefAttr) and not is_decl:
            name_text = personality.root_reference.data
            self.callee(name_text, None, [], llvm.LLVMFunctionType([], IntegerType(32), True))
            words.append(f"personality ptr {_symbol('@', name_text)}")
        header = " ".join(w for w in words if w)
        if is_decl:
            return header
        body = _FunctionWriter(self, op, namer).write()
        return f"{header} {{\n{body}}}"

    def _param_attrs(self, attrs: Attribute) -> str:
        if not isinstance(attrs, DictionaryAttr):
            return ""
        out = []
        for key, value in attrs.data.items():
            if not key.startswith("llvm."):
                continue
            word = key[5:]
            if isinstance(value, UnitAttr):
                out.append("captures(none)" if word == "nocapture" else word)
            elif key == "llvm.align" and isinstance(value, IntegerAttr):
                out.append(f"align {value.value.data}")
            elif key in _PARAM_INT_WORDS and isinstance(value, IntegerAttr):
                # unsigned 64-bit in LLVM; an i64 attribute holds 2**64-1 as -1
                out.append(f"{_PARAM_INT_WORDS[key]}({value.value.data % 2**64})")
            elif isinstance(value, StringAttr):
                out.append(f"{word}({value.data})")
            elif isinstance(value, IntegerAttr):
                continue
            else:
                out.append(f"{word}({self.type(value)})")
        return " ".join(out)

    def _function_attributes(self, op: Operation) -> str:
        items: list[str] = []
        seen: set[str] = set()

        def add(text: str, key: str | None = None) -> None:
            key = key or text
            if key not in seen:
                seen.add(key)
                items.append(text)

        passthrough = _prop(op, "passthrough")
        if isinstance(passthrough, ArrayAttr):
            for item in passthrough.data:
                if isinstance(item, StringAttr):
                    add(item.data, item.data.split("(", 1)[0])
                elif isinstance(item, ArrayAttr) and len(item.data) == 2:
                    key, value = item.data
                    if isinstance(key, StringAttr) and isinstance(value, StringAttr):
                        text = _string(key.data) + (f"={_string(value.data)}" if value.data else "")
                        add(text, '"' + key.data)
        props = op.properties
        if "no_inline" in props or "optimize_none" in props:
            add("noinline")
        if "optimize_none" in props:
            add("optnone")
        if "no_unwind" in props:
            add("nounwind")
        for prop, key in (("target_cpu", "target-cpu"), ("tune_cpu", "tune-cpu")):
            if isinstance(value := props.get(prop), StringAttr):
                add(f"{_string(key)}={_string(value.data)}", '"' + key)
        features = props.get("target_features")
        if isinstance(features, llvm.TargetFeaturesAttr):
            joined = ",".join(f.data for f in features.features.data)
            add(f'"target-features"={_string(joined)}', '"target-features')
        frame_pointer = props.get("frame_pointer")
        if isinstance(frame_pointer, llvm.FramePointerKindAttr):
            add(f'"frame-pointer"={_string(str(frame_pointer.data.value))}', '"frame-pointer')
        return " ".join(items)

    # -- declarations gathered while writing bodies

    def intrinsic(self, name: str, result: Attribute | None, args: Sequence[Attribute]) -> None:
        if name not in self.intrinsics:
            ret = self.type(result) if result is not None else "void"
            params = ", ".join(self.type(t) for t in args)
            self.intrinsics[name] = f"{ret} {_symbol('@', name)}({params})"

    def callee(self, name: str, result: Attribute | None, args: Sequence[Attribute],
               fn_type: Attribute | None) -> None:
        """Declare a directly called symbol the module does not define."""
        if name in self.declared or name in self.auto_declarations:
            return
        if name.startswith("llvm."):
            self.intrinsic(name, result, args)
            return
        if isinstance(fn_type, llvm.LLVMFunctionType):
            params = [self.type(t) for t in fn_type.inputs.data] + ["..."]
            ret = self.type(fn_type.output)
        else:
            params = [self.type(t) for t in args]
            ret = self.type(result) if result is not None else "void"
        self.auto_declarations[name] = f"{ret} {_symbol('@', name)}({', '.join(params)})"


class _Namer:
    """Unique local names (``%a0``, ``%v3``, ``bb2``) for one function."""

    def __init__(self):
        self.names: dict[SSAValue, str] = {}
        self.count = 0

    def name(self, value: SSAValue, prefix: str = "v") -> str:
        text = self.names.get(value)
        if text is None:
            text = self.names[value] = f"%{prefix}{self.count}"
            self.count += 1
        return text


_CONSTANT_OPS = frozenset(
    ["llvm.mlir.constant", "llvm.mlir.zero", "llvm.mlir.undef", "llvm.mlir.poison",
     "llvm.mlir.addressof"]
)


class _ConstFolder:
    """Folds constant-like ops (and insertvalue/GEP/cast chains of them, for global
    initializer regions) into LLVM constant literals."""

    def __init__(self, writer: _ModuleWriter):
        self.writer = writer

    def literal(self, value: SSAValue) -> str:
        op = value.owner if isinstance(value.owner, Operation) else None
        if op is None:
            raise _WriteError("global initializer uses a non-constant value")
        name = op.name
        if name in _CONSTANT_OPS:
            return constant_literal(self.writer, op)
        if name == "llvm.insertvalue":
            return self._aggregate(value)
        if name == "llvm.getelementptr":
            return self._gep(op)
        raise _WriteError(f"cannot fold '{name}' into a global initializer")

    def _aggregate(self, value: SSAValue) -> str:
        """insertvalue chains on undef/zero -> ``{ T a, T b }`` / ``[T a, ...]``."""
        chain = []
        while value.owner.name == "llvm.insertvalue":
            chain.append(value.owner)
            value = value.owner.operands[0]
        base = value.owner
        ty = value.type
        members = self._members(ty)
        fill = "zeroinitializer" if base.name == "llvm.mlir.zero" else "undef"
        slots: dict[tuple[int, ...], str] = {}
        for op in reversed(chain):
            position = tuple(op.properties["position"].get_values())
            slots[position] = self.literal(op.operands[1])
        return self._render(ty, (), slots, fill, members)

    def _members(self, ty: Attribute) -> list[Attribute]:
        if isinstance(ty, llvm.LLVMArrayType):
            return [ty.type] * ty.size.data
        if isinstance(ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType)):
            return list(ty.types.data)
        raise _WriteError(f"insertvalue into non-aggregate {ty}")

    def _render(self, ty, prefix, slots, fill, members) -> str:
        parts = []
        for index, member_ty in enumerate(members):
            key = prefix + (index,)
            if key in slots:
                text = slots[key]
            elif any(k[: len(key)] == key for k in slots):
                text = self._render(member_ty, key, slots, fill, self._members(member_ty))
            else:
                text = fill
            parts.append(f"{self.writer.type(member_ty)} {text}")
        if isinstance(ty, llvm.LLVMArrayType):
            return "[" + ", ".join(parts) + "]"
        body = "{ " + ", ".join(parts) + " }" if parts else "{}"
        return f"<{body}>" if isinstance(ty, llvm_ext.LLVMPackedStructType) else body

    def _gep(self, op: Operation) -> str:
        if op.operands[1:]:
            raise _WriteError("getelementptr in a global initializer must have constant indices")
        base = self.literal(op.operands[0])
        elem = op.properties["elem_type"]
        indices = []
        ty = elem
        for position, index in enumerate(op.properties["rawConstantIndices"].get_values()):
            is_struct = position > 0 and isinstance(ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType))
            indices.append(f"{'i32' if is_struct else 'i64'} {index}")
            if position > 0:
                ty = _index_into(ty, index)
        inbounds = " inbounds" if _gep_is_inbounds(op) else ""
        return (f"getelementptr{inbounds} ({self.writer.type(elem)}, "
                f"{self.writer.type(op.operands[0].type)} {base}, {', '.join(indices)})")


def constant_literal(writer: _ModuleWriter, op: Operation) -> str:
    """The literal text of a constant-like op's result."""
    name = op.name
    ty = op.results[0].type
    if name == "llvm.mlir.constant":
        return writer._attr_literal(op.properties["value"], ty)
    if name == "llvm.mlir.zero":
        if isinstance(ty, llvm.LLVMPointerType):
            return "null"
        if isinstance(ty, IntegerType):
            return "0"
        if isinstance(ty, (builtin.Float16Type, builtin.BFloat16Type, builtin.Float32Type,
                           builtin.Float64Type, builtin.Float80Type, builtin.Float128Type)):
            return _float_literal(0.0, ty)
        return "zeroinitializer"
    if name == "llvm.mlir.undef":
        return "undef"
    if name == "llvm.mlir.poison":
        return "poison"
    if name == "llvm.mlir.addressof":
        return _symbol("@", op.properties["global_name"].root_reference.data)
    raise _WriteError(f"'{name}' is not a constant")


def _index_into(ty: Attribute, index: int) -> Attribute:
    if isinstance(ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType)):
        return ty.types.data[index]
    if isinstance(ty, llvm.LLVMArrayType):
        return ty.type
    if isinstance(ty, builtin.VectorType):
        return ty.element_type
    raise _WriteError(f"getelementptr cannot index into {ty}")


def _gep_is_inbounds(op: Operation) -> bool:
    return "inbounds" in op.properties or bool(_int_value(op.properties.get("noWrapFlags")) & 1)


# ------------------------------------------------------------------ bodies


_INT_BINOPS = {
    "llvm.add": "add", "llvm.sub": "sub", "llvm.mul": "mul", "llvm.shl": "shl",
    "llvm.udiv": "udiv", "llvm.sdiv": "sdiv", "llvm.lshr": "lshr", "llvm.ashr": "ashr",
    "llvm.urem": "urem", "llvm.srem": "srem", "llvm.and": "and", "llvm.or": "or",
    "llvm.xor": "xor",
}
_FLOAT_BINOPS = {"llvm.fadd": "fadd", "llvm.fsub": "fsub", "llvm.fmul": "fmul",
                 "llvm.fdiv": "fdiv", "llvm.frem": "frem"}
_CASTS = {
    "llvm.trunc": "trunc", "llvm.zext": "zext", "llvm.sext": "sext", "llvm.fptrunc": "fptrunc",
    "llvm.fpext": "fpext", "llvm.fptosi": "fptosi", "llvm.fptoui": "fptoui",
    "llvm.sitofp": "sitofp", "llvm.uitofp": "uitofp", "llvm.ptrtoint": "ptrtoint",
    "llvm.inttoptr": "inttoptr", "llvm.bitcast": "bitcast", "llvm.addrspacecast": "addrspacecast",
}
_UNARY_INTRINSICS = {
    "llvm.intr.fabs": "fabs", "llvm.intr.ceil": "ceil", "llvm.intr.sqrt": "sqrt",
    "llvm.intr.floor": "floor", "llvm.intr.exp2": "exp2", "llvm.intr.log": "log",
    "llvm.intr.exp": "exp", "llvm.intr.sin": "sin", "llvm.intr.cos": "cos",
    "llvm.intr.log2": "log2", "llvm.intr.maxnum": "maxnum", "llvm.intr.minnum": "minnum",
    "llvm.intr.copysign": "copysign", "llvm.intr.fma": "fma", "llvm.intr.pow": "pow",
}


def _mangle(ty: Attribute) -> str:
    """LLVM's overloaded-intrinsic type suffix (f64, v4f32, p0, i32)."""
    if isinstance(ty, IntegerType):
        return f"i{ty.width.data}"
    if isinstance(ty, builtin.Float64Type):
        return "f64"
    if isinstance(ty, builtin.Float32Type):
        return "f32"
    if isinstance(ty, builtin.Float16Type):
        return "f16"
    if isinstance(ty, builtin.BFloat16Type):
        return "bf16"
    if isinstance(ty, builtin.Float80Type):
        return "f80"
    if isinstance(ty, builtin.Float128Type):
        return "f128"
    if isinstance(ty, llvm.LLVMPointerType):
        space = ty.addr_space
        return f"p{space.data if isinstance(space, builtin.IntAttr) else 0}"
    if isinstance(ty, builtin.VectorType):
        return f"v{ty.get_shape()[0]}{_mangle(ty.element_type)}"
    raise _WriteError(f"cannot mangle intrinsic type {ty}")


class _FunctionWriter:
    """Prints one function body: names, phis (with trampolines), instructions."""

    def __init__(self, module: _ModuleWriter, func: Operation, namer: _Namer):
        self.m = module
        self.func = func
        self.namer = namer
        self.literals: dict[SSAValue, str] = {}
        self.labels: dict[Block, str] = {}
        self.incoming: dict[Block, list[tuple[str, Sequence[SSAValue]]]] = {}
        self.edge_labels: dict[tuple[int, int], str] = {}
        self.trampolines: list[str] = []
        self.lines: list[str] = []

    # -- driver

    def write(self) -> str:
        blocks = list(self.func.regions[0].blocks)
        for index, block in enumerate(blocks):
            self.labels[block] = f"bb{index}"
        self._name_values(blocks)
        self._collect_edges(blocks)
        if self.incoming.get(blocks[0]):
            raise _WriteError("the entry block of a function cannot have predecessors")
        for block in blocks[1:]:
            if block.args and not self.incoming.get(block):
                # unreachable block: its arguments can be anything, there is no phi
                for arg in block.args:
                    self.literals[arg] = "poison"
        for block in blocks:
            self.lines.append(f"{self.labels[block]}:")
            if block is not blocks[0] and self.incoming.get(block):
                self._phis(block)
            for op in block.ops:
                if op.name in _CONSTANT_OPS:
                    continue
                try:
                    text = self._op(op)
                except _WriteError as exc:
                    raise ZymaseError(
                        f"cannot write LLVM IR: {exc}",
                        construct=op.name,
                        function=self.func.properties["sym_name"].data,
                        hint=_HINT,
                    ) from None
                if text:
                    self.lines.append("  " + text)
        self.lines.extend(self.trampolines)
        return "\n".join(self.lines) + "\n"

    def _name_values(self, blocks: list[Block]) -> None:
        namer = self.namer
        for index, block in enumerate(blocks):
            if index:
                for arg in block.args:
                    namer.name(arg, "p")
            for op in block.ops:
                if op.name in _CONSTANT_OPS:
                    try:
                        self.literals[op.results[0]] = constant_literal(self.m, op)
                    except _WriteError as exc:
                        raise ZymaseError(f"cannot write LLVM IR: {exc}", construct=op.name,
                                          function=self.func.properties["sym_name"].data,
                                          hint=_HINT) from None
                    continue
                for result in op.results:
                    namer.name(result)

    # -- values

    def val(self, value: SSAValue) -> str:
        text = self.literals.get(value)
        if text is not None:
            return text
        text = self.namer.names.get(value)
        if text is None:
            raise _WriteError(f"operand {value} is not defined in this function")
        return text

    def typed(self, value: SSAValue) -> str:
        return f"{self.m.type(value.type)} {self.val(value)}"

    def res(self, op: Operation) -> str:
        return self.namer.names[op.results[0]]

    # -- block arguments -> phis

    def _successor_slots(self, term: Operation) -> list[tuple[Block, Sequence[SSAValue]]]:
        name = term.name
        if name == "llvm.br":
            return [(term.successors[0], tuple(term.operands))]
        if name == "llvm.cond_br":
            return [(term.successors[0], tuple(term.then_arguments)),
                    (term.successors[1], tuple(term.else_arguments))]
        if name == "llvm.switch":
            slots = [(term.successors[0], tuple(term.default_operands))]
            slots += list(zip(term.successors[1:], term.case_operand_lists()))
            return slots
        if name == "llvm.invoke":
            return [(term.normal_dest, tuple(term.normal_dest_operands)),
                    (term.unwind_dest, tuple(term.unwind_dest_operands))]
        if term.successors:
            raise _WriteError(f"unknown branch op '{name}'")
        return []

    def _collect_edges(self, blocks: list[Block]) -> None:
        for block in blocks:
            term = block.last_op
            if term is None:
                raise _WriteError(f"block {self.labels[block]} is empty (no terminator)")
            first_operands: dict[Block, Sequence[SSAValue]] = {}
            for slot, (dest, operands) in enumerate(self._successor_slots(term)):
                if dest not in self.labels:
                    raise _WriteError("branch to a block of another region")
                if len(operands) != len(dest.args):
                    raise _WriteError(
                        f"branch passes {len(operands)} values to a block with {len(dest.args)} arguments"
                    )
                source, target = self.labels[block], self.labels[dest]
                seen = first_operands.get(dest)
                if seen is not None and not _same_values(seen, operands):
                    # a second edge to dest with other values: split it (LLVM's phi
                    # has one value per predecessor block)
                    source = target = self._trampoline(block, slot, dest)
                elif seen is None:
                    first_operands[dest] = operands
                self.edge_labels[(id(term), slot)] = target
                self.incoming.setdefault(dest, []).append((source, operands))

    def _trampoline(self, block: Block, slot: int, dest: Block) -> str:
        label = f"{self.labels[block]}.split{slot}"
        self.trampolines.append(f"{label}:")
        self.trampolines.append(f"  br label %{self.labels[dest]}")
        return label

    def _phis(self, block: Block) -> None:
        edges = self.incoming.get(block, [])
        for position, arg in enumerate(block.args):
            entries = ", ".join(f"[ {self.val(ops[position])}, %{src} ]" for src, ops in edges)
            self.lines.append(f"  {self.namer.names[arg]} = phi {self.m.type(arg.type)} {entries}")

    def dest(self, term: Operation, slot: int) -> str:
        return "%" + self.edge_labels[(id(term), slot)]

    # -- instructions

    def _op(self, op: Operation) -> str:
        name = op.name
        if name in _INT_BINOPS:
            return self._int_binop(op, _INT_BINOPS[name])
        if name in _FLOAT_BINOPS:
            a, b = op.operands
            return f"{self.res(op)} = {_FLOAT_BINOPS[name]}{_fmf(op)} {self.typed(a)}, {self.val(b)}"
        if name in _CASTS:
            return self._cast(op, _CASTS[name])
        if name in _UNARY_INTRINSICS:
            return self._xdsl_intrinsic(op, _UNARY_INTRINSICS[name])
        handler = _OP_WRITERS.get(name)
        if handler is None:
            raise _WriteError(f"op '{name}' has no LLVM IR equivalent in the writer")
        return handler(self, op)

    def _int_binop(self, op: Operation, opcode: str) -> str:
        a, b = op.operands
        flags = ""
        if opcode in ("add", "sub", "mul", "shl"):
            flags = _overflow_text(llvm_ext.overflow_bits(op))
        elif opcode in ("udiv", "sdiv", "lshr", "ashr") and _prop(op, "isExact") is not None:
            flags = " exact"
        elif opcode == "or" and _prop(op, "isDisjoint") is not None:
            flags = " disjoint"
        return f"{self.res(op)} = {opcode}{flags} {self.typed(a)}, {self.val(b)}"

    def _cast(self, op: Operation, opcode: str) -> str:
        flags = ""
        if opcode == "trunc":
            flags = _overflow_text(llvm_ext.overflow_bits(op))
        elif opcode in ("zext", "uitofp") and _prop(op, "nonNeg") is not None:
            flags = " nneg"
        return f"{self.res(op)} = {opcode}{flags} {self.typed(op.operands[0])} to {self.m.type(op.results[0].type)}"

    def _fneg(self, op: Operation) -> str:
        return f"{self.res(op)} = fneg{_fmf(op)} {self.typed(op.operands[0])}"

    def _icmp(self, op: Operation) -> str:
        a, b = op.operands
        pred = _ICMP_NAMES[op.properties["predicate"].value.data]
        return f"{self.res(op)} = icmp {pred} {self.typed(a)}, {self.val(b)}"

    def _fcmp(self, op: Operation) -> str:
        a, b = op.operands
        pred = _FCMP_NAMES[op.properties["predicate"].value.data]
        return f"{self.res(op)} = fcmp{_fmf(op)} {pred} {self.typed(a)}, {self.val(b)}"

    def _select(self, op: Operation) -> str:
        c, a, b = op.operands
        return f"{self.res(op)} = select{_fmf(op)} {self.typed(c)}, {self.typed(a)}, {self.typed(b)}"

    def _alloca(self, op: Operation) -> str:
        text = f"{self.res(op)} = alloca {self.m.type(op.properties['elem_type'])}, {self.typed(op.operands[0])}"
        if (align := op.properties.get("alignment")) is not None and _int_value(align):
            text += f", align {_int_value(align)}"
        space = op.results[0].type.addr_space
        if isinstance(space, builtin.IntAttr) and space.data:
            text += f", addrspace({space.data})"
        return text

    def _memory_tail(self, op: Operation, ordering: int) -> str:
        text = ""
        if ordering:
            text += f" {_ORDERINGS[ordering]}"
        align = op.properties.get("alignment")
        if align is not None:
            text += f", align {_int_value(align)}"
        elif ordering:
            raise _WriteError("atomic load/store needs an explicit alignment")
        return text

    def _load(self, op: Operation) -> str:
        ordering = _int_value(op.properties.get("ordering"))
        volatile = " volatile" if _prop(op, "volatile_") is not None else ""
        atomic = " atomic" if ordering else ""
        ty = self.m.type(op.results[0].type)
        return (f"{self.res(op)} = load{atomic}{volatile} {ty}, {self.typed(op.operands[0])}"
                + self._memory_tail(op, ordering) + self.m.alias_metadata(op))

    def _store(self, op: Operation) -> str:
        ordering = _int_value(op.properties.get("ordering"))
        volatile = " volatile" if _prop(op, "volatile_") is not None else ""
        atomic = " atomic" if ordering else ""
        value, ptr = op.operands
        return (f"store{atomic}{volatile} {self.typed(value)}, {self.typed(ptr)}" + self._memory_tail(op, ordering)
                + self.m.alias_metadata(op))

    def _gep(self, op: Operation) -> str:
        elem = op.properties["elem_type"]
        flags_bits = _int_value(op.properties.get("noWrapFlags"))
        flags = ""
        if _gep_is_inbounds(op):
            flags += " inbounds"
        elif flags_bits & 2:
            flags += " nusw"
        if flags_bits & 4:
            flags += " nuw"
        dynamic = iter(op.operands[1:])
        parts = []
        ty = elem
        for position, raw in enumerate(op.properties["rawConstantIndices"].get_values()):
            if raw == llvm.GEP_USE_SSA_VAL:
                index_value = next(dynamic)
                parts.append(self.typed(index_value))
                if position > 0:
                    ty = _index_into(ty, 0) if not isinstance(
                        ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType)) else _struct_dynamic(ty)
            else:
                is_struct = position > 0 and isinstance(ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType))
                parts.append(f"{'i32' if is_struct else 'i64'} {raw}")
                if position > 0:
                    ty = _index_into(ty, raw)
        indices = "".join(", " + p for p in parts)
        return f"{self.res(op)} = getelementptr{flags} {self.m.type(elem)}, {self.typed(op.operands[0])}{indices}"

    def _extractvalue(self, op: Operation) -> str:
        positions = ", ".join(str(p) for p in op.properties["position"].get_values())
        return f"{self.res(op)} = extractvalue {self.typed(op.operands[0])}, {positions}"

    def _insertvalue(self, op: Operation) -> str:
        container, value = op.operands
        positions = ", ".join(str(p) for p in op.properties["position"].get_values())
        return f"{self.res(op)} = insertvalue {self.typed(container)}, {self.typed(value)}, {positions}"

    def _extractelement(self, op: Operation) -> str:
        vector, index = op.operands
        return f"{self.res(op)} = extractelement {self.typed(vector)}, {self.typed(index)}"

    def _insertelement(self, op: Operation) -> str:
        vector, value, index = op.operands
        return f"{self.res(op)} = insertelement {self.typed(vector)}, {self.typed(value)}, {self.typed(index)}"

    def _shufflevector(self, op: Operation) -> str:
        v1, v2 = op.operands
        lanes = list(op.properties["mask"].get_values())
        mask = ", ".join("i32 poison" if lane < 0 else f"i32 {lane}" for lane in lanes)
        return (f"{self.res(op)} = shufflevector {self.typed(v1)}, {self.typed(v2)}, "
                f"<{len(lanes)} x i32> <{mask}>")

    def _freeze(self, op: Operation) -> str:
        return f"{self.res(op)} = freeze {self.typed(op.operands[0])}"

    def _va_arg(self, op: Operation) -> str:
        return f"{self.res(op)} = va_arg {self.typed(op.operands[0])}, {self.m.type(op.results[0].type)}"

    def _atomic_suffix(self, op: Operation) -> str:
        text = ""
        scope = op.properties.get("syncscope")
        if isinstance(scope, StringAttr):
            text += f" syncscope({_string(scope.data)})"
        return text

    def _atomicrmw(self, op: Operation) -> str:
        ptr, value = op.operands
        volatile = " volatile" if "volatile_" in op.properties else ""
        text = (f"{self.res(op)} = atomicrmw{volatile} {op.properties['bin_op'].data} "
                f"{self.typed(ptr)}, {self.typed(value)}{self._atomic_suffix(op)} "
                f"{_ORDERINGS[_int_value(op.properties['ordering'])]}")
        if (align := op.properties.get("alignment")) is not None:
            text += f", align {_int_value(align)}"
        return text

    def _cmpxchg(self, op: Operation) -> str:
        ptr, cmp, new = op.operands
        weak = " weak" if "weak" in op.properties else ""
        volatile = " volatile" if "volatile_" in op.properties else ""
        text = (f"{self.res(op)} = cmpxchg{weak}{volatile} {self.typed(ptr)}, {self.typed(cmp)}, "
                f"{self.typed(new)}{self._atomic_suffix(op)} "
                f"{_ORDERINGS[_int_value(op.properties['success_ordering'])]} "
                f"{_ORDERINGS[_int_value(op.properties['failure_ordering'])]}")
        if (align := op.properties.get("alignment")) is not None:
            text += f", align {_int_value(align)}"
        return text

    def _fence(self, op: Operation) -> str:
        return f"fence{self._atomic_suffix(op)} {_ORDERINGS[_int_value(op.properties['ordering'])]}"

    def _call(self, op: Operation) -> str:
        prefix = f"{self.res(op)} = " if op.results else ""
        tail = op.properties.get("TailCallKind")
        tail_text = ""
        if isinstance(tail, llvm.TailCallKindAttr) and tail.data != llvm.TailCallKind.NONE:
            tail_text = f"{tail.data.value} "
        return f"{prefix}{tail_text}call{_fmf(op)}{self.call_site(op, list(op.operands))}"

    def call_site(self, op: Operation, operands: list[SSAValue]) -> str:
        """What a call and an invoke of ``op`` share: `` <cc> <ret attrs> <type> <callee>(<args>)``;
        ``operands`` start with the function pointer of an indirect call."""
        callee = op.properties.get("callee")
        results = op.results
        ret_ty = results[0].type if results else None
        ret = self.m.type(ret_ty) if ret_ty is not None else "void"
        var_type = op.properties.get("var_callee_type")
        if callee is not None:
            target = _symbol("@", callee.root_reference.data)
            args = operands
            self.m.callee(callee.root_reference.data, ret_ty, [a.type for a in args], var_type)
        else:
            target = self.val(operands[0])
            args = operands[1:]
        fn_ty = ret
        if isinstance(var_type, llvm.LLVMFunctionType):
            fn_ty = self.m.type(var_type)
        arg_attrs = _prop(op, "arg_attrs")
        attr_list = arg_attrs.data if isinstance(arg_attrs, ArrayAttr) else ()
        arg_texts = []
        for index, arg in enumerate(args):
            attrs = self.m._param_attrs(attr_list[index]) if index < len(attr_list) else ""
            arg_texts.append(f"{self.m.type(arg.type)}{' ' + attrs if attrs else ''} {self.val(arg)}")
        cconv = op.properties.get("CConv")
        cconv_text = ""
        if isinstance(cconv, llvm.CallingConventionAttr) and cconv.cconv_name != "ccc":
            cconv_text = f" {cconv.cconv_name}"
        res_attrs = _prop(op, "res_attrs")
        res_text = ""
        if isinstance(res_attrs, ArrayAttr) and res_attrs.data:
            res_text = self.m._param_attrs(res_attrs.data[0])
            res_text = f" {res_text}" if res_text else ""
        return f"{cconv_text}{res_text} {fn_ty} {target}({', '.join(arg_texts)})"

    def _call_intrinsic(self, op: Operation) -> str:
        if SCOPE_DECL in op.attributes:
            return self.m.scope_decl(op)
        name = op.properties["intrin"].data
        bundles = op.properties.get("op_bundle_sizes")
        if bundles is not None and len(bundles.get_values()):
            raise _WriteError("operand bundles on intrinsic calls are not supported")
        args = list(op.args)
        ret_ty = op.results[0].type if op.results else None
        self.m.intrinsic(name, ret_ty, [a.type for a in args])
        return self._intrinsic_call(op, name, ret_ty, args)

    def _intrinsic_call(self, op: Operation, name: str, ret_ty: Attribute | None,
                        args: Sequence[SSAValue]) -> str:
        ret = self.m.type(ret_ty) if ret_ty is not None else "void"
        prefix = f"{self.res(op)} = " if op.results else ""
        arg_text = ", ".join(self.typed(a) for a in args)
        return f"{prefix}call{_fmf(op)} {ret} {_symbol('@', name)}({arg_text})"

    def _xdsl_intrinsic(self, op: Operation, base: str) -> str:
        ret_ty = op.results[0].type
        name = f"llvm.{base}.{_mangle(ret_ty)}"
        args = list(op.operands)
        self.m.intrinsic(name, ret_ty, [a.type for a in args])
        return self._intrinsic_call(op, name, ret_ty, args)

    def _stacksave(self, op: Operation) -> str:
        ret_ty = op.results[0].type
        name = f"llvm.stacksave.{_mangle(ret_ty)}"
        self.m.intrinsic(name, ret_ty, [])
        return self._intrinsic_call(op, name, ret_ty, [])

    def _stackrestore(self, op: Operation) -> str:
        ptr = op.operands[0]
        name = f"llvm.stackrestore.{_mangle(ptr.type)}"
        self.m.intrinsic(name, None, [ptr.type])
        return self._intrinsic_call(op, name, None, [ptr])

    def _reduce(self, op: Operation) -> str:
        start, vector = op.operands
        kind = op.name.rsplit(".", 1)[1]
        name = f"llvm.vector.reduce.{kind}.{_mangle(vector.type)}"
        self.m.intrinsic(name, start.type, [start.type, vector.type])
        return self._intrinsic_call(op, name, start.type, [start, vector])

    # -- terminators

    def _return(self, op: Operation) -> str:
        if op.operands:
            return f"ret {self.typed(op.operands[0])}"
        return "ret void"

    def _br(self, op: Operation) -> str:
        return f"br label {self.dest(op, 0)}" + self.m.loop_metadata(op)

    def _cond_br(self, op: Operation) -> str:
        return (f"br {self.typed(op.operands[0])}, label {self.dest(op, 0)}, label {self.dest(op, 1)}"
                + self.m.loop_metadata(op))

    def _switch(self, op: Operation) -> str:
        value = op.operands[0]
        ty = self.m.type(value.type)
        cases = "".join(
            f"\n    {ty} {_int_literal(v, value.type)}, label {self.dest(op, i + 1)}"
            for i, v in enumerate(op.case_value_list())
        )
        return f"switch {self.typed(value)}, label {self.dest(op, 0)} [{cases}\n  ]"

    def _unreachable(self, op: Operation) -> str:
        return "unreachable"


def _same_values(a: Sequence[SSAValue], b: Sequence[SSAValue]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _struct_dynamic(ty: Attribute) -> Attribute:
    raise _WriteError(f"getelementptr into struct {ty} needs a constant index")


_OP_WRITERS: dict[str, Callable[[_FunctionWriter, Operation], str]] = {
    "llvm.fneg": _FunctionWriter._fneg,
    "llvm.icmp": _FunctionWriter._icmp,
    "llvm.fcmp": _FunctionWriter._fcmp,
    "llvm.select": _FunctionWriter._select,
    "llvm.alloca": _FunctionWriter._alloca,
    "llvm.load": _FunctionWriter._load,
    "llvm.store": _FunctionWriter._store,
    "llvm.getelementptr": _FunctionWriter._gep,
    "llvm.extractvalue": _FunctionWriter._extractvalue,
    "llvm.insertvalue": _FunctionWriter._insertvalue,
    "llvm.extractelement": _FunctionWriter._extractelement,
    "llvm.insertelement": _FunctionWriter._insertelement,
    "llvm.shufflevector": _FunctionWriter._shufflevector,
    "llvm.freeze": _FunctionWriter._freeze,
    "llvm.va_arg": _FunctionWriter._va_arg,
    "llvm.atomicrmw": _FunctionWriter._atomicrmw,
    "llvm.cmpxchg": _FunctionWriter._cmpxchg,
    "llvm.fence": _FunctionWriter._fence,
    "llvm.call": _FunctionWriter._call,
    "llvm.call_intrinsic": _FunctionWriter._call_intrinsic,
    "llvm.intr.stacksave": _FunctionWriter._stacksave,
    "llvm.intr.stackrestore": _FunctionWriter._stackrestore,
    "llvm.intr.vector.reduce.fadd": _FunctionWriter._reduce,
    "llvm.intr.vector.reduce.fmul": _FunctionWriter._reduce,
    "llvm.return": _FunctionWriter._return,
    "llvm.br": _FunctionWriter._br,
    "llvm.cond_br": _FunctionWriter._cond_br,
    "llvm.switch": _FunctionWriter._switch,
    "llvm.unreachable": _FunctionWriter._unreachable,
    **EH_WRITERS,
}
