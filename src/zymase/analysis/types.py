"""Type analysis (Enzyme's TypeAnalysis, simplified): what pointers point to.

For every pointer-typed SSA value of one ``llvm.func`` the analysis deduces a
:class:`TypeTree`: which byte offsets, relative to the pointer, hold ``f32``,
``f64`` (also ``f16``/``bf16``/``f80``/``f128``), integers (``int``), pointers
(``ptr``, with what *they* point to), or nothing known (``unknown``). The AD engine
uses it to decide what a ``memcpy``/``memmove`` means on shadow memory (a copy of
``n`` bytes of doubles: the reverse adds ``n/8`` doubles) and to reject copies whose
contents cannot be deduced with a readable error (:meth:`TypeInfo.explain`).

Usage::

    info = analyze_types(func_op, module)
    info.of(p)                          # TypeTree of what p points to
    info.of(p).at(8)                    # 'f64'
    info.float_type_in_range(p, 64)     # 'f64', None (no floats) or ZymaseError

The analysis lives in four modules, by concern:

* :mod:`zymase.analysis.layout`: the x86-64 data layout of LLVM types;
* :mod:`zymase.analysis.type_tree`: the lattice (:class:`TypeTree` and its joins);
* :mod:`zymase.analysis.type_deductions`: the rules each instruction gives, and the
  widening of pointers advanced around cycles;
* :mod:`zymase.analysis.type_fixpoint`: the worklist fixpoint and callee summaries;

and this one, the entry point: :func:`analyze_types`, :class:`TypeInfo` (its
answers, and the "cannot deduce" error in the user's terms).

Known limits
------------
* Unions and type punning give ``mixed`` bytes or (integers) are overridden by floats.
* One ``start`` per periodic part; joining two starts keeps the lower one.
* ``inttoptr``/``ptrtoint`` arithmetic, pointers inside SSA aggregates or vectors,
  indirect calls and variadic arguments carry no information; neither does
  ``!tbaa.struct`` (the reader drops it), so a struct copy at -O2 is typed only by
  the fields the program accesses.
* The top-level function knows nothing about its callers unless ``arg_types`` is
  given to :func:`analyze_types` or the function carries the
  ``"zymase-arg-elements"`` attribute (:func:`argument_elements`: the Numba front
  end's element types of contiguous array arguments).
* :meth:`TypeInfo.float_type_in_range` accepts unknown bytes that look like struct
  padding (a gap shorter than the alignment of the next known scalar); an unused
  ``float`` field placed exactly in such a gap is indistinguishable from padding.
"""

from __future__ import annotations

from collections.abc import Sequence

from zymase.analysis.layout import FLOAT_SIZE, size_align, struct_offsets
from zymase.analysis.type_deductions import const_int, describe_op
from zymase.analysis.type_fixpoint import Analyzer, Shared
from zymase.analysis.type_tree import EMPTY, FLOAT_KINDS, MAX_OFFSET, TypeTree, array_tree
from zymase.errors import ZymaseError
from zymase.ir import ArrayAttr, BlockArgument, ModuleOp, Operation, SSAValue, StringAttr, location_of

__all__ = [
    "TypeTree",
    "TypeInfo",
    "analyze_types",
    "size_align",
    "struct_offsets",
    "FLOAT_KINDS",
]

