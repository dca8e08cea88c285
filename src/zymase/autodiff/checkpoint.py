"""Checkpointing under a tape limit (issue 27 item 4): a time loop reversed by binomial
checkpointing instead of taping every iteration.

Entry points: :func:`tape_limit` / :func:`limiting_tape` (the limit of the compilation,
``zymase cc --tape-limit``, ``ZYMASE_TAPE_LIMIT``, ``tape_limit=`` of the Python
transforms), :func:`outline_time_loops` (called by ``common.prepare`` for a combined reverse
derivative when a limit is set) and :func:`is_checkpointed_loop` / :func:`forward_call` /
:func:`reverse_call` (called by the reverse generator for the call that replaced the loop).

Under a limit, every outermost loop of the function that does float work is outlined:

- ``<f>.ckpt<k>.step(ptr env)`` runs one iteration (header to back edge or exit) on an
  environment record ``env``: a struct of the handle, an exit flag, the header's block
  arguments, the exit block's arguments, the loop's inputs, the values it defines and the
  code after it uses, and the objects it stores to (pointer and size in bytes);
- ``<f>.ckpt<k>(ptr env, ptr roots...)`` runs the step until the flag is set; the loop is
  replaced by stores into ``env``, this call and loads of the results. The call passes the
  stored-to objects too, so that activity analysis gives them shadows (a call of a defined
  function with pointer operands reaches them all).

The caller's reverse generator treats the call as a split call: its forward sweep calls
``__zymase_ckpt_forward`` (runtime ``checkpoint_runtime.c``: snapshot of ``env`` and the
stored-to objects, the loop run to its end) and its reverse sweep ``__zymase_ckpt_reverse``
(revolve over the iterations, each reversed by the step's combined derivative with ``env``
dup: the adjoints of the carried registers and inputs travel in the shadow of ``env``).
In vector mode (width N, as Enzyme's checkpointed loops take it: one schedule for all
lanes) the primal state, its snapshots and recomputations are one; each iteration is
reversed by one call of the step's width-N derivative (``<step>.lanes<N>`` passes it the
N shadow records the runtime holds as an array), and the runtime rebuilds the pointer
slots of every lane's shadow record.
The stored-to stack objects get room after them in the derivative, so that the runtime,
which maps each carried pointer to the object it points into or just past, never takes one
past the end of one for the start of the next (heap blocks that still lie side by side make
such a pointer an error at run time, with the loop's error line).
A loop whose state cannot be bounded (a store through a pointer whose object is not an
allocation made before the loop, an allocation in the loop, a call that may write memory)
is refused, naming the loop's line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from zymase.errors import ZymaseError

#: the environment variable a limit can be given in (read at compile time)
LIMIT_ENV = "ZYMASE_TAPE_LIMIT"
#: the runtime the generated code calls, and the prefix of its functions
RUNTIME_SOURCE = Path(__file__).with_name("checkpoint_runtime.c")
RUNTIME_PREFIX = "__zymase_ckpt_"
#: attribute of the outlined loop function (and of its step, which is never outlined again)
LOOP_ATTR = "zymase.checkpointed_loop"
STEP_ATTR = "zymase.checkpoint_step"
#: attributes of the outlined loop function, comma-separated positions: the record's pointer
#: slots whose shadows the runtime rebuilds (not the inputs pointing into objects the loop
#: does not store to, which might lie just past one it does), and the stored-to objects
#: that are local pointer variables, rebuilt the same way
RECORD_SLOTS_ATTR = "zymase.checkpoint_record_slots"
LOCAL_SLOTS_ATTR = "zymase.checkpoint_local_slots"
#: attribute of a stored-to stack object given room after it (one past its end is no other
#: object's start)
PADDED_ATTR = "zymase.checkpoint_padded"
#: attribute of the outlined loop function: the error line the runtime prints for a carried
#: pointer at the boundary of two stored-to objects side by side
AMBIGUOUS_ATTR = "zymase.checkpoint_ambiguous"
#: attribute of the records (allocas) an outlined loop's call is given: only that call and
#: its step see their address, so no pointer of the program points into them
RECORD_ATTR = "zymase.checkpoint_record"

_LIMIT: ContextVar[int | None] = ContextVar("zymase_tape_limit", default=None)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, *, what: str = "--tape-limit") -> int:
    """Bytes of a size such as ``4096``, ``16M``, ``1G``, ``512KiB``, ``16MB`` (binary units)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)(i?[bB])?\s*", text or "")
    if m is None or int(m.group(1)) == 0:
        raise ZymaseError(f"{what}: '{text}' is not a size",
                          hint="give a positive number of bytes with an optional unit, e.g. 16M or 1G")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def tape_limit() -> int | None:
    """The tape limit in bytes of the derivatives generated now (None: unlimited)."""
    limit = _LIMIT.get()
    if limit is not None:
        return limit
    env = os.environ.get(LIMIT_ENV)
    return parse_size(env, what=LIMIT_ENV) if env else None


@contextmanager
def limiting_tape(limit: int | str | None) -> Iterator[None]:
    """Generate the derivatives built inside under ``limit`` (bytes or a size string)."""
    if isinstance(limit, str):
        limit = parse_size(limit, what="tape_limit")
    elif limit is not None and (not isinstance(limit, int) or limit <= 0):
        raise ZymaseError(f"tape_limit: {limit!r} is not a size", hint="give a positive number of bytes or e.g. '16M'")
    token = _LIMIT.set(limit)
    try:
        yield
    finally:
        _LIMIT.reset(token)


