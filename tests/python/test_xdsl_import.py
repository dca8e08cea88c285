"""zymase/ir/xdsl_import.py: the dialects are imported with their ops' assembly formats
parsed on first use and without asyncio, and they parse and print as before."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import warnings

import typing_extensions


def test_every_deferred_format_parses_into_xdsls_program():
    # in a fresh process: the standard dialects are imported on first use, and a test that
    # imported one of them from xDSL directly before (outside the window: its formats are
    # parsed as xDSL parses them) would leave fewer formats deferred here
    code = """
from xdsl.irdl.declarative_assembly_format import FormatProgram

from zymase import ir
from zymase.ir import xdsl_import

for name in ("stablehlo", "chlo", "affine_ext", "linalg", "tensor", "affine", "complex"):
    getattr(ir, name)  # the on-demand dialects too
ir.on_first_use.load_all()  # and the standard ones
assert len(xdsl_import.DEFERRED) > 150, len(xdsl_import.DEFERRED)
for lazy in xdsl_import.DEFERRED:
    assert isinstance(lazy.program(), FormatProgram), lazy
print("ok", len(xdsl_import.DEFERRED))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stderr[-3000:]


def test_formats_parse_and_print_through_the_deferred_programs():
    from zymase.ir import parse_mlir, print_mlir

    text = """func.func @f(%a: f64, %m: memref<4xf64>, %i: index) -> f64 {
  %0 = arith.addf %a, %a fastmath<fast> : f64
  %1 = memref.load %m[%i] : memref<4xf64>
  %2 = math.sin %1 : f64
  %3 = arith.mulf %0, %2 : f64
  func.return %3 : f64
}"""
    printed = print_mlir(parse_mlir(text))
    assert "arith.addf %a, %a fastmath<fast> : f64" in printed  # custom syntax, not generic
    assert "memref.load %m[%i] : memref<4xf64>" in printed
    assert print_mlir(parse_mlir(printed)) == printed


def test_the_window_is_closed_after_zymase_imports_xdsl():
    import dataclasses

    from xdsl.irdl.declarative_assembly_format import FormatProgram

    from zymase.ir import xdsl_import

    assert FormatProgram.from_str is xdsl_import._eager_format
    assert typing_extensions.deprecated is xdsl_import._TYPING_DEPRECATED
    assert "exec" not in vars(dataclasses)


def test_dataclasses_made_in_the_window_are_the_same():
    import dataclasses

    from zymase.ir import xdsl_import

    def make():
        @dataclasses.dataclass(frozen=True)
        class Pair:
            a: int
            b: "tuple[int, ...]" = dataclasses.field(default_factory=tuple)

        return Pair

    plain = make()
    with xdsl_import.importing_xdsl():
        first, second = make(), make()  # the second one's methods are compiled once
    for cls in (first, second):
        assert cls(1) == cls(1, ()) and hash(cls(2)) == hash(cls(2)) and repr(cls(1)) == repr(plain(1)).replace(
            plain.__qualname__, cls.__qualname__)
        assert cls.__init__.__annotations__ == plain.__init__.__annotations__
        try:
            cls(1).a = 2
        except dataclasses.FrozenInstanceError:
            pass
        else:
            raise AssertionError("not frozen")


def test_deprecated_plain_functions_still_warn():
    from zymase.ir import xdsl_import

    with xdsl_import.importing_xdsl():
        @typing_extensions.deprecated("use g")
        def f(x):
            return x + 1

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert f(1) == 2
    assert [str(w.message) for w in caught] == ["use g"] and f.__deprecated__ == "use g"


def test_importing_the_dialects_imports_no_asyncio():
    code = "import sys, zymase.llvm.reader, zymase.autodiff.reverse; print('asyncio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def _import_ir(env: dict[str, str]) -> None:
    out = subprocess.run([sys.executable, "-c", "import zymase.ir"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr


def test_compiled_dataclass_code_is_kept_like_bytecode_and_checked(tmp_path):
    from zymase.ir import xdsl_import

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path)
    _import_ir({**env, "PYTHONDONTWRITEBYTECODE": "1"})
    assert not list(tmp_path.rglob("*.dataclasses"))  # where Python writes no bytecode, neither does this
    _import_ir(env)
    (path,) = tmp_path.rglob("xdsl_import.*.dataclasses")
    whole = path.read_bytes()
    assert whole.startswith(xdsl_import._HEADER) and len(whole) > 100_000
    stamp = path.stat().st_mtime_ns
    _import_ir(env)  # everything found: not written again
    assert path.stat().st_mtime_ns == stamp
    header, _, payload = whole.partition(b"\n")
    for damaged in (header + b"\n" + payload[:-1] + bytes([payload[-1] ^ 1]),  # altered (or truncated)
                    header.replace(xdsl_import._HEADER, b"zymase dataclass code 00000000 ") + b"\n" + payload):
        path.write_bytes(damaged)
        _import_ir(env)  # ignored, compiled again and rewritten
        header, _, payload = path.read_bytes().partition(b"\n")
        assert header == xdsl_import._HEADER + hashlib.sha256(payload).hexdigest().encode()