_C_NAME = {"f16": "_Float16", "bf16": "__bf16", "f32": "float", "f64": "double",
           "f80": "long double", "f128": "__float128"}


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class TypeInfo:
    """The result of :func:`analyze_types` for one function."""

    def __init__(self, func: Operation, analyzer: Analyzer):
        self.func = func
        self._state = analyzer.state
        self._has_tbaa = analyzer.graph.has_tbaa
        #: deduction rules applied to reach the fixpoint, callee contexts included: the
        #: analysis's cost, which tests bound (a fixpoint that creeps offset by offset
        #: up to MAX_OFFSET costs hundreds of times more than one that widens)
        self.rule_applications = analyzer.graph.shared.rule_applications
        from zymase.autodiff.common import PREPARED_SUFFIX

        self._name = analyzer.graph.name.removesuffix(PREPARED_SUFFIX)  # the user's function

    def of(self, ptr_value: SSAValue) -> TypeTree:
        """What ``ptr_value`` points to (an empty tree if nothing is known)."""
        return self._state.get(ptr_value, EMPTY)

    def float_type_in_range(self, ptr_value: SSAValue, nbytes: int | None, op: Operation | None = None) -> str | None:
        """The single float type (``'f32'``, ``'f64'``, ...) of all float bytes in
        ``[0, nbytes)`` behind ``ptr_value`` (``nbytes=None``: a length not known at
        compile time; what is known of the memory is checked), or None when the range
        certainly holds no floats.

        Raises the :meth:`explain` error when floats of different types are mixed,
        when bytes hold contradictory types, or when bytes of unknown type could hold
        floats (unknown bytes that look like struct padding are accepted). ``op`` is
        the instruction the answer is for (the error names it); by default the first
        ``memcpy``/``memmove``/``memset`` using ``ptr_value`` (with length ``nbytes``
        when there are several).
        """
        problem, ftype = _classify(self.of(ptr_value), nbytes)
        if problem is not None:
            if op is None:
                op = _user_op(ptr_value, nbytes)
            raise self.explain(ptr_value, op, reason=problem)
        return ftype

    def explain(self, ptr_value: SSAValue, op: Operation | None, *, reason: str | None = None) -> ZymaseError:
        """The readable "cannot deduce type" error for the memory behind ``ptr_value``
        at instruction ``op``: names the value (its name hint, else its defining
        instruction and line, or which argument it is), the instruction, the function
        and the source line, what is known, and how to help. ``reason`` overrides the
        description of what is wrong (default: from the tree of ``ptr_value``)."""
        tree = self.of(ptr_value)
        mixed = False
        if reason is None:
            problem = _classify(tree, None)[0]
            reason = problem if problem is not None else "its contents are not known"
        partial = False
        if isinstance(reason, _Problem):
            mixed, partial, reason = reason.mixed, reason.partial, reason.text
        construct = describe_op(op) if op is not None else None
        verb = next((w for w in ("memcpy", "memmove", "memset") if construct and w in construct), None)
        what = f"the memory that {_describe_value(ptr_value, self._name)} points to"
        if verb is not None:
            what += f", copied by this {verb}"
        if mixed:
            message = f"cannot deduce a single floating-point type for {what}: {reason}"
        else:
            message = f"cannot deduce the type of {what}: {reason}"
        location = location_of(op) if op is not None else None
        if location is None and isinstance(ptr_value.owner, Operation):
            location = location_of(ptr_value.owner)
        if partial:
            hint = ("move whole values (whole doubles, whole structs) instead of byte ranges; where this is "
                    "std::vector::insert of a variable, insert a copy of it (v.insert(pos, T(x)))")
        elif mixed:
            hint = (f"copy the fields one by one instead of with one {verb or 'copy'}, "
                    "so that each copy moves a single floating-point type")
        else:
            known = sorted(k for k in tree.kinds() if k in FLOAT_KINDS)
            elem = f"{_C_NAME[known[0]]}*" if len(known) == 1 else "double* or float*"
            instead = f"instead of the {verb}" if verb else "before this instruction"
            hint = (f"let the analysis see the element type: read or write the memory through a "
                    f"{elem} in this function (e.g. copy with a loop over typed elements {instead}); "
                    "a C cast alone does not help, it leaves no trace in the IR")
            if not self._has_tbaa:
                hint += "; or compile with -O1 or higher so that TBAA type information is available"
        if location is None:
            hint += "; compile with -g to see source lines in messages"
        return ZymaseError(message, construct=construct, function=self._name, location=location, hint=hint)


class _Problem:
    """Why :meth:`TypeInfo.float_type_in_range` has no answer."""

    def __init__(self, text: str, mixed: bool = False, partial: bool = False):
        self.text = text
        self.mixed = mixed
        self.partial = partial

    def __str__(self) -> str:
        return self.text


_KIND_TEXT = {**_C_NAME, "int": "integer", "ptr": "pointer"}


def _fmt_range(lo: int, hi: int) -> str:
    return f"byte {lo}" if hi == lo + 1 else f"bytes [{lo}, {hi})"


