"""LLVM IR text -> xDSL module in the (extended) ``llvm`` dialect.

:func:`read_llvm_ir` first lets LLVM itself parse and verify the text
(``llvmlite.binding.parse_assembly`` + ``verify``; this also upgrades old IR such as
clang 14's typed pointers), prints the module once, and then reads that canonical
text with a line-oriented parser of its own. llvmlite's binding API hides
predicates, flags, GEP types, alignment and switch cases, so the printed text is
the only complete source; printing once (never ``str()`` per instruction) keeps
the reader linear in the size of the module.

Representation (a contract: the AD engine, the MLIR lowering and the writer
depend on it)
=============================================================================

Types
    ``iN`` -> ``IntegerType(N)``; ``half``/``bfloat``/``float``/``double`` ->
    ``f16``/``bf16``/``f32``/``f64`` (``x86_fp80``/``fp128`` -> ``f80``/``f128``);
    ``ptr`` -> ``!llvm.ptr`` (``ptr addrspace(N)`` -> ``!llvm.ptr<N>``);
    ``[N x T]`` -> ``!llvm.array<N x T>``; ``{...}`` -> ``!llvm.struct<(...)>``;
    named ``%struct.X`` -> ``!llvm.struct<"struct.X", (...)>`` (an opaque struct has
    an empty body); packed ``<{...}>`` -> ``!llvm.packed_struct<(...)>`` (see
    :mod:`zymase.ir.llvm_ext`; xDSL's struct has no packed flag); ``<N x T>`` ->
    ``vector<NxT>``; ``void`` -> ``!llvm.void`` (function results only).

Functions
    ``llvm.func`` with the exact symbol name, ``function_type``, ``linkage``,
    ``CConv``, ``visibility_``, ``unnamed_addr``; declarations have an empty region.
    Function attributes (attribute groups and inline ones) -> ``passthrough``:
    ``StringAttr`` for flags, verbatim LLVM text for attributes with arguments
    (``"memory(argmem: read)"``, ``"uwtable(sync)"``), and
    ``ArrayAttr[StringAttr key, StringAttr value]`` for string attributes
    (``"target-cpu"="x86-64"``; a string attribute without value has value ``""``).
    ``dso_local`` -> unit attribute ``dso_local``; ``section`` -> string attribute.
    Parameter attributes -> ``arg_attrs`` (ArrayAttr of DictionaryAttr), result
    attributes -> ``res_attrs``, keys ``llvm.<name>``: UnitAttr for flags
    (``llvm.noalias``, ``llvm.noundef``, ``llvm.signext``, ``llvm.nocapture`` for
    ``captures(none)``, ...), IntegerAttr(i64) for ``llvm.align``,
    ``llvm.dereferenceable``, ``llvm.dereferenceable_or_null``, ``llvm.alignstack``,
    the pointee type for ``llvm.sret``/``llvm.byval``/``llvm.byref``/
    ``llvm.inalloca``/``llvm.preallocated``/``llvm.elementtype``. Pure optimisation
    hints with arguments (``range(...)``, ``nofpclass(...)``, ``initializes(...)``,
    ``captures(...)`` other than ``none``) are dropped: dropping them only makes
    the program more defined.

Blocks and phis
    The entry block's arguments are the function arguments. Every ``phi`` becomes
    an argument of its block; each predecessor passes the incoming values as
    successor operands of its ``llvm.br`` / ``llvm.cond_br`` / ``llvm.switch``,
    per edge (a block listed twice as successor of one terminator gets operands
    on both edges).

Constants
    Constant operands are materialised as ops right before their use, in the
    user's block (for phi incoming values: before the predecessor's terminator);
    one materialisation is reused within a block. Integers/floats ->
    ``llvm.mlir.constant`` (IntegerAttr/FloatAttr of the exact type; LLVM's hex
    floats are decoded exactly); ``null``/``zeroinitializer`` -> ``llvm.mlir.zero``
    (scalars and vectors get a zero ``llvm.mlir.constant``); ``undef`` ->
    ``llvm.mlir.undef``; ``poison`` -> ``llvm.mlir.poison``; ``@g`` ->
    ``llvm.mlir.addressof``; vectors of numbers -> a dense ``llvm.mlir.constant``
    (otherwise a ``llvm.insertelement`` chain); structs/arrays -> ``llvm.mlir.undef``
    + ``llvm.insertvalue`` chain; constant expressions (getelementptr, casts,
    arithmetic) -> the equivalent instruction ops.

Instructions
    xDSL ``llvm`` ops (plus :mod:`zymase.ir.llvm_ext`; ``llvm.icmp``, ``llvm.fcmp``,
    ``llvm.select``, ``llvm.load``, ``llvm.store`` are built as llvm_ext's
    subclasses of xDSL's ops, which also accept pointer compares, vector
    compares/selects and volatile loads) keeping what changes
    semantics: ``overflowFlags`` (nsw=1, nuw=2), ``isExact``, ``isDisjoint``,
    ``nonNeg``, ``fastmathFlags`` (phi fast-math flags are dropped), predicates,
    alloca element type / count / alignment, load/store type / alignment /
    ``volatile_`` / atomic ``ordering`` (syncscope dropped, i.e. widened to
    system scope), GEP element type / raw constant indices / ``inbounds`` and
    ``noWrapFlags`` (MLIR encoding: inbounds=3, nusw=2, nuw=4; constant indices
    that do not fit i32 become SSA operands), calls (``callee`` symbol or, for an
    indirect call, the callee pointer as first operand; ``var_callee_type`` only
    for variadic callees; ``CConv``; ``TailCallKind``; call-site parameter and
    result attributes as discardable ``arg_attrs`` / ``res_attrs`` attributes).
    Call-site function attributes (``#N`` on calls) are dropped, and so are
    ``samesign`` on icmp, fast-math flags on casts and phis, TLS models, comdats,
    function alignment.

Exception handling (Itanium, as clang emits C++ with exceptions)
    ``invoke`` -> ``llvm.invoke`` (a call that is a terminator: normal and unwind
    destinations with their phi operands), ``landingpad`` -> ``llvm.landingpad``
    (clauses as operands, ``cleanup`` unit property), ``resume`` -> ``llvm.resume``
    (ops in :mod:`zymase.ir.llvm_eh`); the function's ``personality`` -> attribute
    ``personality`` (a symbol reference). ``llvm.eh.typeid.for`` is an ordinary
    intrinsic call.

Intrinsics
    Calls to ``@llvm.*`` -> ``llvm.call_intrinsic "llvm.sin.f64"(...)`` with the
    full mangled name and fast-math flags. Intrinsic declarations are not kept
    (the writer re-declares what it sees used). ``llvm.dbg.*`` and ``llvm.assume``
    calls are dropped (debug info and pure hints);
    ``llvm.experimental.noalias.scope.decl`` is kept with its scope as attribute
    ``zymase.scope_decl`` (:mod:`zymase.llvm.noalias_scopes`).

Metadata
    ``!dbg`` -> ``op.location = FileLineColLoc(DIFile filename, line, column)``
    (locations with line 0 are left unknown); ``!tbaa`` -> attribute
    ``zymase.tbaa`` = the access type's name (``"double"``, ``"int"``,
    ``"any pointer"``); ``!llvm.loop`` on a branch -> attribute ``zymase.loop_hints``
    (the optimization hints among its entries, see :mod:`zymase.llvm.loop_hints`);
    ``!alias.scope`` / ``!noalias`` on loads and stores -> ``zymase.src_alias_scope`` /
    ``zymase.src_noalias`` (the scopes an inlined ``restrict`` parameter left, see
    :mod:`zymase.llvm.noalias_scopes`). Debug records (``#dbg_value``...) and all other
    metadata are dropped.

Globals
    ``llvm.mlir.global`` (sym_name, global_type, linkage, constant, alignment,
    unnamed_addr, thread_local_, addr_space, dso_local, section, visibility_).
    Scalar int/float initialisers -> ``value``; ``c"..."`` -> StringAttr ``value``
    (bytes as latin-1 characters); any other initialiser is kept verbatim as the
    StringAttr attribute ``zymase.llvm_init`` (LLVM text). External globals have
    neither. ``externally_initialized`` -> unit attribute of that name.

Module
    ``target triple`` / ``target datalayout`` -> module attributes
    ``llvm.target_triple`` / ``llvm.data_layout`` (StringAttr).

Names
    Function and global names are kept exactly (quoted names unescaped, bytes as
    latin-1 characters). SSA value and block names are not kept.

Not supported (clear ZymaseError): Windows exception handling (catchswitch,
catchpad, cleanuppad, ...), indirectbr/callbr/blockaddress, inline assembly that may
unwind (calls of inline assembly are ``llvm.inline_asm``; whether a derivative may pass
one is the engine's question), global aliases and ifuncs, scalable vectors, operand bundles other than on ``llvm.assume``,
``module asm``, prefix/prologue data, vector GEPs.

Code layout
===========

The reader is a package with one concern a module; each imports only the ones
listed before it (``function_reader`` names ``_ModuleReader`` in annotations only):

``lexer``
    tokens of one line, the cursor the parsers walk, the internal ``_ParseFailure``
    (turned into a ZymaseError where the line and function are known), decoding of
    quoted names and string literals.
``types``
    type syntax -> xDSL types, named structs resolved lazily.
``constants``
    constant operands and constant expressions -> hashable tuples (``Const``).
``metadata``
    debug locations, TBAA tags, loop hints, scoped-noalias lists.
``attributes``
    linkage/visibility/calling-convention words, parameter, result and function
    attributes.
``instructions``
    one handler per opcode, the op builders constant expressions share, and the
    record of a deferred terminator.
``function_reader``
    one function body: blocks, phis, SSA names, constant materialisation, opcode
    dispatch, deferred terminators.
``module_reader``
    the driver, :func:`read_llvm_ir`: LLVM's verification and printing, the prescan,
    globals, function headers.

Names with a leading underscore are private to the package. The function body
reader is one class over two modules: ``function_reader._FunctionReader`` holds the
state and the plumbing and inherits the opcode handlers from the mixin
``instructions._InstructionHandlers``. A mixin rather than functions that take the
reader: the handlers moved unchanged (they use ``self``), and the opcode table still
calls them as methods of ``_FunctionReader``.
"""

from zymase.llvm.reader.constants import WideFloat
from zymase.llvm.reader.module_reader import read_llvm_ir

__all__ = ["WideFloat", "read_llvm_ir"]
