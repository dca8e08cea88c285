"""The ``restrict`` promises of inlined callees, kept through differentiation.

When LLVM inlines a function with ``noalias`` (``restrict``) parameters it gives every
load and store of the inlined body scoped-noalias metadata (one scope per parameter,
in a domain of that call site: an access through ``a`` is in ``a``'s scope and
declared not to alias the scopes of the other parameters), and marks the start of the
inlined body with ``llvm.experimental.noalias.scope.decl`` per scope. Passes that
duplicate code duplicate the scopes declared in the copied region (an unrolled loop
iteration is another call), so that the promise never spans two calls.

The reader keeps these on the ops as attributes, the writer prints them back:

* ``zymase.src_alias_scope`` / ``zymase.src_noalias`` on ``llvm.load`` / ``llvm.store``:
  ArrayAttr of scope names;
* ``zymase.scope_decl`` (a scope name) on the ``llvm.call_intrinsic`` of the decl.

A scope name is ``"<domain>|<scope>"``: the writer makes one metadata domain per
distinct ``<domain>``. (zymase.transforms.alias_scopes' own scopes have no ``|`` and
live in the one domain ``zymase``.)

Differentiation mirrors the promise onto the shadows (zymase.autodiff.memory: each
shadow access gets the twin of its primal's scopes, and each decl has a twin decl).
Copies the engine makes elsewhere (values recomputed in the reverse sweep) lose their
scopes with :func:`drop_scopes`: they stand outside the region the decl opened. Copies
of a whole region get scopes of their own with :func:`freshen_scopes`.
"""

from __future__ import annotations

from collections.abc import Iterable

from zymase.analysis.op_classes import is_a
from zymase.ir import ArrayAttr, Operation, StringAttr, fast_ops, llvm

SRC_ALIAS_SCOPE = "zymase.src_alias_scope"
SRC_NOALIAS = "zymase.src_noalias"
SCOPE_DECL = "zymase.scope_decl"
DECL_INTRINSIC = "llvm.experimental.noalias.scope.decl"


def scope_name(domain: str, scope: str) -> str:
    return f"{domain}|{scope}"


def scope_domain(name: str) -> str | None:
    """The domain of a scope name (None for zymase.transforms.alias_scopes' own)."""
    domain, sep, _ = name.partition("|")
    return domain if sep else None


def is_scope_decl(op: Operation) -> bool:
    return is_a(op, llvm.CallIntrinsicOp) and SCOPE_DECL in op.attributes


def scope_decl(name: str) -> Operation:
    op = fast_ops.call_intrinsic(DECL_INTRINSIC, [], [])
    op.attributes[SCOPE_DECL] = StringAttr(name)
    return op


def source_scopes(op: Operation) -> tuple[list[str], list[str]]:
    """(alias scopes, noalias scopes) the source program gave ``op``."""
    out = []
    for key in (SRC_ALIAS_SCOPE, SRC_NOALIAS):
        attr = op.attributes.get(key)
        out.append([a.data for a in attr.data] if isinstance(attr, ArrayAttr) else [])
    return out[0], out[1]


def drop_scopes(op: Operation) -> None:
    """Forget the source's scopes on a copy of ``op`` placed outside its region."""
    op.attributes.pop(SRC_ALIAS_SCOPE, None)
    op.attributes.pop(SRC_NOALIAS, None)


def freshen_scopes(ops: Iterable[Operation], tag: str, *, declared_only: bool) -> None:
    """Rename scopes in ``ops``, a copy of a region, so that the copy's promises are its
    own: every scope (``declared_only=False``: the copy is a whole inlined body, as
    LLVM's inliner clones all of a callee's scopes) or the scopes declared inside the
    copy (``declared_only=True``: a duplicated loop iteration, as LLVM's unroller does)."""
    ops = list(ops)
    if declared_only:
        names = {op.attributes[SCOPE_DECL].data for op in ops if is_scope_decl(op)}
    else:
        names = {n for op in ops for part in source_scopes(op) for n in part}
        names |= {op.attributes[SCOPE_DECL].data for op in ops if is_scope_decl(op)}
    if not names:
        return

    def fresh(n: str) -> str:
        if n not in names:
            return n
        domain, _, scope = n.partition("|")
        return scope_name(f"{domain}.{tag}", scope)

    for op in ops:
        for key in (SRC_ALIAS_SCOPE, SRC_NOALIAS):
            attr = op.attributes.get(key)
            if isinstance(attr, ArrayAttr):
                op.attributes[key] = ArrayAttr([StringAttr(fresh(a.data)) for a in attr.data])
        if is_scope_decl(op):
            op.attributes[SCOPE_DECL] = StringAttr(fresh(op.attributes[SCOPE_DECL].data))