def _classify(tree: TypeTree, nbytes: int | None) -> tuple[_Problem | None, str | None]:
    """(problem or None, float type or None) for the bytes [0, nbytes)."""
    if nbytes is not None and nbytes <= 0:
        return None, None
    if tree.is_empty():
        span = f"none of the {nbytes} bytes" if nbytes is not None else "none of its bytes"
        return _Problem(f"{span} is ever read or written with a known type in this function or its "
                        "callees, so it could hold doubles, floats, integers or pointers"), None
    end = tree.extent()
    beyond = False
    if nbytes is None and end == 0:
        # only bytes before the pointer are known (a copy to just past a double written
        # at a run-time offset: std::vector's insert): the copied bytes are unknown, and
        # taking them for "no floats" dropped their adjoints
        return _Problem("none of the bytes from the pointer on is ever read or written with a known type "
                        "in this function or its callees, so they could hold doubles, floats, integers "
                        "or pointers"), None
    if nbytes is None:
        hi = end
    elif tree.period is not None:
        hi = min(nbytes, end + max(p for p, _ in tree.periods()))
    else:
        hi = min(nbytes, MAX_OFFSET)
        beyond = nbytes > MAX_OFFSET
    runs = tree.runs(0, hi)
    floats: dict[str, tuple[int, int]] = {}
    unknown: list[tuple[int, int]] = []
    max_align = 1
    for i, (lo, up, kind) in enumerate(runs):
        if kind == "mixed":
            return _Problem(f"{_fmt_range(lo, up)} are accessed with contradictory types "
                            "(as different floating-point types, or as a float and a pointer)", True), None
        if kind in FLOAT_KINDS:
            floats.setdefault(kind, (lo, up))
            max_align = max(max_align, FLOAT_SIZE[kind])
        elif kind == "ptr":
            max_align = max(max_align, 8)
        elif kind == "unknown":
            if not _padding(tree, runs, i, nbytes, max_align):
                unknown.append((lo, up))
    if runs and runs[0][0] == 0 and runs[0][2] in FLOAT_KINDS:
        kind = runs[0][2]
        start = _run_start(tree, kind)
        if -start % FLOAT_SIZE[kind]:
            # the pointer is inside a float (``(char *)y + 4`` over doubles): the copy's
            # adjoint walks whole floats from it, which straddle two of the memory's
            # floats (a silently wrong reverse derivative with a run-time length, session 32)
            return _Problem(f"the copy starts inside a {_C_NAME[kind]}: bytes [{start}, 0) before the pointer are "
                            f"the first part of the {_C_NAME[kind]} at byte 0, so only part of its bytes is "
                            "copied", partial=True), None
    if nbytes is not None and hi == nbytes:
        for lo, up, kind in runs:
            if kind in FLOAT_KINDS and (up - lo) % FLOAT_SIZE[kind]:
                # a float's bytes split between accesses (SROA copies a std::complex as
                # its byte 0 and bytes 1..15 when std::vector::insert copies the value
                # first); moving adjoints of part of a float has no meaning
                return _Problem(f"{_fmt_range(lo, up)} hold {_C_NAME[kind]} values but are not a whole "
                                f"number of them: only part of a {_C_NAME[kind]}'s bytes is accessed here",
                                partial=True), None
    if len(floats) > 1:
        (k1, r1), (k2, r2) = list(floats.items())[:2]
        return _Problem(f"it holds both {_C_NAME[k1]} ({_fmt_range(*r1)}) and {_C_NAME[k2]} "
                        f"({_fmt_range(*r2)})", True), None
    if unknown or beyond:
        total = f"of the {nbytes} bytes " if nbytes is not None else ""
        first = unknown[0] if unknown else (MAX_OFFSET, nbytes)
        known = ", ".join(f"{_fmt_range(lo, up)} {_KIND_TEXT.get(k, k)}" for lo, up, k in runs if k != "unknown")
        verb = "is" if first[1] == first[0] + 1 else "are"
        text = (f"{_fmt_range(*first)} {total}{verb} never read or written with a known type, "
                "so they could hold floating-point values")
        if known:
            text += f" (known: {known})"
        return _Problem(text), None
    return None, next(iter(floats), None)


def _run_start(tree: TypeTree, kind: str) -> int:
    """Where the run of ``kind`` bytes through offset 0 begins (0 or below): floats are
    contiguous there, so a float starts at that offset plus a multiple of its size."""
    start = 0
    while start > -MAX_OFFSET and tree.at(start - 1) == kind:
        start -= 1
    return start


