"""Messages name functions as the user wrote them (zymase/llvm/demangle.py): C++'s
Itanium names and Rust's v0 names (which reach ``zymase opt`` from rustc's IR) are
demangled; a C name, or a string that only looks mangled, stays as it is."""

from __future__ import annotations

from zymase.llvm import demangle as dm

# (llvm-cxxfilt and binutils' c++filt, 2.36 and later, both read Rust's v0 names; the
# system cc that links zymase's programs comes with binutils)


def test_cxx_names_are_demangled():
    assert dm.demangle("_Z6energyPKdi") == "energy(double const*, int)"


def test_rust_v0_names_are_demangled():
    name = "_RNvMs4_NtCslNYArtu3iFV_5alloc7raw_vecNtB5_11RawVecInner15try_allocate_inCsduwmD7cSIQq_5gimli"
    # (binutils writes the crates' hashes, alloc[fdfd2bd8633a6659], llvm-cxxfilt does not)
    text = dm.demangle(name)
    assert text.startswith("<alloc") and text.endswith("::raw_vec::RawVecInner>::try_allocate_in"), text


def test_c_names_and_lookalikes_stay():
    assert dm.demangle("energy") == "energy"
    assert dm.demangle("_Rx") == "_Rx"
    assert dm.demangle("_Zq") == "_Zq"
