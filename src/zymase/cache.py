"""The persistent derivative cache: where it lives, what its keys cover, how entries are
written and checked. Used by ``zymase cc`` (one entry per source file and build options)
and by the Python transforms' ``cache=True`` (one entry per compiled kernel).

Where: ``$ZYMASE_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/zymase``, else
``~/.cache/zymase``. ``zymase cache clear`` removes its entries (or remove the directory);
``zymase cc --no-cache`` neither reads nor writes it.

A key is the SHA-256 of everything the cached result depends on: the input (LLVM IR text,
or a Numba function's code), the options, zymase's version *and a hash of its sources*
(so an edited engine never loads another engine's derivatives), and the versions of the
components that produced the IR (llvmlite's LLVM). An entry is one file, written to a
temporary file in the same directory and renamed into place, so concurrent builds see
either the whole entry or none. Each entry starts with a header carrying the SHA-256 of
its payload: a truncated or altered entry fails that check, is deleted and rebuilt, and
is never used.

This module imports nothing heavy (no xDSL, no Numba): a build that hits the cache does
not pay for loading the engine.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

#: first bytes of every entry; the number changes when the entry format does
_MAGIC = b"zymase-cache-1 "
#: environment variables that change what the engine generates (tape counters,
#: peeling switched off): part of every key
ENGINE_ENVIRONMENT = ("ZYMASE_TAPE_STATS", "ZYMASE_NO_PEEL", "ZYMASE_NO_GATHER")
#: environment variables that make the engine print diagnostics while it works: a build
#: with one of them set does not use the cache, or the diagnostics would not appear
DIAGNOSTIC_ENVIRONMENT = ("ZYMASE_DEBUG_TAPE",)
#: the names of entries (``<key>.<kind>``) and of their temporary files
_ENTRY_NAME = re.compile(r"[0-9a-f]{40}\.[\w.]+|\.[0-9a-f]{40}\..+\.tmp")


def cache_dir() -> Path:
    """The cache directory (it may not exist yet)."""
    base = os.environ.get("ZYMASE_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "zymase"


_engine_hash: str | None = None


def engine_fingerprint() -> str:
    """A hash of zymase's own sources (the Python modules, the headers it ships and the C
    runtimes that derivatives call, which are linked into cached outputs; about 1.4 MB,
    read once per process in ~10 ms): a derivative cached by another state of the engine
    (a fix, a local edit under the same ``__version__``) must not be loaded."""
    global _engine_hash
    if _engine_hash is None:
        root = Path(__file__).resolve().parent
        # (the C runtimes derivatives link, autodiff/**/*.c and *.h, are part of the engine)
        runtimes = [p for ext in ("*.c", "*.h") for p in (root / "autodiff").rglob(ext)]
        _engine_hash = _sources_hash(root, [*root.rglob("*.py"), *(root / "include").rglob("*"), *runtimes])
    return _engine_hash


def _sources_hash(root: Path, files) -> str:
    """A hash of the files (names relative to ``root``, and contents) in a fixed order."""
    h = hashlib.sha256()
    for path in sorted(p for p in files if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\x00")
        h.update(path.read_bytes() + b"\x00")
    return h.hexdigest()


def engine_identity() -> list[str]:
    """What every key includes about the engine: version, source hash, LLVM, and the
    environment variables that change its output."""
    import llvmlite

    import zymase

    env = [f"{name}={os.environ.get(name, '')}" for name in ENGINE_ENVIRONMENT]
    from zymase.autodiff.checkpoint import tape_limit  # (imports only errors)

    env.append(f"tape_limit={tape_limit()}")
    return [zymase.__version__, engine_fingerprint(), llvmlite.__version__, *env]


def make_key(*parts: str | bytes) -> str:
    """The key of an entry: a hash of ``parts`` (order matters) and of the engine."""
    return _hash_parts([*engine_identity(), *parts])


def _hash_parts(parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        h.update(len(data).to_bytes(8, "little") + data)  # length-prefixed: no ambiguity
    return h.hexdigest()[:40]


_ir_hash: str | None = None


def ir_fingerprint() -> str:
    """A hash of the sources of zymase's IR layer (``zymase/ir``: the context, the
    dialects zymase defines or extends, the parser's set-up), what a parse of MLIR text
    depends on besides the text and xDSL. About 170 kB, read once per process: the
    whole engine's :func:`engine_fingerprint` (1.4 MB, ~10 ms) was most of the key of a
    first call's runtime parses (issue 29, first-call time)."""
    global _ir_hash
    if _ir_hash is None:
        root = Path(__file__).resolve().parent
        _ir_hash = _sources_hash(root, (root / "ir").rglob("*.py"))
    return _ir_hash


