"""Importing xDSL's dialects without work zymase never uses or repeats.

Importing the dialects is most of a ``zymase cc`` start-up and of a first ``zymase.grad``
call's overhead (docs/architecture.md, section 1, *Compile time*). Three parts of it
serve nothing on the C and Numba paths or are done twice, and :func:`importing_xdsl`
leaves them out while zymase imports dialects (``zymase.ir`` and its on-demand dialects)
and while a build runs the engine (``frontends/c._import_differentiate_export``: the
engine's modules are imported there on first use, and their dataclasses, about 15 on a C
build, get their methods' code compiled once as xDSL's do, 0.5-1 ms a class before):

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
- **Dataclass methods compiled in every process.** xDSL's attributes and many of its
  helpers are dataclasses, whose ``__init__``, ``__eq__``, ``__hash__``, ``__setattr__``
  ... the :mod:`dataclasses` module writes as source text and compiles one by one (about
  1,250 of them, 635 distinct: about a quarter of the import). Inside the window
  ``dataclasses`` executes each distinct text's code object, compiled once
  (:func:`_exec_compiled_once`): the same code, executed in the same globals and
  namespace, gives the function ``exec`` of the text would have. The code objects are
  kept between processes as Python keeps bytecode (:func:`_code_file`: beside this
  module's ``.pyc``, named with the interpreter's tag, checked by a SHA-256 of the
  contents and by Python's bytecode magic number, written only where Python writes
  bytecode); a file that fails either check is ignored and written again.

Outside the window xDSL, typing_extensions and dataclasses are as they come: classes
the user defines with xDSL keep the eager behaviour.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import inspect
import marshal
import os
import sys
import tempfile
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path

import typing_extensions

_TYPING_DEPRECATED = typing_extensions.deprecated
_lock = threading.RLock()  # (re-entrant: the first opening imports xDSL modules)
_depth = 0


class _LazyFormat:
    """An op's assembly format, parsed into xDSL's ``FormatProgram`` on first use."""

    __slots__ = ("_text", "_op_def", "_program")

    def __init__(self, text: str, op_def) -> None:
        self._text, self._op_def, self._program = text, op_def, None

    def program(self):
        if self._program is None:
            self._program = _eager_format(self._text, self._op_def)
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


#: the code of each dataclass method text compiled in the window, by its text
_compiled: dict[str, object] = {}
#: how many of them the code file held (or was written with)
_stored = 0
#: the first bytes of the code file; the bytecode magic number changes with Python's
_HEADER = b"zymase dataclass code " + importlib.util.MAGIC_NUMBER.hex().encode() + b" "


def _code_file() -> Path | None:
    """Where :data:`_compiled` is kept between processes: this module's bytecode file
    (``__pycache__``, or under ``PYTHONPYCACHEPREFIX``) with the suffix ``.dataclasses``."""
    try:
        return Path(importlib.util.cache_from_source(__file__)).with_suffix(".dataclasses")
    except (NotImplementedError, ValueError):  # no cache tag: no bytecode either
        return None


def _load_code() -> None:
    global _stored
    path = _code_file()
    try:
        data = path.read_bytes() if path is not None else b""
    except OSError:
        return
    header, _, payload = data.partition(b"\n")
    if header != _HEADER + hashlib.sha256(payload).hexdigest().encode():
        return  # another Python's, truncated or altered: compiled again and rewritten
    try:
        codes = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return
    if isinstance(codes, dict):
        _compiled.update(codes)
        _stored = len(_compiled)


def _store_code() -> None:
    """Write :data:`_compiled` when the window compiled texts the file did not hold
    (atomically: a temporary file renamed into place); where Python would not write
    bytecode, or cannot write there, nothing is written."""
    global _stored
    path = _code_file()
    if path is None or sys.dont_write_bytecode or len(_compiled) <= _stored:
        return
    payload = marshal.dumps(_compiled)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            os.chmod(tmp, os.stat(__file__).st_mode & 0o666)  # (as Python gives a .pyc its source's mode)
            with os.fdopen(fd, "wb") as f:
                f.write(_HEADER + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return
    _stored = len(_compiled)


def _exec_compiled_once(source, globals=None, locals=None):
    """``exec`` as :mod:`dataclasses` calls it, compiling each text once. (The text is
    compiled as ``exec`` would compile it there: without this module's ``__future__``
    flags, since ``dataclasses`` has none.)"""
    if not isinstance(source, str):
        return exec(source, globals, locals)
    code = _compiled.get(source)
    if code is None:
        code = _compiled[source] = compile(source, "<string>", "exec", dont_inherit=True)
    return exec(code, globals, locals)


#: xDSL's module of format programs and its ``FormatProgram.from_str``, once imported
_formats = None
_eager_format = None


def _patch() -> None:
    global _formats, _eager_format
    if not _compiled:
        _load_code()
    typing_extensions.deprecated = _Deprecated
    dataclasses.exec = _exec_compiled_once  # (shadows the builtin in that module only)
    if _formats is None:
        # (it imports xDSL's builtin dialect: inside the window already)
        from xdsl.irdl import declarative_assembly_format

        _formats, _eager_format = declarative_assembly_format, declarative_assembly_format.FormatProgram.from_str
    _formats.FormatProgram.from_str = staticmethod(_lazy_format)


def _unpatch() -> None:
    if _formats is not None:
        _formats.FormatProgram.from_str = staticmethod(_eager_format)
    typing_extensions.deprecated = _TYPING_DEPRECATED
    vars(dataclasses).pop("exec", None)
    _store_code()


def begin() -> None:
    """Open the window (nested openings count; :func:`end` closes one)."""
    global _depth
    with _lock:
        _depth += 1
        if _depth == 1:
            try:
                _patch()
            except BaseException:
                _depth -= 1
                _unpatch()
                raise


def end() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            _unpatch()


@contextmanager
def importing_xdsl():
    """Import xDSL dialects inside this block (module doc)."""
    begin()
    try:
        yield
    finally:
        end()