def is_checkpointed_loop(fop) -> bool:
    return fop is not None and LOOP_ATTR in fop.attributes


# ----------------------------------------------------------------------------------------
# outlining (on the private copy of a body, in common.prepare)
# ----------------------------------------------------------------------------------------


def outline_time_loops(ctx, region, fop, arg_acts) -> int:
    """Outline each outermost loop of ``region`` that does float work (see the module
    docstring); the number outlined."""
    from zymase.analysis.cfg import CFG

    if STEP_ATTR in fop.attributes:
        return 0
    count = 0
    slots = _local_variables(region, CFG.build(region), ctx.flavor)
    while True:
        cfg = CFG.build(region)
        loops = cfg.natural_loops()
        outer = [(h, body) for h, body in loops
                 if not any(h in other and h is not oh for oh, other in loops)]
        outer = [(h, body) for h, body in outer if _does_float_work(body)]
        if not outer:
            return count
        h, body = outer[0]
        _Outliner(ctx, region, fop, cfg, h, body, arg_acts, slots).run()
        count += 1


def _local_variables(region, cfg, flavor) -> dict:
    """What each stack slot of ``region`` may hold (``memory.slot_contents``), found before
    any loop is outlined: an outlined loop's slots are stored into its record and passed to
    its call, and its stores into them move into the step function."""
    from zymase.analysis.memory import memory_kind, slot_contents

    def incoming(arg):
        return [ops[arg.index] for e in cfg.preds[arg.block]
                for ops in [flavor.successor_operands(cfg.terminator(e.src))[e.slot]]]

    allocas = [op for b in region.blocks for op in b.ops if memory_kind(op) == "alloca"]
    return slot_contents(allocas, region.blocks[0], incoming)


def _does_float_work(body) -> bool:
    from zymase.ir import is_float_type

    return any(is_float_type(r.type) for b in body for op in b.ops for r in op.results)


