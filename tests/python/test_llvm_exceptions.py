"""C++ exception handling in the LLVM reader and writer (issue 24 item 3): ``invoke``,
``landingpad`` (cleanup, catch, filter), ``resume`` and the function's personality
round-trip unchanged, so that the parts of a C++ module zymase does not differentiate
keep their exception semantics."""

from __future__ import annotations

from test_llvm_reader_writer import func, ops_named, roundtrip

EH_MODULE = """
@_ZTIi = external constant ptr
declare i32 @__gxx_personality_v0(...)
declare double @may_throw(double)
declare ptr @__cxa_begin_catch(ptr)
declare void @__cxa_end_catch()
declare i32 @llvm.eh.typeid.for.p0(ptr)

define double @f(double %x, ptr %fp) personality ptr @__gxx_personality_v0 {
entry:
  %a = invoke double @may_throw(double %x)
          to label %prep unwind label %pad
again:
  ; an indirect invoke whose argument is defined in a block written later
  %b = invoke double %fp(double %later)
          to label %join unwind label %pad
join:
  %r = phi double [ %b, %again ]
  ret double %r
pad:
  %where = phi double [ 1.0, %entry ], [ 2.0, %again ]
  %lp = landingpad { ptr, i32 }
          cleanup
          catch ptr @_ZTIi
          filter [0 x ptr] zeroinitializer
  %sel = extractvalue { ptr, i32 } %lp, 1
  %tid = call i32 @llvm.eh.typeid.for.p0(ptr @_ZTIi)
  %is_int = icmp eq i32 %sel, %tid
  br i1 %is_int, label %caught, label %rethrow
caught:
  %exn = extractvalue { ptr, i32 } %lp, 0
  %obj = call ptr @__cxa_begin_catch(ptr %exn)
  call void @__cxa_end_catch()
  ret double %where
rethrow:
  resume { ptr, i32 } %lp
prep:
  %later = fadd double %a, 1.0
  br label %again
}
"""


def test_invoke_landingpad_resume_and_personality_round_trip():
    module, out = roundtrip(EH_MODULE, "eh.ll")
    assert len(ops_named(module, "llvm.invoke")) == 2
    assert len(ops_named(module, "llvm.landingpad")) == 1
    assert len(ops_named(module, "llvm.resume")) == 1
    assert func(module, "f").attributes["personality"].root_reference.data == "__gxx_personality_v0"
    assert "personality ptr @__gxx_personality_v0" in out
    assert "invoke double @may_throw(double" in out
    assert "cleanup" in out and "catch ptr @_ZTIi" in out and "filter [0 x ptr] zeroinitializer" in out
    assert "resume { ptr, i32 }" in out
    # a second trip gives the same text
    _, again = roundtrip(out, "eh2.ll")
    assert again == out
