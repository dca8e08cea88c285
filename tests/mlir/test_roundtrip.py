"""zymase-opt prints upstream MLIR syntax: its output re-parses in xDSL (with the
dialects zymase registers) and prints back identically, after every kind of pass:
differentiation, cleanups, activity canonicalization, lowering to llvm; and when
LLVM's ``mlir-opt`` is installed, the same outputs parse and verify there too."""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zymase.ir import parse_mlir, print_mlir
from zymase.transforms.pipeline import run_passes

HERE = Path(__file__).parent

PIPELINES = [
    "",
    "enzyme",
    "enzyme,remove-unnecessary-enzyme-ops,canonicalize,cse",
    "enzyme,canonicalize,remove-unnecessary-enzyme-ops,canonicalize,cse",
    "enzyme-activity-opt,enzyme",
    "enzyme,lower-to-llvm",
]


def _inputs() -> dict[str, str]:
    # StableHLO modules are not inputs here: mlir-opt has no stablehlo dialect and
    # lower-to-llvm no tensors (tests/jax checks them with jaxlib's parser instead)
    files = {p.name: p.read_text() for p in sorted((HERE / "filecheck").glob("*.mlir"))
             if p.name != "errors.mlir" and not p.name.startswith("stablehlo")}
    # the memref programs of the AD tests (structured control flow, views, linalg)
    sys.path.insert(0, str(HERE))
    try:
        import test_memref_ad as ad
    finally:
        sys.path.pop(0)
    files["memref_set"] = ad.SET
    files["memref_programs"] = ad.SUMSQ
    files["memref_caches"] = ad.MEMCACHE
    return files


INPUTS = _inputs()


@functools.lru_cache(maxsize=None)
def _opt(text: str, passes: str) -> str:
    """What ``zymase-opt -p <passes>`` prints (the CLI writes run_passes' text)."""
    return run_passes(text, "<input>", [p for p in passes.split(",") if p])


def test_cli_prints_the_same_text():
    text = INPUTS["memref_set"]
    cmd = [sys.executable, "-c", "import sys; from zymase.cli import opt_main; sys.exit(opt_main())", "-", "-p", "enzyme"]
    proc = subprocess.run(cmd, input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == _opt(text, "enzyme")


@pytest.mark.parametrize("passes", PIPELINES, ids=[p or "parse-print" for p in PIPELINES])
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_output_reparses_and_prints_the_same(name, passes):
    out = _opt(INPUTS[name], passes)
    module = parse_mlir(out, f"{name} after {passes or 'nothing'}")
    module.verify()
    assert print_mlir(module) == out


def test_builtin_syntax_is_upstream():
    out = _opt(INPUTS["memref_programs"], "")
    # upstream spellings of builtin types/attributes and structured ops
    assert "memref<2x2xf64, strided<[?, 1], offset: ?>>" in out
    assert "affine_map<(d0, d1) -> (d0, d1)>" in out
    assert 'iterator_types = ["reduction", "reduction"]' in out
    assert "memref.copy %w, %tmp : memref<2x2xf64, strided<[?, 1], offset: ?>> to memref<2x2xf64>" in out
    assert "memref.cast %tmp : memref<2x2xf64> to memref<?x?xf64>" in out
    assert "#enzyme<activity enzyme_dup>" in out


# ----------------------------------------------------------------------- mlir-opt


def _find_mlir_opt() -> str | None:
    """``mlir-opt`` or ``mlir-opt-N`` on PATH, else the newest /usr/lib/llvm-N/bin/mlir-opt."""
    for name in ("mlir-opt", "mlir-opt-19"):
        if shutil.which(name):
            return shutil.which(name)
    versioned = [p for d in os.environ.get("PATH", "").split(os.pathsep) for p in glob.glob(os.path.join(d, "mlir-opt-*"))]
    found = versioned + glob.glob("/usr/lib/llvm-*/bin/mlir-opt")

    def version(path: str) -> int:
        m = re.search(r"(\d+)", os.path.basename(path)) or re.search(r"llvm-(\d+)", path)
        return int(m.group(1)) if m else 0

    found = [p for p in found if os.access(p, os.X_OK)]
    return max(found, key=version) if found else None


MLIR_OPT = _find_mlir_opt()
REQUIRE_MLIR_OPT = os.environ.get("ZYMASE_REQUIRE_MLIR_OPT") == "1"
MISSING = "mlir-opt-not-found"
# Without mlir-opt the cases are not collected, unless CI requires it: then one case
# stands for the missing tool and fails.
MLIR_OPT_CASES = (
    [(name, passes) for name in sorted(INPUTS) for passes in PIPELINES]
    if MLIR_OPT
    else ([(MISSING, "")] if REQUIRE_MLIR_OPT else [])
)


@pytest.mark.parametrize(
    "name,passes", MLIR_OPT_CASES, ids=[f"{n}-{p or 'parse-print'}" for n, p in MLIR_OPT_CASES]
)
def test_output_parses_and_verifies_in_mlir_opt(name, passes):
    """``mlir-opt --verify-each`` (LLVM's MLIR, release 19 here) accepts what
    zymase-opt prints.

    Honest about what parses where: mlir-opt knows the builtin, func, arith, math,
    cf, scf, memref, linalg and llvm dialects, not enzyme. An output without enzyme
    ops (after lower-to-llvm; after the cleanup pipelines when every cache and
    accumulator became SSA values, buffers or iter_args) is checked exactly as
    zymase-opt prints it. An output that still holds enzyme ops (the inputs'
    enzyme.autodiff, the ``enzyme`` pass's init/get/set/push/pop, LIFO caches of
    scf.while loops and of CFG loops) is printed with the enzyme ops -- and only
    them -- in the generic form and parsed with --allow-unregistered-dialect: the
    other ops keep their custom syntax and are fully checked; the enzyme ops are
    opaque to mlir-opt (their operands, results and attributes must still parse)."""
    assert MLIR_OPT is not None, (
        "ZYMASE_REQUIRE_MLIR_OPT=1 but no mlir-opt was found (mlir-opt, mlir-opt-19 on PATH, "
        "/usr/lib/llvm-*/bin/mlir-opt); install it: apt-get install -y mlir-19-tools"
    )
    out = _opt(INPUTS[name], passes)
    module = parse_mlir(out)
    has_enzyme = any(op.dialect_name() == "enzyme" for op in module.walk())
    cmd = [MLIR_OPT, "--verify-each", "-o", os.devnull, "-"]
    if has_enzyme:
        out = print_mlir(module, generic_dialects=frozenset({"enzyme"}))
        cmd.insert(1, "--allow-unregistered-dialect")
    if "lower-to-llvm" in passes:
        assert not has_enzyme, "lower-to-llvm leaves no enzyme op"
    proc = subprocess.run(cmd, input=out, capture_output=True, text=True)
    assert proc.returncode == 0, f"mlir-opt rejects zymase-opt -p '{passes}' on {name}:\n{proc.stderr}\n{out}"


def test_builtin_only_outputs_are_checked_as_printed():
    """The cleanup pipelines leave no enzyme op for the programs whose caches all
    become SSA values, buffers or iter_args, so mlir-opt sees their exact text."""
    for name in ("memref_set", "memref_programs", "reverse_square.mlir", "cleanup.mlir", "activity.mlir"):
        out = _opt(INPUTS[name], "enzyme,canonicalize,remove-unnecessary-enzyme-ops,canonicalize,cse")
        assert "enzyme." not in out, name
    out = _opt(INPUTS["memref_set"], "enzyme,remove-unnecessary-enzyme-ops,canonicalize,cse")
    assert "enzyme." not in out