class _Outliner:
    def __init__(self, ctx, region, fop, cfg, h, body, arg_acts, slots):
        from zymase.autodiff.common import function_name

        self.ctx, self.region, self.fop, self.cfg, self.h = ctx, region, fop, cfg, h
        self.body = body
        # the body's blocks in the function's order: iterating the set would order the
        # environment record's fields by object identity, differently from run to run
        self.ordered = [b for b in region.blocks if b in body]
        self.arg_acts = list(arg_acts)
        self.fname = function_name(fop)
        self.flavor = ctx.flavor
        self.slots = slots  # what each stack slot may hold (_local_variables)

    def _roots(self, ptr):
        """The objects ``ptr`` may point into (``memory.pointer_roots``), through the local
        pointer variables of unoptimized code (``--no-preopt``: ``u`` and ``v`` of a buffer
        swap live in ``alloca ptr`` slots, each load of them one of the pointers stored)."""
        from zymase.analysis.memory import pointer_roots

        def incoming(arg):
            return [ops[arg.index] for e in self.cfg.preds[arg.block]
                    for ops in [self.flavor.successor_operands(self.cfg.terminator(e.src))[e.slot]]]

        return pointer_roots(ptr, self.region.blocks[0], incoming, slots=self.slots)

    # ---- refusals ---------------------------------------------------------------------
    def _loop_location(self) -> str | None:
        """The loop's line: that of the branch that leaves it (the loop's condition), else of
        its header's first located op."""
        from zymase.ir import location_of

        exits = [e.src.last_op for b in self.ordered for e in self.cfg.succs[b] if e.dst not in self.body]
        return next((w for w in (location_of(op) for op in [*exits, *self.h.ops]) if w), None)

    def _refuse(self, why: str, at, hint: str):
        from zymase.ir import location_of

        where = self._loop_location() or (location_of(at) if at is not None else None)
        raise ZymaseError(
            f"the loop cannot be checkpointed under the tape limit: {why}",
            construct=_describe(at) if at is not None else None, function=self.fname, location=where, hint=hint)

    def _objects_written(self):
        """The allocation ops of the objects the loop stores to, in program order."""
        from zymase.analysis.memory import (ALLOCATION_KINDS, callee_name, holds_pointer, intrinsic_base_name,
                                            is_pointer, may_write_unseen_memory, memory_kind)
        from zymase.ir import BlockArgument, llvm

        hint = ("allocate the state the time loop updates (malloc, calloc or a local array) in the function "
                "before the loop, or raise the tape limit")
        roots: dict = {}
        pointers_into = []
        for b in self.ordered:
            for op in b.ops:
                kind = memory_kind(op)
                targets = []
                if kind == "store":
                    targets = [op.ptr]
                elif kind in ("memcpy", "memset"):
                    targets = [op.operands[0]]
                elif kind in ALLOCATION_KINDS or kind in ("free", "realloc", "nrt_alloc"):
                    self._refuse("it allocates or frees memory in its body", op, hint)
                elif kind == "call_rule" or (kind is None and isinstance(op, llvm.CallOp)):
                    callee = callee_name(op)
                    decl = self.ctx.driver.lookup_function(callee) if callee else None
                    defined = decl is not None and bool(decl.body.blocks)
                    writes = (self.ctx.writes_memory(decl) if defined else
                              kind == "call_rule" or any(is_pointer(o) for o in op.operands)
                              or may_write_unseen_memory(decl))
                    if writes and self.ctx.rule_for(op) is None:
                        self._refuse("it calls a function that may write memory the analysis cannot bound", op,
                                     "make the call's effects visible (define it in this file) or raise the tape limit")
                elif isinstance(op, llvm.CallIntrinsicOp) and intrinsic_base_name(op) in ("memmove",):
                    targets = [op.operands[0]]
                for ptr in targets:
                    if kind == "store" and holds_pointer(op.value.type):
                        pointers_into.append(ptr)
                    found = self._roots(ptr)
                    if found is None:
                        self._refuse("it stores through a pointer whose object the analysis cannot determine", op, hint)
                    for root in found:
                        if isinstance(root, (str, BlockArgument)):
                            what = f"the global '{root}'" if isinstance(root, str) else "memory a pointer argument points to"
                            self._refuse(f"it stores into {what}, whose extent the analysis does not know", op, hint)
                        if root.parent_block() in self.body:
                            self._refuse("it stores into memory allocated in its body", op, hint)
                        if memory_kind(root) not in ("alloca", "malloc", "calloc"):
                            self._refuse("it stores into memory of an allocation the analysis cannot size", op, hint)
                        roots.setdefault(root, None)
        roots = list(roots)
        self.pointer_slots = self._pointer_slots(roots, {r for p in pointers_into for r in self._roots(p)})
        return roots

    def _pointer_slots(self, roots, given_pointers) -> list[int]:
        """The positions in ``roots`` of the local pointer variables the loop stores to
        (``alloca ptr``, unoptimized code's ``u`` and ``v`` of a buffer swap): the runtime
        rebuilds their shadows as it does the record's pointer slots, which needs each
        pointer they ever hold to point into an object the loop stores to. Pointers
        stored into other memory (``given_pointers``: the objects written with values
        holding pointers) would keep shadows of another iteration. (A copy into a local
        variable makes its contents unknown; a copy into other memory is taken for data,
        as before.)"""
        from zymase.analysis.memory import holds_pointer, memory_kind
        from zymase.ir import IntegerAttr, llvm

        hint = ("keep the pointers the loop swaps or moves in variables that point into the arrays it updates "
                "(allocated before the loop), or raise the tape limit")
        slots = []
        for i, root in enumerate(roots):
            local = memory_kind(root) == "alloca" and holds_pointer(root.elem_type)
            if not local:
                if root in given_pointers:
                    self._refuse("it stores pointers into memory whose shadows the checkpoints cannot rebuild",
                                 None, hint)
                continue
            count = root.size.owner if hasattr(root.size, "owner") else None
            one = (isinstance(count, llvm.ConstantOp) and isinstance(count.value, IntegerAttr)
                   and count.value.value.data == 1)
            if not isinstance(root.elem_type, llvm.LLVMPointerType) or not one:
                self._refuse("it stores into a local array or record holding pointers, whose shadows the "
                             "checkpoints cannot rebuild", None, hint)
            held = self.slots.get(root)
            if held is None or not held <= set(roots):
                self._refuse("it keeps in a local variable a pointer into memory it does not store to (or one "
                             "the analysis cannot follow)", None, hint)
            slots.append(i)
        return slots

    # ---- the rewrite ------------------------------------------------------------------
    def run(self) -> None:
        from zymase.analysis.memory import is_pointer
        from zymase.autodiff.checkpoint_reads import check_reads_unchanged_after
        from zymase.autodiff.flavor import Emitter
        from zymase.ir import Block, IntegerAttr, StringAttr, i8, i64, llvm

        region, cfg, h, body, flavor = self.region, self.cfg, self.h, self.body, self.flavor
        entering = [e for e in cfg.preds[h] if e.src not in body]
        exits = [e for b in self.ordered for e in cfg.succs[b] if e.dst not in body]
        hint = "give the loop a single entry and a single exit block, or raise the tape limit"
        if len(entering) != 1:
            self._refuse("it is entered from several places", None, hint)
        if not exits or len({e.dst for e in exits}) != 1:
            self._refuse("it leaves to several places (or never)", None, hint)
        x = exits[0].dst
        where = self._loop_location()  # (before the body moves into the step)
        roots = self._objects_written()
        # objects allocated on only some of the paths to the loop (clang -O2 allocates a
        # variable-length array in both branches of an if before it, fuzz c-ckpt seed
        # 940602): the call that replaces the loop gets them through local variables
        partial = [r for r in roots if not cfg.dominates(r.parent_block(), entering[0].src)]
        if partial and self._reached_from(x) & {r.parent_block() for r in partial}:
            self._refuse("it stores into an array allocated on only some of the paths that lead to it, and "
                         "again after it", None,
                         "allocate the array with malloc before the loop, or raise the tape limit")
        check_reads_unchanged_after(self, roots, x)
        self._free_roots_directly(roots)
        ptr = llvm.LLVMPointerType()

        # values the loop reads from outside (constants and global addresses are copied in)
        live_in: dict = {}
        copied: dict = {}
        escaping: dict = {}
        for b in self.ordered:
            for op in b.ops:
                for v in op.operands:
                    owner = v.owner if not hasattr(v, "block") else None
                    if hasattr(v, "block"):
                        if v.block not in body:
                            live_in.setdefault(v, None)
                    elif owner.parent_block() not in body:
                        if flavor.is_constant(owner) or isinstance(owner, (llvm.AddressOfOp, llvm.ZeroOp,
                                                                              llvm.UndefOp)):
                            copied.setdefault(owner, None)
                        else:
                            live_in.setdefault(v, None)
                for r in op.results:
                    if any(u.operation.parent_block() not in body for u in r.uses):
                        escaping.setdefault(r, None)
            for a in b.args:
                if any(u.operation.parent_block() not in body for u in a.uses):
                    escaping.setdefault(a, None)

        self._check_carried_pointers(roots, [*h.args, *x.args, *escaping])
        # what the pointers the code after the loop receives point into (stored-to objects,
        # as just checked): read back from the record below, they are not unknown
        handed_roots = {v: self._roots(v) for v in [*x.args, *escaping] if is_pointer(v)}
        # pointers into constant arguments' memory go in a second record, passed to the
        # step as a constant argument: read from the first (whose shadow the derivative
        # reads too) they would be taken for pointers with shadows, which they have not
        const_in = [v for v in live_in if self._constant_pointer(v, roots)]
        live_in = {v: None for v in live_in if v not in const_in}
        const_t = llvm.LLVMStructType.from_type_list([ptr] * max(1, len(const_in)))
        const_slot = {v: i for i, v in enumerate(const_in)}

        # the environment record: handle, exit flag, header args, exit args, inputs,
        # escaping values, then (pointer, size) of each stored-to object
        slots = [ptr, i8] + [a.type for a in h.args] + [a.type for a in x.args]
        slots += [v.type for v in live_in] + [v.type for v in escaping]
        first_root = len(slots)
        slots += [ptr, i64] * len(roots)
        env_t = llvm.LLVMStructType.from_type_list(slots)
        k_head = 2
        k_exit = k_head + len(h.args)
        k_in = k_exit + len(x.args)
        k_esc = k_in + len(live_in)
        in_slot = {v: k_in + i for i, v in enumerate(live_in)}
        esc_slot = {v: k_esc + i for i, v in enumerate(escaping)}

        def slot(E, env, k):
            return E.v(llvm.GEPOp(env, [0, k], pointee_type=env_t))

        driver = self.ctx.driver
        base = driver._fresh(f"{self.fname}.ckpt")
        step_name = f"{base}.step"

        # ---- the step function ----------------------------------------------------
        step = flavor.make_function(step_name, [ptr, ptr], [], self.fop)
        step.attributes[STEP_ATTR] = IntegerAttr(1, i8)
        s_entry = step.body.blocks[0]
        senv = s_entry.args[0]
        E = Emitter(flavor, self.ctx.module).at_end(s_entry)
        vmap: dict = {}
        for op in copied:
            c = op.clone()
            E.insert(c)
            vmap[op.results[0]] = c.results[0]
        for v, k in in_slot.items():
            vmap[v] = E.v(llvm.LoadOp(slot(E, senv, k), v.type))
        for v, k in const_slot.items():
            at = E.v(llvm.GEPOp(s_entry.args[1], [0, k], pointee_type=const_t))
            vmap[v] = E.v(llvm.LoadOp(at, v.type))
        heads = [E.v(llvm.LoadOp(slot(E, senv, k_head + i), a.type)) for i, a in enumerate(h.args)]
        latch = Block(arg_types=[a.type for a in h.args])
        leave = Block(arg_types=[a.type for a in x.args])
        bmap: dict = {}
        blocks = [b for b in region.blocks if b in body]
        clones = []
        for b in blocks:
            nb = Block(arg_types=[a.type for a in b.args])
            bmap[b] = nb
            for a, na in zip(b.args, nb.args):
                vmap[a] = na
        header_copy = bmap[h]
        targets = dict(bmap)
        targets[h] = latch
        targets[x] = leave
        E.insert(flavor.br(header_copy, heads))
        step.body.add_block([bmap[b] for b in blocks] + [latch, leave])
        for b in blocks:
            nb = bmap[b]
            for op in b.ops:
                if isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith("llvm.lifetime."):
                    continue  # (the objects live outside the step, which must not end them)
                c = op.clone(vmap, targets)
                nb.add_op(c)
                clones.append(c)
        for c in clones:
            c.operands = [vmap.get(o, o) for o in c.operands]
        # the values used after the loop, stored where they are defined
        for v, k in esc_slot.items():
            nv = vmap[v]
            if hasattr(nv, "block"):
                first = nv.block.first_op
                E2 = Emitter(flavor, self.ctx.module).before(first)
            else:
                E2 = Emitter(flavor, self.ctx.module).before(nv.owner.next_op)
            E2.insert(llvm.StoreOp(nv, slot(E2, senv, k)))
        for blk, flag, k0 in ((latch, 0, k_head), (leave, 1, k_exit)):
            E = Emitter(flavor, self.ctx.module).at_end(blk)
            for i, a in enumerate(blk.args):
                E.insert(llvm.StoreOp(a, slot(E, senv, k0 + i)))
            E.insert(llvm.StoreOp(E.iconst(flag, i8), slot(E, senv, 1)))
            E.insert(llvm.ReturnOp())
        self._add(step)

        # ---- the loop function (what the caller's call stands for) -------------------
        loop = flavor.make_function(base, [ptr] * (2 + len(roots)), [], self.fop)
        loop.attributes[LOOP_ATTR] = IntegerAttr(len(roots), i64)
        inputs = {k for v, k in in_slot.items() if self._points_elsewhere(v, roots)}
        record_slots = [k for k, t in enumerate(slots) if k > 0 and isinstance(t, llvm.LLVMPointerType)
                        and k not in inputs]
        loop.attributes[RECORD_SLOTS_ATTR] = StringAttr(",".join(map(str, record_slots)))
        loop.attributes[LOCAL_SLOTS_ATTR] = StringAttr(",".join(map(str, self.pointer_slots)))
        # the line the runtime prints should it find a carried pointer ambiguous
        loop.attributes[AMBIGUOUS_ATTR] = StringAttr(ZymaseError(
            "a checkpointed loop carries a pointer that is both one past the end of an object it stores to and "
            "the start of another, which lies right after it (heap blocks side by side): its shadow cannot be told",
            function=self.fname, location=where,
            hint="leave room after the first allocation (one element more), or raise the tape limit").format() + "\n")
        l_entry = loop.body.blocks[0]
        again, out = Block(), Block()
        loop.body.add_block([again, out])
        E = Emitter(flavor, self.ctx.module).at_end(l_entry)
        E.insert(flavor.br(again, []))
        E.at_end(again)
        E.insert(llvm.CallOp(step_name, l_entry.args[0], l_entry.args[1]))
        done = E.v(llvm.LoadOp(slot(E, l_entry.args[0], 1), i8))
        E.insert(flavor.cond_br(E.icmp_eq(done, E.iconst(0, i8)), again, [], out, []))
        E.at_end(out)
        E.insert(llvm.ReturnOp())
        self._add(loop)

        # ---- the caller -------------------------------------------------------------
        e_in = entering[0]
        call_block = Block(arg_types=[a.type for a in h.args])
        region.insert_block_after(call_block, e_in.src)
        term = cfg.terminator(e_in.src)
        term.successors[e_in.slot] = call_block
        E = Emitter(flavor, self.ctx.module)
        E.before(region.blocks[0].first_op)
        env = E.v(llvm.AllocaOp(E.iconst(1, i64), env_t))
        cenv = E.v(llvm.AllocaOp(E.iconst(1, i64), const_t))
        for record in (env, cenv):
            record.owner.attributes[RECORD_ATTR] = StringAttr("")
        E.at_end(call_block)
        for i, a in enumerate(call_block.args):
            E.insert(llvm.StoreOp(a, slot(E, env, k_head + i)))
        for v, k in in_slot.items():
            E.insert(llvm.StoreOp(v, slot(E, env, k)))
        for v, k in const_slot.items():
            E.insert(llvm.StoreOp(v, E.v(llvm.GEPOp(cenv, [0, k], pointee_type=const_t))))
        # the pointer slots the loop writes before the code after it reads them start
        # null: the runtime rebuilds the shadows of every pointer slot from its value
        # (checkpoint_runtime.c), which must not be undefined
        late = [(k_exit + i, a.type) for i, a in enumerate(x.args)] + [(k, v.type) for v, k in esc_slot.items()]
        for k, typ in late:
            if isinstance(typ, llvm.LLVMPointerType):
                E.insert(llvm.StoreOp(E.v(llvm.ZeroOp.build(result_types=[ptr])), slot(E, env, k)))
        objects = [self._object_through_variables(root, E) if root in partial
                   else (root.results[0], _object_size(E, root)) for root in roots]
        for i, (address, size) in enumerate(objects):
            E.insert(llvm.StoreOp(address, slot(E, env, first_root + 2 * i)))
            E.insert(llvm.StoreOp(size, slot(E, env, first_root + 2 * i + 1)))
        E.insert(llvm.CallOp(base, env, cenv, *[address for address, _ in objects]))

        def handed(v, k):
            # the record's slot as a local variable holding the loop's pointer (pointer_roots
            # follows loads from the addresses self.slots lists), so that a later loop's
            # check of its reads knows what the code after this one reads through it
            at = slot(E, env, k)
            if v in handed_roots:
                self.slots[at.owner] = handed_roots[v]
            return E.v(llvm.LoadOp(at, v.type))

        outs = [handed(a, k_exit + i) for i, a in enumerate(x.args)]
        for v, k in esc_slot.items():
            loaded = handed(v, k)
            for use in list(v.uses):
                if use.operation.parent_block() not in body:
                    use.operation.operands[use.index] = loaded
        E.insert(flavor.br(x, outs))
        for b in blocks:
            region.detach_block(b)
        for b in blocks:  # (detached: their ops' uses of the values around them go)
            for op in list(b.ops):
                op.drop_all_references()
        self._pad_stack_objects(roots)

    def _reached_from(self, block) -> set:
        """The blocks reachable from ``block`` (itself included)."""
        found, work = set(), [block]
        while work:
            b = work.pop()
            if b not in found:
                found.add(b)
                work.extend(e.dst for e in self.cfg.succs[b])
        return found

    def _object_through_variables(self, root, E):
        """(address, size) of stored-to object ``root``, allocated on only some of the paths
        to the loop, as loaded by ``E`` (at the call replacing the loop) from two local
        variables: null and 0 from the function's start, the object's where it is allocated
        (the runtime snapshots 0 bytes of the other one). The variable holding the address
        is registered as one (``self.slots``), so that pointer_roots follows it."""
        from zymase.autodiff.flavor import Emitter
        from zymase.ir import i64, llvm

        ptr = llvm.LLVMPointerType()
        at_start = Emitter(self.flavor, self.ctx.module).before(self.region.blocks[0].first_op)
        variables = [at_start.v(llvm.AllocaOp(at_start.iconst(1, i64), t)) for t in (ptr, i64)]
        at_start.insert(llvm.StoreOp(at_start.v(llvm.ZeroOp.build(result_types=[ptr])), variables[0]))
        at_start.insert(llvm.StoreOp(at_start.iconst(0, i64), variables[1]))
        self.slots[variables[0].owner] = {root}
        after_root = Emitter(self.flavor, self.ctx.module).before(root.next_op)
        after_root.insert(llvm.StoreOp(root.results[0], variables[0]))
        after_root.insert(llvm.StoreOp(_object_size(after_root, root), variables[1]))
        return E.v(llvm.LoadOp(variables[0], ptr)), E.v(llvm.LoadOp(variables[1], i64))

    def _pad_stack_objects(self, roots) -> None:
        """Room after each stored-to stack object, so that a pointer one past its end is
        never the start of another one: the runtime maps a carried pointer to the object
        it points into or just past (checkpoint_runtime.c, zymase_ckpt_region_of), and
        stack objects otherwise lie side by side (``a + 4`` would be taken for ``b``, its
        shadow for ``b``'s, a silent wrong adjoint of ``p[-1]``). The recorded bytes (the
        table stored above) stay the object's own. ``alloca T`` becomes ``alloca {T,
        [1 x i8]}`` (one alignment unit of ``T`` more); ``alloca T, n`` one ``T`` more.
        Only the derivative's copy of the function is changed."""
        from zymase.analysis.memory import memory_kind
        from zymase.analysis.trip_count import constant_int
        from zymase.ir import StringAttr, i8, llvm

        for root in roots:
            if memory_kind(root) != "alloca" or PADDED_ATTR in root.attributes:
                continue
            root.attributes[PADDED_ATTR] = StringAttr("")
            count = root.operands[0]
            if constant_int(count) == 1:
                root.properties["elem_type"] = llvm.LLVMStructType.from_type_list(
                    [root.elem_type, llvm.LLVMArrayType(1, i8)])
                continue
            one = self.flavor.iconst(1, count.type)
            more = self.flavor.iadd(count, one.results[0])
            root.parent_block().insert_ops_before([one, more], root)
            root.operands[0] = more.results[0]

    def _check_carried_pointers(self, roots, values) -> None:
        """The pointers the loop carries from one iteration to the next or hands to the code
        after it must point into objects it stores to: the runtime rebuilds their shadows
        from those objects' (checkpoint_runtime.c, zymase_ckpt_shadows), which the forward
        sweep's primal steps do not carry along."""
        from zymase.analysis.memory import is_pointer

        for v in values:
            if not is_pointer(v):
                continue
            found = self._roots(v)
            if found is None or not found <= set(roots):
                self._refuse("it carries a pointer from one iteration to the next (or out of the loop) into memory "
                             "it does not store to", None,
                             "index the array with an integer instead of walking a pointer through it, or raise "
                             "the tape limit")

    def _points_elsewhere(self, v, roots) -> bool:
        """Whether ``v`` is a pointer known to point only into objects the loop does not
        store to (its shadow, stored by the caller, never changes)."""
        from zymase.analysis.memory import is_pointer

        found = self._roots(v) if is_pointer(v) else None
        return found is not None and not found & set(roots)

    def _constant_pointer(self, v, roots) -> bool:
        """Whether pointer ``v`` points only into memory of constant arguments, or into
        local pointer variables the loop does not store to that hold only such pointers
        (unoptimized code's copy of a constant array argument: memory with no derivative)."""
        from zymase.analysis.memory import is_pointer, memory_kind
        from zymase.ir import BlockArgument, llvm

        def constant(r, depth=0) -> bool:
            if isinstance(r, BlockArgument):
                return r.block is self.region.blocks[0] and self.arg_acts[r.index].is_const
            if depth or r in roots or memory_kind(r) != "alloca" or not isinstance(r.elem_type,
                                                                                    llvm.LLVMPointerType):
                return False
            held = self.slots.get(r)
            return bool(held) and all(constant(q, depth + 1) for q in held)

        if not is_pointer(v):
            return False
        found = self._roots(v)
        return bool(found) and all(constant(r) for r in found)

    def _free_roots_directly(self, roots) -> None:
        """Frees after the loop of pointers the loop carries (``free(u)`` after buffers
        were swapped) free the same set of objects as frees of the allocations themselves:
        rewritten so, the reverse generator sees which allocation each frees and keeps the
        objects alive until the reverse sweep (which the checkpoints need). So is a free of
        a pointer that can point into one object only (``free(u)`` of unoptimized code,
        ``u`` loaded from its stack slot): a free is given the start of an allocation."""
        from zymase.analysis.memory import memory_kind

        group, freed = [], set()
        for b in self.region.blocks:
            if b in self.body:
                continue
            for op in b.ops:
                if memory_kind(op) == "free":
                    found = self._roots(op.operands[0])
                    if found and found <= set(roots) and len(found) > 1:
                        group.append(op)
                        freed |= found
                    elif found and found <= set(roots) and memory_kind(next(iter(found))) in ("malloc", "calloc"):
                        op.operands[0] = next(iter(found)).results[0]
        if not group:
            return
        if len(group) != len(freed):
            self._refuse("the objects it swaps pointers between are freed in a way the analysis cannot follow",
                         group[0], "free each buffer once after the loop, or raise the tape limit")
        for f, root in zip(group, [r for r in roots if r in freed]):
            f.operands[0] = root.results[0]

    def _add(self, fop) -> None:
        self.ctx.module.body.block.add_op(fop)
        self.ctx.driver.symbols[fop.sym_name.data] = fop


