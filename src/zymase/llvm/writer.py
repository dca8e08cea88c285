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

The module writer (this file: types, globals, function headers and attributes,
declarations, metadata) uses :mod:`~zymase.llvm.writer_text` for the spelling of names
and numbers, :mod:`~zymase.llvm.writer_constants` for constant literals and
:mod:`~zymase.llvm.writer_instructions` for function bodies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from zymase.errors import ZymaseError
from zymase.ir import (ArrayAttr, Attribute, Block, DictionaryAttr, FloatAttr, IntegerAttr,
                       IntegerType, ModuleOp, Operation, StringAttr, SymbolRefAttr, UnitAttr,
                       builtin, llvm, llvm_ext)
from zymase.llvm.writer_text import (WRITER_BUG_HINT, WriteError, encode_text, float_literal,
                                     int_literal, int_value, metadata_string, prop_or_attr,
                                     quote_bytes, string_text, symbol_text)
from zymase.llvm.writer_constants import ConstFolder
from zymase.llvm.writer_instructions import FunctionWriter, Namer
from zymase.ir.llvm_eh import PERSONALITY_ATTR
from zymase.llvm.loop_hints import LOOP_HINT_TYPES, LOOP_HINTS_ATTR
from zymase.llvm.noalias_scopes import DECL_INTRINSIC, SCOPE_DECL, SRC_ALIAS_SCOPE, SRC_NOALIAS, scope_domain

__all__ = ["write_llvm_ir"]


def write_llvm_ir(module: ModuleOp) -> str:
    """Print an xDSL module of ``llvm`` dialect ops as LLVM IR text."""
    return ModuleWriter(module).write()


_PARAM_INT_WORDS = {"llvm.dereferenceable": "dereferenceable", "llvm.dereferenceable_or_null":
                    "dereferenceable_or_null", "llvm.alignstack": "alignstack"}


# ----------------------------------------------------------------- module


