"""The C++ interface header ``<enzyme/enzyme>`` shipped in src/zymase/include (issue 24
item 4): the self-checking C++ programs in tests/cxx_header, built with ``zymase cc``
at several levels, and the compile-time refusals of what the header does not offer."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import build_and_run

CXX_HEADER_DIR = Path(__file__).resolve().parent / "cxx_header"


def test_marker_declarations_with_mangled_names_take_nomerge():
    """C++ declares the marker functions as templates (``template <class R, class...
    T> R __enzyme_autodiff(void *, T...)``), whose mangled names do not start with
    ``__enzyme_``; marking them ``nomerge`` crashed zymase (issue 24 item 4)."""
    from zymase.llvm.markers import protect_marker_calls

    ir = (
        "declare { double, double } @_Z17__enzyme_autodiffI2R2JPiddEET_PvDpT0_(ptr noundef, ptr noundef, double)\n"
        "declare double @_ZN6enzyme6detail16__enzyme_fwddiffIdJdEEET_PvDpT0_(ptr noundef, double) #4\n"
        "declare noundef double @__enzyme_autodiff(ptr noundef, ...) local_unnamed_addr #1\n"
    )
    lines = protect_marker_calls(ir).splitlines()
    assert lines[0].endswith("(ptr noundef, ptr noundef, double) nomerge")
    assert lines[1].endswith("(ptr noundef, double) nomerge #4")
    assert lines[2].endswith("(ptr noundef, ...) local_unnamed_addr nomerge #1")