def _object_size(E, root):
    """The size in bytes (i64) of the object allocation ``root`` makes, emitted by ``E``."""
    from zymase.analysis.memory import allocation_size_position, memory_kind
    from zymase.ir import i64, llvm

    kind = memory_kind(root)
    if kind == "malloc":
        size = root.operands[allocation_size_position(root)]
    elif kind == "calloc":
        size = E.v(llvm.MulOp(root.operands[0], root.operands[1]))
    else:  # alloca: count * size of the element type
        null = E.v(llvm.ZeroOp.build(result_types=[llvm.LLVMPointerType()]))
        end = E.v(llvm.GEPOp(null, [llvm.GEP_USE_SSA_VAL], pointee_type=root.elem_type, ssa_indices=[root.size]))
        size = E.v(llvm.PtrToIntOp(end, i64))
    return size if size.type == i64 else E.v(llvm.ZExtOp(size, i64))


def _describe(op) -> str:
    from zymase.analysis.memory import callee_name

    name = callee_name(op)
    if name:
        return f"call @{name}"
    return {"llvm.store": "store", "llvm.load": "load"}.get(op.name, op.name)


# ----------------------------------------------------------------------------------------
# the call in the caller's reverse derivative
# ----------------------------------------------------------------------------------------


def _shape(gen, callee):
    """(env struct type, index of the first root slot, number of roots) of a loop call."""
    from zymase.ir import llvm

    nroots = callee.attributes[LOOP_ATTR].value.data
    step = gen.ctx.driver.lookup_function(f"{callee.sym_name.data}.step")
    # the record type: read back from the step's first GEP of its argument
    for op in step.body.walk():
        if isinstance(op, llvm.GEPOp) and op.ptr is step.body.blocks[0].args[0]:
            env_t = op.elem_type
            break
    types = list(env_t.types)
    return env_t, len(types) - 2 * nroots, nroots, step


