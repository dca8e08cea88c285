; Every attribute, linkage and naming form of LangRef that clang can emit (and more),
; read and written back by tests/python/test_llvm_attribute_roundtrip.py (issue 23 item 3).
; Each declaration is valid on its own: the verifier restricts some combinations.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

%struct.S = type { i32, double }
%"struct.odd name" = type { i8 }

$comdat_any = comdat any
$comdat_ld = comdat largest

@0 = private unnamed_addr constant [4 x i8] c"abc\00", align 1
@1 = private unnamed_addr constant { i32, ptr } { i32 7, ptr @0 }, align 8
@g_common = common global i32 0, align 4
@g_weak = weak global i32 1, align 4
@g_weak_odr = weak_odr global i32 1, comdat($comdat_any), align 4
@g_linkonce = linkonce global i32 1, align 4
@g_linkonce_odr = linkonce_odr global i32 1, comdat($comdat_ld)
@g_internal = internal global i32 2, section ".mydata", align 16
@g_available = available_externally global i32 3
@g_extern_weak = extern_weak global i32
@g_appending = appending global [1 x ptr] [ptr @f_internal]
@g_hidden = hidden global i32 4
@g_protected = protected global i32 5
@g_dllexport = dllexport global i32 6
@g_dllimport = external dllimport global i32
@g_tls = thread_local global i32 0
@g_tls_ie = thread_local(initialexec) global i32 0
@g_local_unnamed = local_unnamed_addr global i32 0
@g_addrspace = addrspace(1) global i32 0
@g_ext_init = externally_initialized global i32 0
@g_dso = dso_local global i32 0
@g_preempt = dso_preemptable global i32 0
@"quoted name" = global i32 0
@"\01escaped" = global i32 0
@g_ptr_to_numbered = global ptr @1
@g_struct = global %struct.S { i32 1, double 2.0 }
@g_odd = global %"struct.odd name" zeroinitializer
@g_partition = global i32 0, partition "part"
@g_meta = global i32 0, !dbg.extra !0
@llvm.used = appending global [1 x ptr] [ptr @g_dso], section "llvm.metadata"

define internal void @f_internal() {
  ret void
}

define private void @f_private() {
  ret void
}

define weak void @f_weak() {
  ret void
}

define linkonce_odr hidden void @f_linkonce_odr() comdat($comdat_any) {
  ret void
}

define available_externally void @f_avail() {
  ret void
}

declare extern_weak void @f_extern_weak()

declare dllimport void @f_dllimport()

define dllexport void @f_dllexport() {
  ret void
}

define protected void @f_protected() {
  ret void
}

define void @f_section() section ".text.hot" align 32 {
  ret void
}

define void @f_gc() {
  ret void
}

define void @"quoted fn"() {
  ret void
}

define dso_local fastcc void @f_fastcc() {
  ret void
}

define coldcc void @f_coldcc() {
  ret void
}

define void @f_meta() !prof !1 {
  ret void
}

declare noalias noundef nonnull align 16 dereferenceable(18446744073709551615) ptr @ret_extreme(i64 noundef)

declare dereferenceable_or_null(18446744073709551615) ptr @ret_or_null()

declare signext i8 @ret_sext()

declare zeroext i16 @ret_zext()

declare inreg i32 @ret_inreg()

declare nofpclass(nan inf) double @ret_nofpclass()

declare range(i32 0, 10) i32 @ret_range()

declare noundef i32 @params(ptr noalias nocapture noundef readonly align 8 dereferenceable(16) %p, ptr captures(none) writeonly %q, ptr byval(%struct.S) align 8 %s, ptr byref(i32) %br, ptr nest %n, ptr %ret, ptr swiftself %ss, ptr swiftasync %sa, ptr nonnull dereferenceable_or_null(9223372036854775807) %d, ptr readnone %rn, ptr writable dead_on_unwind %w, ptr initializes((0, 4)) %init, ptr noundef %nd, i32 range(i32 -5, 5) %rg, double nofpclass(snan) %fp, ptr alignstack(16) %as, ptr align 4294967296 %bigalign, i8 signext %sx, i16 zeroext %zx, i32 inreg %ir, i32 noext %nx)

declare void @sret_param(ptr sret(%struct.S) align 8 %r, ptr inalloca(i32) %ia)

declare void @prealloc_param(ptr preallocated(i32) %pa)

declare ptr @returned_param(ptr returned %r)

declare void @fnattrs1() #0

declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1 immarg)

declare void @fnattrs2() #1

declare void @fnattrs3() memory(argmem: readwrite, inaccessiblemem: read) nounwind willreturn

declare void @fnattrs4() memory(none)

declare void @fnattrs5() memory(read, argmem: write)

declare i32 @fnattrs6(i64) allockind("alloc,zeroed") allocsize(0) "alloc-family"="malloc"

declare void @fnattrs7() uwtable(sync) vscale_range(1, 16) "probe-stack"="inline-asm"

declare void @fnattrs8() alignstack(16) nocallback nofree nomerge norecurse nosync null_pointer_is_valid optsize minsize cold hot naked noduplicate noimplicitfloat nonlazybind returns_twice safestack sanitize_address speculatable ssp sspreq sspstrong strictfp mustprogress

declare void @fnattrs9() noreturn convergent "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+sse2" "tune-cpu"="generic" "empty"

define i32 @uses(ptr %p) local_unnamed_addr #2 {
entry:
  %a = load i32, ptr @0
  %b = load i32, ptr @"quoted name"
  %c = load i32, ptr @"\01escaped"
  %d = call noalias dereferenceable(18446744073709551615) ptr @ret_extreme(i64 noundef -1) #3
  %e = call i32 @fnattrs6(i64 4) #4
  %f = load ptr, ptr @g_ptr_to_numbered, !nonnull !2, !align !3, !dereferenceable !4, !noundef !2
  %g = load i32, ptr %p, !range !5, !invariant.load !2
  %h = call i32 @params(ptr %p, ptr %p, ptr byval(%struct.S) %p, ptr %p, ptr nest %p, ptr %p, ptr swiftself %p, ptr swiftasync %p, ptr %p, ptr %p, ptr %p, ptr %p, ptr %p, i32 1, double 1.0, ptr %p, ptr %p, i8 signext 1, i16 zeroext 1, i32 inreg 1, i32 1)
  call void @sret_param(ptr sret(%struct.S) %p, ptr inalloca(i32) %p)
  %rp = call ptr @returned_param(ptr %p)
  %ld = load atomic i32, ptr %p seq_cst, align 4
  call void @llvm.memcpy.p0.p0.i64(ptr elementtype(i32) %p, ptr %p, i64 4, i1 false)
  call void @f_weak() nounwind
  call void @f_dllexport() #5
  %s = add i32 %a, %b
  %t = add i32 %s, %c
  ret i32 %t
}

attributes #0 = { nounwind readnone willreturn }
attributes #1 = { noinline optnone nounwind "frame-pointer"="non-leaf" }
attributes #2 = { mustprogress nofree norecurse nosync nounwind willreturn memory(read, argmem: readwrite) uwtable "min-legal-vector-width"="0" }
attributes #3 = { builtin nomerge nounwind }
attributes #4 = { nobuiltin "no-builtins" }
attributes #5 = { noinline cold }

!0 = !{!"extra"}
!1 = !{!"function_entry_count", i64 100}
!2 = !{}
!3 = !{i64 8}
!4 = !{i64 18446744073709551615}
!5 = !{i32 0, i32 10}