def parsed_mlir(text: str, name: str):
    """A new module parsed from MLIR text zymase ships (its runtimes: llvm-dialect
    functions added to the modules that call them). xDSL's parser takes 0.2-0.4 s on the
    tape runtime, which every build that tapes needs: the parse is kept pickled, in this
    process and in the cache directory (as the C runtimes' IR is; ``--no-cache`` is about
    derivatives and does not turn this off), and each call unpickles a fresh copy, which
    the caller may take apart. An entry that does not load (another xDSL's or Python's)
    is parsed again and replaced. The key covers what the parse depends on: the text,
    xDSL and Python (``PICKLE_IDENTITY``) and zymase's IR layer (:func:`ir_fingerprint`),
    not the rest of the engine, which does not take part in parsing."""
    from zymase.runtime_ops import built_module

    module = built_module(text)  # the runtimes zymase ships, built without parsing
    if module is not None:
        return module
    import zymase
    from zymase.ir import PICKLE_IDENTITY, module_from_bytes, module_to_bytes, parse_mlir

    key = _hash_parts(["parsed MLIR", zymase.__version__, ir_fingerprint(), PICKLE_IDENTITY, name, text])
    data = _PARSED.get(key)
    if data is None:
        data = load(key, "mlir.pickle")
    module = module_from_bytes(data) if data is not None else None
    if module is None:
        module = parse_mlir(text, name)
        data = module_to_bytes(module)
        store(key, "mlir.pickle", data)
    _PARSED[key] = data
    return module


#: this process's parses of :func:`parsed_mlir`, by key
_PARSED: dict[str, bytes] = {}


def enabled() -> bool:
    """Whether the cache may be used in this environment (see DIAGNOSTIC_ENVIRONMENT)."""
    return not any(os.environ.get(name, "") not in ("", "0") for name in DIAGNOSTIC_ENVIRONMENT)


def _path(key: str, kind: str) -> Path:
    return cache_dir() / f"{key}.{kind}"


def load(key: str, kind: str) -> bytes | None:
    """The payload stored under ``key`` and ``kind`` (``ll``, ``o`` ...), or None if there
    is none or it fails its checksum (then it is removed, to be rebuilt)."""
    path = _path(key, kind)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header, sep, payload = data.partition(b"\n")
    if sep and header.startswith(_MAGIC) and header[len(_MAGIC):] == hashlib.sha256(payload).hexdigest().encode():
        return payload
    try:  # corrupt (truncated, edited, another format): never used
        path.unlink()
    except OSError:
        pass
    return None


def store(key: str, kind: str, payload: bytes) -> None:
    """Store ``payload`` atomically (temporary file in the same directory, then rename).
    A cache that cannot be written only makes the next build slower: errors are ignored."""
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
            os.replace(tmp, _path(key, kind))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def _entries(directory: Path) -> list[Path]:
    """The files of ``directory`` that are cache entries or their temporary files (only
    those: ZYMASE_CACHE_DIR may point at a directory that holds other things)."""
    if not directory.is_dir():
        return []
    return [p for p in directory.iterdir() if p.is_file() and _ENTRY_NAME.fullmatch(p.name)]


def clear() -> tuple[Path, int]:
    """Remove every entry; returns the directory and the number of files removed."""
    directory = cache_dir()
    entries = _entries(directory)
    for path in entries:
        try:
            path.unlink()
        except OSError:
            pass
    return directory, len(entries)


def summary() -> tuple[Path, int, int]:
    """The directory, the number of entries and their total size in bytes."""
    directory = cache_dir()
    files = [p for p in _entries(directory) if not p.name.endswith(".tmp")]
    return directory, len(files), sum(p.stat().st_size for p in files)