def forward_call(gen, op, clone) -> None:
    """The forward sweep of a checkpointed loop: snapshot, the loop run to its end, the
    handle kept in the record's first slot."""
    from zymase.ir import i64, llvm

    callee = gen.ctx.defined_function(op)
    env_t, first_root, nroots, step = _shape(gen, callee)
    E = gen.E.before(clone)
    env = gen.vmap.get(op.operands[0], op.operands[0])
    ptr = llvm.LLVMPointerType()
    # the shadow record's pointer slots (the shadows of the pointers the step reads from
    # the record) follow the primal pointers: the runtime rebuilds them from the objects'
    # shadows whenever the state changes (checkpoint_runtime.c, zymase_ckpt_shadows)
    pointer_slots = _positions(callee, RECORD_SLOTS_ATTR)
    # and so do the stored-to local pointer variables' shadows (unoptimized code's u, v)
    local_slots = _positions(callee, LOCAL_SLOTS_ATTR)
    width = gen.width
    denvs = [gen.shadow_of(op.operands[0]) for _ in gen.each_lane()]  # a shadow record per lane
    nslots = len(pointer_slots) + len(local_slots)
    n = 2 * (nroots + 1) + nroots * width + (1 + width) * nslots
    # (in the derivative's entry block: a static alloca, also where the derivative is
    # inlined into a loop)
    table = gen.E.at_end(gen.g_entry).v(llvm.AllocaOp(gen.E.iconst(n, i64), i64))
    E = gen.E.before(clone)

    def put(i, v):
        E.insert(llvm.StoreOp(v, E.v(llvm.GEPOp(table, [i], pointee_type=i64))))

    def field(record, k, typ):
        return E.v(llvm.LoadOp(E.v(llvm.GEPOp(record, [0, k], pointee_type=env_t)), typ))

    def address(record, k):
        return E.v(llvm.PtrToIntOp(E.v(llvm.GEPOp(record, [0, k], pointee_type=env_t)), i64))

    size_end = E.v(llvm.GEPOp(E.v(llvm.ZeroOp.build(result_types=[ptr])), [1], pointee_type=env_t))
    put(0, E.v(llvm.PtrToIntOp(env, i64)))
    put(1, E.v(llvm.PtrToIntOp(size_end, i64)))
    # the table checkpoint_runtime.c reads: (address, bytes) of the record and of each
    # object, each object's shadows lane by lane, each pointer slot's address in the
    # record and in every lane's shadow record
    at = 2 * (nroots + 1)
    for r in range(nroots):
        put(2 + 2 * r, E.v(llvm.PtrToIntOp(field(env, first_root + 2 * r, ptr), i64)))
        put(3 + 2 * r, field(env, first_root + 2 * r + 1, i64))
        for lane, denv in enumerate(denvs):
            put(at + r * width + lane, E.v(llvm.PtrToIntOp(field(denv, first_root + 2 * r, ptr), i64)))
    at += nroots * width
    for j, k in enumerate(pointer_slots):
        put(at + (1 + width) * j, address(env, k))
        for lane, denv in enumerate(denvs):
            put(at + (1 + width) * j + 1 + lane, address(denv, k))
    at += (1 + width) * len(pointer_slots)
    for j, r in enumerate(local_slots):  # the variable itself, and each lane's shadow of it
        put(at + (1 + width) * j, E.v(llvm.PtrToIntOp(field(env, first_root + 2 * r, ptr), i64)))
        for lane, denv in enumerate(denvs):
            put(at + (1 + width) * j + 1 + lane, E.v(llvm.PtrToIntOp(field(denv, first_root + 2 * r, ptr), i64)))
    done = E.v(llvm.GEPOp(env, [0, 1], pointee_type=env_t))
    step_ptr = E.v(llvm.AddressOfOp(step.sym_name.data, ptr))
    limit = tape_limit() or (1 << 62)
    message = _message(gen, callee)
    _declare(gen, "__zymase_ckpt_forward", [ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i64, ptr, i64], ptr)
    cenv = gen.vmap.get(op.operands[1], op.operands[1])
    handle = E.v(llvm.CallOp("__zymase_ckpt_forward", env, cenv, done, step_ptr, table, E.iconst(nroots, i64),
                             E.iconst(nslots, i64), E.iconst(limit, i64), E.iconst(width, i64),
                             E.v(llvm.AddressOfOp(message.sym_name.data, ptr)),
                             E.iconst(len(callee.attributes[AMBIGUOUS_ATTR].data.encode()), i64),
                             return_type=ptr))
    E.insert(llvm.StoreOp(handle, E.v(llvm.GEPOp(env, [0, 0], pointee_type=env_t))))
    clone.parent_block().erase_op(clone)


