"""The module-level reader (part of :mod:`zymase.llvm.reader`): :func:`read_llvm_ir`
lets LLVM verify and print the text once, then reads the printed module line by
line: a prescan (type definitions, attribute groups, metadata, global address
spaces), globals, ``target`` lines, function headers and declarations; each
function body goes to :class:`~zymase.llvm.reader.function_reader._FunctionReader`."""

from __future__ import annotations

import re

from zymase.errors import ZymaseError
from zymase.ir import (
    ArrayAttr,
    Attribute,
    DictionaryAttr,
    FloatAttr,
    ModuleOp,
    Operation,
    Region,
    StringAttr,
    SymbolRefAttr,
    builtin,
    llvm,
)
from zymase.ir.llvm_eh import PERSONALITY_ATTR
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
from zymase.llvm.reader.constants import Const, _bits_float, _parse_const
from zymase.llvm.reader.function_reader import _FunctionReader
from zymase.llvm.reader.lexer import Token, _Cursor, _ParseFailure, _string_literal, _symbol_name, _tokenize
from zymase.llvm.reader.metadata import _Metadata
from zymase.llvm.reader.types import _I32, _I64, _PTR, _UNIT, _Types, function_type, int_attr


_HINT_UNSUPPORTED = (
    "zymase reads the LLVM IR that clang emits for plain C/C++ on Linux; "
    "rewrite or outline the construct, or compile that part separately"
)


_INTRINSIC_DECL_RE = re.compile(r'declare [^@"]*@"?llvm\.')


def read_llvm_ir(text: str, filename: str = "<input>") -> ModuleOp:
    """Read LLVM IR text into an xDSL ``builtin.module`` of ``llvm`` dialect ops.

    The representation is described in the docstring of :mod:`zymase.llvm.reader`.
    Malformed IR or an unsupported construct raises :class:`~zymase.errors.ZymaseError`.
    """
    canonical = _canonicalize(text, filename)
    return _ModuleReader(canonical, filename).read()


def _canonicalize(text: str, filename: str) -> str:
    """Parse + verify with LLVM itself, and print the module once (llvm/modules: the
    release library's LLVM when it is there, llvmlite's otherwise)."""
    from zymase.llvm.modules import Workspace

    with Workspace(fresh=True) as space:
        try:
            module = space.parse(text, fill_target=False)
        except ZymaseError as exc:
            message = " ".join(exc.llvm_message.split()) or "LLVM rejected the module"
            raise ZymaseError(
                f"malformed LLVM IR: {message}",
                location=filename,
                hint="check the .ll text (llvm-as/opt -verify report the same problem); "
                "IR from a clang newer than LLVM 22 may not be readable",
            ) from None
        return str(module)


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
            "addr_space": int_attr(addr_space, _I32),
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
                props["dso_local"] = _UNIT
            elif word in _VISIBILITY:
                if _VISIBILITY[word]:
                    props["visibility_"] = int_attr(_VISIBILITY[word], _I64)
            elif word == "thread_local":  # the TLS model is an optimisation hint
                props["thread_local_"] = _UNIT
                if cur.text() == "(":
                    cur.balanced_text()
            elif word in ("unnamed_addr", "local_unnamed_addr"):
                props["unnamed_addr"] = int_attr(2 if word == "unnamed_addr" else 1, _I64)
            elif word == "addrspace":
                cur.expect("(")
                addr_space = cur.expect_int()
                cur.expect(")")
            elif word == "externally_initialized":
                attrs["externally_initialized"] = _UNIT
            elif word in ("global", "constant"):
                if word == "constant":
                    props["constant"] = _UNIT
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
            return int_attr(init[2], ty)
        if tag == "float" and not isinstance(ty, (builtin.Float80Type, builtin.Float128Type)):
            return FloatAttr(_bits_float(init[2]), ty)  # (xDSL cannot print f80/f128 floats)
        if tag == "cstr":
            return StringAttr(init[2])
        return None

    def _global_tail(self, cur: _Cursor, props: dict, attrs: dict) -> None:
        while cur.accept(","):
            word = cur.next()[1]
            if word == "align":
                props["alignment"] = int_attr(cur.expect_int(), _I64)
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
        props: dict[str, Attribute] = {"visibility_": int_attr(0, _I64)}
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
            "function_type": function_type(arg_types, result_type, variadic),
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
                attrs["dso_local"] = _UNIT
            elif word in _VISIBILITY:
                props["visibility_"] = int_attr(_VISIBILITY[word], _I64)
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
                props["unnamed_addr"] = int_attr(2 if word == "unnamed_addr" else 1, _I64)
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
            elif word == "personality":  # the function that landing pads consult
                cur.next()
                self.types.parse(cur)
                personality = _parse_const(cur, _PTR, self.types)
                if personality[0] != "global":
                    raise _ParseFailure("a personality that is not a function name is not supported")
                attrs[PERSONALITY_ATTR] = SymbolRefAttr(personality[1])
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