class ModuleWriter:
    def __init__(self, module: ModuleOp):
        self.module = module
        self.type_cache: dict[Attribute, str] = {}
        #: the same by the type object's identity (type -> its text, the type kept so that
        #: its id stays its own): an xDSL attribute's hash is computed anew at every
        #: lookup, a few microseconds, and every operand and result asks for its type's text
        self._type_by_id: dict[int, tuple[Attribute, str]] = {}
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
            self.intrinsics[DECL_INTRINSIC] = f"void {symbol_text('@', DECL_INTRINSIC)}(metadata)"
        scope = op.attributes[SCOPE_DECL].data
        return f"call void {symbol_text('@', DECL_INTRINSIC)}(metadata !{self._scope_list((scope,))})"

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
                self.loop_hint_ids[key] = self._node(f"!{{{metadata_string(name)}{operand}}}")
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
                    self.scope_ids[n] = self._node(f"distinct !{{!{k}, !{domain}, {metadata_string(n)}}}")
                ids.append(f"!{self.scope_ids[n]}")
            self.scope_list_ids[names] = self._node("!{" + ", ".join(ids) + "}")
        return self.scope_list_ids[names]

    def _scope_domain(self, name: str) -> int:
        if name not in self.scope_domains:
            k = len(self.metadata)
            self.scope_domains[name] = self._node(f"distinct !{{!{k}, {metadata_string(name)}}}")
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
            header.append(f"target datalayout = {string_text(layout.data)}")
        if isinstance(triple, StringAttr):
            header.append(f"target triple = {string_text(triple.data)}")
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
        except WriteError as exc:
            name = op.properties.get("sym_name")
            raise ZymaseError(
                f"cannot write LLVM IR: {exc}",
                construct=op.name,
                function=function or (name.data if isinstance(name, StringAttr) else None),
                hint=WRITER_BUG_HINT,
            ) from None

    # -- types

    def type(self, ty: Attribute) -> str:
        known = self._type_by_id.get(id(ty))
        if known is not None and known[0] is ty:
            return known[1]
        text = self.type_cache.get(ty)
        if text is None:
            text = self.type_cache[ty] = self._type_text(ty)
        self._type_by_id[id(ty)] = (ty, text)
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
                    raise WriteError(f"two different struct types are named '{name}'")
                return symbol_text("%", name)
            return self._struct_body(ty)
        if isinstance(ty, builtin.VectorType):
            shape = ty.get_shape()
            if len(shape) != 1 or ty.get_num_scalable_dims():
                raise WriteError(f"only fixed 1-D vectors exist in LLVM IR, not {ty}")
            return f"<{shape[0]} x {self.type(ty.element_type)}>"
        if isinstance(ty, llvm.LLVMFunctionType):
            params = [self.type(t) for t in ty.inputs.data]
            if ty.is_variadic:
                params.append("...")
            return f"{self.type(ty.output)} ({', '.join(params)})"
        raise WriteError(f"type {ty} has no LLVM IR equivalent")

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
                    lines.append(f"{symbol_text('%', name)} = type {self._struct_body(ty)}")
        return lines

    # -- globals

    def _global(self, op: Operation) -> str:
        props = op.properties
        name = props["sym_name"].data
        ty = props["global_type"]
        linkage = props["linkage"].linkage.data if "linkage" in props else "external"
        init = self._global_init(op, ty)
        words = [f"{symbol_text('@', name)} ="]
        if init is None:
            words.append("external" if linkage not in ("extern_weak",) else linkage)
        elif linkage != "external":
            words.append(linkage)
        if "dso_local" in props or "dso_local" in op.attributes:
            words.append("dso_local")
        visibility = int_value(props.get("visibility_"))
        if visibility and linkage not in ("private", "internal"):
            words.append({1: "hidden", 2: "protected"}.get(visibility, ""))
        if "thread_local_" in props:
            words.append("thread_local")
        unnamed = int_value(props.get("unnamed_addr"))
        if unnamed:
            words.append("unnamed_addr" if unnamed == 2 else "local_unnamed_addr")
        space = int_value(props.get("addr_space"))
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
            text += f", section {string_text(section.data)}"
        if (align := props.get("alignment")) is not None:
            text += f", align {int_value(align)}"
        return text

    def _global_init(self, op: Operation, ty: Attribute) -> str | None:
        verbatim = op.attributes.get("zymase.llvm_init")
        if isinstance(verbatim, StringAttr):
            return verbatim.data
        value = op.properties.get("value")
        if value is not None:
            return self.attr_literal(value, ty)
        body = op.regions[0] if op.regions else None
        if body is not None and body.blocks:
            return self._region_init(body.blocks[0])
        linkage = op.properties["linkage"].linkage.data
        if linkage in ("external", "extern_weak"):
            return None
        return "zeroinitializer"

    def attr_literal(self, value: Attribute, ty: Attribute) -> str:
        """A constant attribute (int/float/string/dense) as an LLVM constant of type ty."""
        if isinstance(value, IntegerAttr):
            return int_literal(value.value.data, ty)
        if isinstance(value, FloatAttr):
            return float_literal(value.value.data, ty)
        if isinstance(value, StringAttr):
            data = encode_text(value.data)
            if isinstance(ty, llvm.LLVMArrayType) and ty.size.data > len(data):
                data += b"\0" * (ty.size.data - len(data))
            return f'c"{quote_bytes(data)}"'
        if isinstance(value, builtin.DenseIntOrFPElementsAttr):
            return self._dense_literal(value, ty)
        raise WriteError(f"cannot print constant {value} as LLVM IR")

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
            raise WriteError(f"dense constant for non-vector type {ty}")
        return self._flat_literal(values, elem_ty, open_, close)

    def _flat_literal(self, values: Sequence, elem_ty: Attribute, open_: str, close: str) -> str:
        elem = self.type(elem_ty)
        return open_ + ", ".join(f"{elem} {self._scalar_literal(v, elem_ty)}" for v in values) + close

    @staticmethod
    def _scalar_literal(value, ty: Attribute) -> str:
        if isinstance(ty, IntegerType):
            return int_literal(int(value), ty)
        return float_literal(float(value), ty)

    def _region_init(self, block: Block) -> str:
        """Initializer region of a global (MLIR style): fold it to an LLVM constant."""
        last = block.last_op
        if last is None or last.name != "llvm.return" or not last.operands:
            raise WriteError("global initializer region must end in llvm.return of a value")
        return ConstFolder(self).literal(last.operands[0])

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
        visibility = int_value(props.get("visibility_"))
        if visibility and linkage not in ("private", "internal"):
            words.append({1: "hidden", 2: "protected"}.get(visibility, ""))
        cconv = props.get("CConv")
        if isinstance(cconv, llvm.CallingConventionAttr) and cconv.cconv_name != "ccc":
            words.append(cconv.cconv_name)
        res_attrs = prop_or_attr(op, "res_attrs")
        if isinstance(res_attrs, ArrayAttr) and res_attrs.data:
            words.append(self._param_attrs(res_attrs.data[0]))
        words.append(self.type(fn_type.output))
        arg_attrs = prop_or_attr(op, "arg_attrs")
        arg_attr_list = arg_attrs.data if isinstance(arg_attrs, ArrayAttr) else ()
        namer = Namer() if not is_decl else None
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
        words.append(f"{symbol_text('@', name)}({', '.join(params)})")
        unnamed = int_value(props.get("unnamed_addr"))
        if unnamed:
            words.append("unnamed_addr" if unnamed == 2 else "local_unnamed_addr")
        fn_attrs = self._function_attributes(op)
        if fn_attrs:
            words.append(fn_attrs)
        section = op.attributes.get("section")
        if isinstance(section, StringAttr):
            words.append(f"section {string_text(section.data)}")
        personality = op.attributes.get(PERSONALITY_ATTR)
        if isinstance(personality, SymbolRefAttr) and not is_decl:
            name_text = personality.root_reference.data
            self.callee(name_text, None, [], llvm.LLVMFunctionType([], IntegerType(32), True))
            words.append(f"personality ptr {symbol_text('@', name_text)}")
        header = " ".join(w for w in words if w)
        if is_decl:
            return header
        body = FunctionWriter(self, op, namer).write()
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

        passthrough = prop_or_attr(op, "passthrough")
        if isinstance(passthrough, ArrayAttr):
            for item in passthrough.data:
                if isinstance(item, StringAttr):
                    add(item.data, item.data.split("(", 1)[0])
                elif isinstance(item, ArrayAttr) and len(item.data) == 2:
                    key, value = item.data
                    if isinstance(key, StringAttr) and isinstance(value, StringAttr):
                        text = string_text(key.data) + (f"={string_text(value.data)}" if value.data else "")
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
                add(f"{string_text(key)}={string_text(value.data)}", '"' + key)
        features = props.get("target_features")
        if isinstance(features, llvm.TargetFeaturesAttr):
            joined = ",".join(f.data for f in features.features.data)
            add(f'"target-features"={string_text(joined)}', '"target-features')
        frame_pointer = props.get("frame_pointer")
        if isinstance(frame_pointer, llvm.FramePointerKindAttr):
            add(f'"frame-pointer"={string_text(str(frame_pointer.data.value))}', '"frame-pointer')
        return " ".join(items)

    # -- declarations gathered while writing bodies

    def intrinsic(self, name: str, result: Attribute | None, args: Sequence[Attribute]) -> None:
        if name not in self.intrinsics:
            ret = self.type(result) if result is not None else "void"
            params = ", ".join(self.type(t) for t in args)
            self.intrinsics[name] = f"{ret} {symbol_text('@', name)}({params})"

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
        self.auto_declarations[name] = f"{ret} {symbol_text('@', name)}({', '.join(params)})"
