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
from zymase.llvm.loop_hints import LOOP_HINTS_ATTR
from zymase.llvm.noalias_scopes import DECL_INTRINSIC, SRC_ALIAS_SCOPE, SRC_NOALIAS, scope_decl
from zymase.llvm.reader.attributes import (
    _CCONVS,
    _DLL,
    _LINKAGES,
    _PREEMPTION,
    _VISIBILITY,
    _attr_dict_array,
    _ends_inline_fn_attrs,
    _parse_fn_attr_items,
    _parse_param_attrs,
)
from zymase.llvm.reader.constants import (
    _BINOP_FLAGS,
    _CAST_OPS,
    _FMF_WORDS,
    _GEP_FLAGS,
    Const,
    WideFloat,
    _bits_float,
    _const_type,
    _parse_const,
)
from zymase.llvm.reader.lexer import Token, _Cursor, _ParseFailure, _string_literal, _symbol_name, _tokenize
from zymase.llvm.reader.metadata import _Metadata
from zymase.llvm.reader.types import _I32, _I64, _PTR, _element_type, _is_float_type, _Types

__all__ = ["read_llvm_ir"]

_HINT_UNSUPPORTED = (
    "zymase reads the LLVM IR that clang emits for plain C/C++ without exceptions; "
    "rewrite or outline the construct, or compile that part separately"
)


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
