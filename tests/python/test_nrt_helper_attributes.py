"""The NRT helpers' bodies travel around AD without their attribute groups (issue 27 item 3,
found with numba-mpi): linking the MPI runtime renumbers the module's groups, and a stale
`#N` on the restored NRT_incref named another function's `memory(argmem: read)`, so LLVM
deleted the increfs and Numba freed arrays still in use."""

from zymase.frontends.numba import restore_nrt_helpers, split_nrt_helpers
from zymase.llvm import toolchain

_MODULE = """
define void @user(ptr %m) {
  call void @NRT_incref(ptr %m)
  ret void
}

define linkonce_odr void @NRT_incref(ptr %p) #0 {
  %old = atomicrmw add ptr %p, i64 1 monotonic, align 8
  ret void
}

attributes #0 = { noinline nounwind }
"""


def test_restored_incref_survives_renumbered_attribute_groups():
    text, helpers = split_nrt_helpers(_MODULE)
    assert "#0" not in helpers
    # what linking a runtime does to the numbering: group #0 now says something else
    renumbered = text + "\ndeclare void @reader(ptr) #0\nattributes #0 = { nounwind willreturn memory(argmem: read) }\n"
    out = toolchain.optimize(restore_nrt_helpers(renumbered, helpers), 2)
    assert "atomicrmw add" in out, out
