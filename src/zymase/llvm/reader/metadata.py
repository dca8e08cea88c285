"""Module metadata, parsed lazily on first use (part of :mod:`zymase.llvm.reader`):
``!DILocation`` -> FileLineColLoc, TBAA access tags -> type names, ``!llvm.loop``
-> loop hints, scoped-noalias lists -> scope names."""

from __future__ import annotations

import re

from zymase.ir import Attribute, FileLineColLoc, StringAttr, builtin, in_system_header
from zymase.llvm.loop_hints import LOOP_HINT_TYPES, hint_name
from zymase.llvm.noalias_scopes import scope_name
from zymase.llvm.reader.lexer import _Cursor, _ParseFailure, _string_literal


_DILOCATION_RE = re.compile(r"!\d+ = !DILocation\(line: (\d+)(?:, column: (\d+))?, scope: (!\d+)")
_INLINED_AT_RE = re.compile(r"inlinedAt: (!\d+)")


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
        """FileLineColLoc for a ``!DILocation`` reference (None for line 0 / unknown).
        Code clang inlined from a system header (libstdc++'s containers, the C
        library's inline functions) is located at the user's line it was inlined into,
        the first one up its ``inlinedAt`` chain outside such headers (if any)."""
        if ref in self.locations:
            return self.locations[ref]
        loc = self._own_location(ref)
        if in_system_header(loc):
            inlined_at = ref
            for _ in range(64):  # inlining chains are short; the bound guards against cycles
                found = _INLINED_AT_RE.search(self.lines.get(inlined_at, ""))
                if found is None:
                    break
                inlined_at = found.group(1)
                outer = self._own_location(inlined_at)
                if outer is not None and not in_system_header(outer):
                    loc = outer
                    break
        self.locations[ref] = loc
        return loc

    def _own_location(self, ref: str) -> Attribute | None:
        """The file, line and column of one ``!DILocation`` node itself."""
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
