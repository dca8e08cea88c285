"""Importing xDSL's dialects without two costs zymase never uses.

Importing the dialects is most of a ``zymase cc`` start-up and of a first ``zymase.grad``
call's overhead (docs/architecture.md, section 1, *Compile time*). Two parts of it serve
nothing on the C and Numba paths, and :func:`importing_xdsl` leaves them out while
zymase imports dialects (``zymase.ir`` and its on-demand dialects):

- **Assembly formats.** xDSL parses an op's declarative ``assembly_format`` into a
  format program when the class is defined (``irdl_op_definition``): about 180 formats
  in the dialects ``zymase.ir`` loads, 40-45 ms of every process, while the C and Numba
  paths parse and print no MLIR text with most of those ops. Inside the window each
  format is parsed on its first use (:class:`_LazyFormat`) into the program xDSL would
  have made, used the same way. The one difference: a malformed format fails at its
  first use instead of at the class definition (``tests/python/test_xdsl_import.py``
  parses every format of the dialects zymase defines or loads, so none is).
- **asyncio.** ``typing_extensions.deprecated`` imports asyncio (20-25 ms) the first
  time it decorates a function, to mark coroutine functions; xDSL decorates a few plain
  functions at import. Inside the window ``deprecated`` is :class:`_Deprecated`, which
  wraps a plain function as typing_extensions does and asks :mod:`inspect` (imported
  already), not asyncio, whether it is a coroutine function (those go to
  typing_extensions' own code).

Outside the window xDSL and typing_extensions are as they come: classes the user
defines with xDSL keep the eager behaviour.
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from contextlib import contextmanager

import typing_extensions

_TYPING_DEPRECATED = typing_extensions.deprecated
_lock = threading.Lock()
_depth = 0


class _LazyFormat:
    """An op's assembly format, parsed into xDSL's ``FormatProgram`` on first use."""

    __slots__ = ("_text", "_op_def", "_program")

    def __init__(self, text: str, op_def) -> None:
        self._text, self._op_def, self._program = text, op_def, None

    def program(self):
        if self._program is None:
            self._program = _EAGER_FORMAT(self._text, self._op_def)
        return self._program

    def parse(self, parser, op_type):
        return self.program().parse(parser, op_type)

    def print(self, printer, op):
        return self.program().print(printer, op)


#: every format deferred so far (the test suite parses them all)
DEFERRED: list[_LazyFormat] = []


def _lazy_format(text: str, op_def) -> _LazyFormat:
    lazy = _LazyFormat(text, op_def)
    DEFERRED.append(lazy)
    return lazy


class _Deprecated(_TYPING_DEPRECATED):
    """typing_extensions' ``deprecated`` without importing asyncio for a plain function."""

    def __call__(self, arg, /):
        if isinstance(arg, type) or not callable(arg) or self.category is None or inspect.iscoroutinefunction(arg):
            return super().__call__(arg)
        msg, category, stacklevel = self.message, self.category, self.stacklevel

        @functools.wraps(arg)
        def wrapper(*args, **kwargs):
            warnings.warn(msg, category=category, stacklevel=stacklevel + 1)
            return arg(*args, **kwargs)

        arg.__deprecated__ = wrapper.__deprecated__ = msg
        return wrapper


# (the module of format programs imports xDSL's builtin dialect, which decorates a function)
typing_extensions.deprecated = _Deprecated
try:
    from xdsl.irdl import declarative_assembly_format as _formats
finally:
    typing_extensions.deprecated = _TYPING_DEPRECATED
_EAGER_FORMAT = _formats.FormatProgram.from_str


def begin() -> None:
    """Open the window (nested openings count; :func:`end` closes one)."""
    global _depth
    with _lock:
        _depth += 1
        if _depth == 1:
            _formats.FormatProgram.from_str = staticmethod(_lazy_format)
            typing_extensions.deprecated = _Deprecated


def end() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            _formats.FormatProgram.from_str = staticmethod(_EAGER_FORMAT)
            typing_extensions.deprecated = _TYPING_DEPRECATED


@contextmanager
def importing_xdsl():
    """Import xDSL dialects inside this block (module doc)."""
    begin()
    try:
        yield
    finally:
        end()
