"""Lexing one line of LLVM IR (part of :mod:`zymase.llvm.reader`): the tokens, the
cursor every parser of the package walks them with, the internal parse failure, and
the decoding of quoted names and string literals."""

from __future__ import annotations

import re


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