def _padding(tree: TypeTree, runs: list[tuple[int, int, str]], i: int, nbytes: int | None, max_align: int) -> bool:
    """Whether the unknown run ``runs[i]`` looks like struct padding."""
    lo, up, _ = runs[i]
    if lo == 0 or runs[i - 1][2] == "unknown":
        return False
    gap = up - lo
    period = tree.period
    if period is not None and up % period == 0 and gap < max_align and up % max_align == 0:
        # the tail padding of an array's element (a struct {float; int; ptr; float} of
        # 24 bytes): the next element starts there, whatever its first field's alignment
        return True
    if i + 1 < len(runs) or tree.at(up) != "unknown":
        nxt = tree.at(up)
        if nxt in FLOAT_KINDS:
            align = FLOAT_SIZE[nxt]
        elif nxt == "ptr":
            align = 8
        elif nxt == "int":
            n = 1
            while n < 8 and tree.at(up + n) == "int":
                n += 1
            align = 1
            while align * 2 <= n:
                align *= 2
        else:
            return False
        return gap < align and up % align == 0
    # trailing gap at the end of the range
    return nbytes is not None and up == nbytes and gap < max_align and up % max_align == 0


def _user_op(v: SSAValue, nbytes: int | None) -> Operation | None:
    candidates = []
    for use in v.uses:
        u = use.operation
        text = describe_op(u)
        if any(w in text for w in ("memcpy", "memmove", "memset")):
            candidates.append(u)
    for u in candidates:
        length = u.operands[2] if len(u.operands) > 2 else None
        if length is not None and const_int(length) == nbytes:
            return u
    if candidates:
        return candidates[0]
    return v.owner if isinstance(v.owner, Operation) else None


def _describe_value(v: SSAValue, fname: str) -> str:
    if v.name_hint:
        return f"'%{v.name_hint}'"
    if isinstance(v, BlockArgument):
        block = v.block
        region = block.parent
        if region is not None and region.blocks.first is block:
            return f"the {_ordinal(v.index + 1)} argument of '{fname}'"
        return "a pointer merged where control flow joins (a phi)"
    owner = v.owner
    text = f"the result of '{describe_op(owner)}'"
    loc = location_of(owner)
    if loc is not None:
        text += f" at {loc}"
    return text


def analyze_types(func_op: Operation, module: ModuleOp | None = None, *,
                  arg_types: Sequence[TypeTree | None] | None = None, has_tbaa: bool | None = None) -> TypeInfo:
    """Type analysis of one ``llvm.func``.

    ``module`` (default: the function's parent module) provides callee bodies for
    the interprocedural part and global types. ``arg_types`` optionally seeds what the
    pointer arguments point to (e.g. known from a caller). ``has_tbaa``: whether the
    module's accesses carry TBAA, when the caller knows (else the module is walked:
    ``type_fixpoint.module_has_tbaa``).
    """
    if module is None:
        parent = func_op.parent_op()
        while parent is not None and not isinstance(parent, ModuleOp):
            parent = parent.parent_op()
        module = parent
    shared = Shared(module, has_tbaa)
    if arg_types is None:
        arg_types = argument_elements(func_op)
    seeds = [t if t is not None else EMPTY for t in (arg_types or ())]
    name = func_op.sym_name.data if hasattr(func_op, "sym_name") else "?"
    analyzer = Analyzer(shared.graph(func_op), seeds, EMPTY, (name,), plain=False)
    analyzer.run()
    return TypeInfo(func_op, analyzer)


#: the function attribute a front end puts on a function to differentiate, naming the
#: pointer parameters that point to arrays of one scalar type: ``"3:f64:8,7:int:4"``
#: (parameter, type-tree kind, element bytes); frontends/numba_kernel writes it
ELEMENTS_ATTR = "zymase-arg-elements"


def argument_elements(func_op: Operation) -> list[TypeTree | None] | None:
    """What the pointer parameters of ``func_op`` point to by its ``zymase-arg-elements``
    attribute (arrays of one scalar type from offset 0 on), or None without it: a caller
    the analysis does not see (Numba's typed arguments) may know what a pointer
    parameter's whole buffer holds, where the function reads only some elements."""
    attrs = func_op.properties.get("passthrough")
    for a in attrs.data if attrs is not None else ():
        if isinstance(a, ArrayAttr) and len(a.data) == 2 and a.data[0] == StringAttr(ELEMENTS_ATTR):
            trees: list[TypeTree | None] = [None] * len(func_op.body.blocks.first.args)
            for item in a.data[1].data.split(","):
                index, kind, size = item.split(":")
                trees[int(index)] = array_tree(kind, int(size))
            return trees
    return None
