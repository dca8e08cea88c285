"""zymase.runtime_ops: the MLIR runtimes zymase ships are built from the descriptions
kept in zymase/runtime_ops_data.py, not parsed by xDSL (issue 29: 0.07 s of CPU of kpp's
first zymase.grad call in a process whose cache directory is empty)."""

from __future__ import annotations

import pytest

import zymase.ir
from zymase import cache as derivative_cache
from zymase import runtime_ops
from zymase.ir import parse_mlir, print_mlir
from zymase.ir.xdsl_import import importing_xdsl
from zymase.transforms import lower_tape


@pytest.fixture(autouse=True)
def _window():
    with importing_xdsl():
        yield


def test_data_is_current():
    """The descriptions are those of the runtimes' texts as they are now (a runtime edited
    without ``python -m zymase.runtime_ops`` fails here; it would be parsed, not built
    from a stale description)."""
    from pathlib import Path

    kept = Path(runtime_ops.__file__).with_name("runtime_ops_data.py").read_text()
    assert kept == runtime_ops.generate(), "run `python -m zymase.runtime_ops` to regenerate the runtimes' data"


@pytest.mark.parametrize("index", range(len(runtime_ops.runtime_texts())))
def test_built_module_is_the_parse(index):
    text = runtime_ops.runtime_texts()[index]
    built = runtime_ops.built_module(text)
    assert built is not None
    parsed = parse_mlir(text)
    assert built.is_structurally_equivalent(parsed)
    assert print_mlir(built) == print_mlir(parsed)  # the SSA and block names too


def test_a_subset_of_the_tape_runtime_is_built_too():
    """A module gets only the runtime functions it calls (lower_tape.cache_runtime_closure):
    the descriptions are per function."""
    text = lower_tape.cache_runtime_text(lower_tape.cache_runtime_closure({"__zymase_cache_pop"}))
    built = runtime_ops.built_module(text)
    assert built is not None and print_mlir(built) == print_mlir(parse_mlir(text))


def test_each_build_is_a_new_module():
    """The caller takes the module apart (its ops move into the program's module)."""
    text = runtime_ops.runtime_texts()[0]
    first, second = runtime_ops.built_module(text), runtime_ops.built_module(text)
    ops = [op for op in first.walk()]
    assert not any(op is other for op, other in zip(ops, second.walk()))


def test_text_without_description_is_parsed():
    """An edited runtime (or any other text) has no description: None, and parsed_mlir
    parses it; a description made under another xDSL is not used."""
    text = runtime_ops.runtime_texts()[1].replace("%zero", "%nothing")
    assert runtime_ops.built_module(text) is None
    assert runtime_ops.built_module("builtin.module {\n  llvm.mlir.global internal @g() : i64\n}") is None


@pytest.mark.parametrize("described_under", ["XDSL_VERSION", "IR_FINGERPRINT"])
def test_other_xdsl_or_ir_layer_is_parsed(monkeypatch, described_under):
    """Descriptions generated under another xDSL or another state of zymase's dialects
    (zymase/ir) are not used."""
    from zymase import runtime_ops_data

    text = runtime_ops.runtime_texts()[0]
    assert runtime_ops.built_module(text) is not None
    monkeypatch.setattr(runtime_ops_data, described_under, "another")
    assert runtime_ops.built_module(text) is None


def test_first_taping_build_parses_no_runtime(tmp_path, monkeypatch):
    """What a first zymase.grad call of a taping function does with an empty cache
    directory: the tape runtime and the memcpy adjoint are added without xDSL's parser
    (on the base, both were parsed: 0.07 s of CPU on kpp)."""
    from xdsl.parser import Parser

    monkeypatch.setenv("ZYMASE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(derivative_cache, "_PARSED", {})
    parses: list[str] = []
    parse_module = Parser.parse_module
    monkeypatch.setattr(Parser, "parse_module", lambda self, *a, **k: parses.append(1) or parse_module(self, *a, **k))
    for text, name in ((lower_tape.cache_runtime_text(lower_tape.cache_runtime_closure({"__zymase_cache_push"})),
                        "<zymase cache runtime>"), (runtime_ops.runtime_texts()[3], "<zymase memcpy adjoint>")):
        module = derivative_cache.parsed_mlir(text, name)
        assert print_mlir(module) == print_mlir(zymase.ir.parse_mlir(text, name))
    assert len(parses) == 2  # the two parses of this test's own comparisons, none in parsed_mlir
    assert list(tmp_path.iterdir()) == []  # nothing to keep in the cache directory either