def _message(gen, callee):
    """The private global holding the loop's error line for the runtime (made once)."""
    from zymase.ir import IntegerType, StringAttr, llvm

    name = f"{callee.sym_name.data}.message"
    for op in gen.ctx.module.body.block.ops:
        if isinstance(op, llvm.GlobalOp) and op.sym_name.data == name:
            return op
    text = callee.attributes[AMBIGUOUS_ATTR].data
    glob = llvm.GlobalOp(llvm.LLVMArrayType(len(text.encode()), IntegerType(8)), name, "private", constant=True,
                         value=StringAttr(text))
    gen.ctx.module.body.block.add_op(glob)
    return glob


def _positions(callee, attr: str) -> list[int]:
    listed = callee.attributes[attr].data
    return [int(k) for k in listed.split(",")] if listed else []


def reverse_call(gen, op) -> None:
    """The reverse sweep of a checkpointed loop: revolve over its iterations."""
    from zymase.ir import llvm
    from zymase.ir.enzyme import Activity

    from zymase.ir import i64

    callee = gen.ctx.defined_function(op)
    env_t, _, _, step = _shape(gen, callee)
    ptr = llvm.LLVMPointerType()
    E = gen.E
    env = gen.primal(op.operands[0])
    denvs = [gen.fetch_shadow(op.operands[0]) for _ in gen.each_lane()]
    rstep = gen.ctx.driver.reverse(step, [Activity.DUP, Activity.CONST], [], width=gen.width)
    if gen.width == 1:
        denv = denvs[0]
    else:
        # the lanes' shadow records as one array, for the width-N step's wrapper (a
        # static alloca at the start of the derivative's entry block)
        from zymase.autodiff.flavor import Emitter

        at_entry = Emitter(gen.flavor, gen.ctx.module).before(gen.g_entry.first_op)
        denv = at_entry.v(llvm.AllocaOp(at_entry.iconst(gen.width, i64), ptr))
        for lane, d in enumerate(denvs):
            E.insert(llvm.StoreOp(d, E.v(llvm.GEPOp(denv, [lane], pointee_type=ptr))))
        rstep = _lanes_wrapper(gen, step, rstep)
    handle = E.v(llvm.LoadOp(E.v(llvm.GEPOp(env, [0, 0], pointee_type=env_t)), ptr))
    _declare(gen, "__zymase_ckpt_reverse", [ptr, ptr, ptr, ptr, ptr], None)
    E.insert(llvm.CallOp("__zymase_ckpt_reverse", handle, env, denv,
                         E.v(llvm.AddressOfOp(step.sym_name.data, ptr)),
                         E.v(llvm.AddressOfOp(rstep, ptr))))


def _lanes_wrapper(gen, step, rstep: str) -> str:
    """``<step>.lanes<N>(env, lanes, constants)``: the width-N derivative ``rstep`` of the
    step called with the N shadow records of the array ``lanes`` (the runtime's reverse
    step takes one pointer for them)."""
    from zymase.autodiff.flavor import Emitter
    from zymase.ir import llvm

    name = f"{step.sym_name.data}.lanes{gen.width}"
    if gen.ctx.driver.lookup_function(name) is not None:
        return name
    ptr = llvm.LLVMPointerType()
    fop = gen.flavor.make_function(name, [ptr, ptr, ptr], [], step)
    entry = fop.body.blocks[0]
    env, lanes, constants = entry.args
    E = Emitter(gen.flavor, gen.ctx.module).at_end(entry)
    denvs = [E.v(llvm.LoadOp(E.v(llvm.GEPOp(lanes, [k], pointee_type=ptr)), ptr)) for k in range(gen.width)]
    E.insert(llvm.CallOp(rstep, env, *denvs, constants))
    E.insert(llvm.ReturnOp())
    gen.ctx.module.body.block.add_op(fop)
    gen.ctx.driver.symbols[name] = fop
    return name


def _declare(gen, name: str, inputs, output) -> None:
    from zymase.ir import llvm

    if gen.ctx.driver.lookup_function(name) is not None:
        return
    fop = llvm.FuncOp(name, llvm.LLVMFunctionType(inputs, output or llvm.LLVMVoidType()),
                      linkage=llvm.LinkageAttr("external"))
    gen.ctx.module.body.block.add_op(fop)
    gen.ctx.driver.symbols[name] = fop
