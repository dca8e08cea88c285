"""Numba front end, step 1's compiler: the private copy lowers the typing Numba already
computed for the user's compile of the same function at the same argument types.

A private copy (:mod:`zymase.frontends.numba_copy`) differs from the user's dispatcher
only in what lowering and code generation do (optimization level 0, no wrappers, its
own njit callees and ``@overload`` implementations), so its bytecode analysis, untyped
passes, type inference and typed rewrites would compute again what the user's compile
left in ``cres.type_annotation``: the final Numba IR blocks, ``typemap`` and
``calltypes`` (keyed by the IR expressions themselves, which the annotation's blocks
hold). :class:`CopyCompiler` takes those (:func:`users_typing`) and runs only Numba's
lowering and backend passes; where that is not sound it runs Numba's whole pipeline, as
every copy did before session 36.

What typing does besides computing types is done again for the copy, in the copy's
context (``numba_copy._numba_unoptimized``): a call of an njit callee is resolved on
the callee's private copy, which compiles it; a call whose function has ``@overload``
templates is resolved again, which compiles the copy's own unoptimized implementation
and points the (interned, shared) function type's implementation key at it. Each such
call must resolve to the signature the user's typing found, or the whole function is
typed again. Calls lowered through keys that do not depend on those caches (builtins,
methods, number classes) and the operators, which lowering resolves again itself, are
left as they are.

Typed again (the fallback) when: the user has not compiled the function for these
argument types (or its result came from Numba's disk cache, without annotation), the
function is parallel, a generator, has object-mode or lifted parts, ``locals=``, a
custom pipeline class, calls ``literal_unroll``, reaches a recursive call anywhere
below it (Numba types recursion through its typing call stack, which reused typing has
no frame in), refers to njit functions through a module or to zymase transforms (the
copy replaces those objects, not their types), passes an njit function as a value, or
calls anything else (first-class functions, jitclasses, ``objmode`` dispatchers).
"""

from __future__ import annotations

#: the compiler class of the private copies, made on first use (Numba is imported lazily)
_compiler_class = None


def copy_compiler():
    """Numba's compiler class for the private copies (:class:`CopyCompiler`)."""
    global _compiler_class
    if _compiler_class is None:
        _compiler_class = _make_compiler_class()
    return _compiler_class


def _make_compiler_class():
    from numba.core import compiler
    from numba.core.compiler_machinery import PassManager
    from numba.core.typed_passes import NativeLowering, NoPythonBackend

    class CopyCompiler(compiler.Compiler):
        """Numba's pipeline without the passes before lowering when the user's typing
        applies (:func:`users_typing` has filled the state), the whole pipeline otherwise."""

        def define_pipelines(self):
            if not users_typing(self.state):
                return super().define_pipelines()
            pm = PassManager("zymase_copy_lowering")
            pm.add_pass(NativeLowering, "native lowering of the user's typing")
            pm.add_pass(NoPythonBackend, "nopython mode backend")
            pm.finalize()
            return [pm]

    return CopyCompiler


def users_typing(state) -> bool:
    """Fill the compiler ``state`` of a private copy with the typing of the user's
    compile of the same function at the same argument types, re-resolved in the copy's
    context (the module docstring says what and why); False, and ``state`` untouched,
    where that is not sound."""
    from numba.core import errors as nerr

    fn = state.func_id.func
    user = getattr(fn, "zymase_copy_of", None)
    if user is None or not fn.zymase_same_typing or state.return_type is not None or state.func_id.is_generator:
        return False
    args = tuple(state.args)
    ann = _annotation(user, args)
    if ann is None or not _acyclic(user, args, {}) or not _same_globals(ann, fn):
        return False
    try:
        typed = _retyped(ann, fn.zymase_copies, state.typingctx)
    except nerr.NumbaError:
        return False  # typed again, where the error is Numba's own
    if typed is None:
        return False
    typemap, calltypes = typed
    state.func_ir = _function_ir(ann, state.func_id)
    state.typemap, state.calltypes, state.return_type = typemap, calltypes, _return_type(user, args)
    _annotate(state)
    return True


def _annotation(user, args: tuple):
    """The user's compile's type annotation of ``user`` at ``args`` if it can be
    lowered again as it is, else None."""
    from numba.core import compiler
    from numba.core.annotations.type_annotations import TypeAnnotation

    if (user._compiler.pipeline_class is not compiler.Compiler or user.targetoptions.get("parallel")
            or user.locals or "literal_unroll" in user.py_func.__code__.co_names):
        return None
    cres = user.overloads.get(args)
    if cres is None or cres.objectmode or cres.lifted:
        return None
    ann = cres.type_annotation
    if not isinstance(ann, TypeAnnotation) or ann.lifted or not ann.blocks:
        return None
    return ann


def _return_type(user, args: tuple):
    return user.overloads[args].signature.return_type


def _calls(blocks):
    """The expressions of the final Numba IR whose lowering takes the implementation
    key typing recorded (calls and unary operators)."""
    from numba.core import ir

    for block in blocks.values():
        for inst in block.body:
            if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr) and inst.value.op in ("call", "unary"):
                yield inst.value


def _acyclic(user, args: tuple, seen: dict) -> bool:
    """Whether the user's typing of ``user`` at ``args`` and of every njit function it
    calls, transitively, exists and has no recursive call."""
    from numba.core import types

    key = (user, args)
    if key in seen:
        return seen[key]
    seen[key] = False  # a cycle through dispatchers counts as recursion
    ann = _annotation(user, args)
    if ann is None or any(isinstance(t, types.RecursiveCall) for t in ann.typemap.values()):
        return False
    for expr in _calls(ann.blocks):
        fnty = ann.typemap.get(expr.func.name) if expr.op == "call" else None
        if isinstance(fnty, types.Dispatcher):
            sig = ann.calltypes.get(expr)
            if sig is None or not _acyclic(fnty.dispatcher, tuple(sig.args), seen):
                return False
    seen[key] = True
    return True


def _same_globals(ann, fn) -> bool:
    """Whether the globals and closure variables the user's compile froze into its IR
    are still the function's (the copy's, for njit callees): a global rebound after the
    user's compile is what a copy typed now would see, as before session 36. Names the
    function's globals do not hold (builtins, code Numba inlined from elsewhere) are not
    the function's to rebind."""
    from numba.core import ir

    glb, freevars = fn.__globals__, fn.__code__.co_freevars
    for block in ann.blocks.values():
        for inst in block.body:
            value = inst.value if isinstance(inst, ir.Assign) else None
            if isinstance(value, ir.FreeVar) and value.name in freevars:
                try:
                    now = fn.__closure__[freevars.index(value.name)].cell_contents
                except ValueError:  # an empty cell
                    return False
            elif isinstance(value, ir.Global) and value.name in glb:
                now = glb[value.name]
            else:
                continue
            # an njit callee's global or cell holds its private copy
            if now is not value.value and getattr(getattr(now, "py_func", None), "zymase_copy_of", None) is not value.value:
                return False
    return True


def _names_a_dispatcher(ty) -> bool:
    """Whether a Numba type holds an njit function inside it (a tuple of them, a
    function passed as an argument): the copy's typing would name the private copy."""
    return "Dispatcher(" in str(ty)


def _retyped(ann, copies: dict, typingctx):
    """(typemap, calltypes) of the user's typing for the copy: njit callees' types name
    their private copies, and every call whose implementation depends on the compile's
    context is resolved again in the copy's; None where anything differs or is not
    handled."""
    from numba.core import types
    from numba.core.typing.templates import _OverloadFunctionTemplate

    typemap = {}
    for name, ty in ann.typemap.items():
        if isinstance(ty, types.Dispatcher):
            copy = copies.get(ty.dispatcher)
            if copy is None:
                return None
            ty = types.Dispatcher(copy)
        elif _names_a_dispatcher(ty):
            return None
        typemap[name] = ty
    calltypes = dict(ann.calltypes)
    if any(_names_a_dispatcher(t) for sig in calltypes.values() if sig is not None
           for t in (*sig.args, sig.return_type)):
        return None
    for expr in _calls(ann.blocks):
        sig = calltypes.get(expr)
        if sig is None:
            return None
        if expr.op == "unary":
            fnty, args, kws = typingctx.resolve_value_type(expr.fn), (typemap.get(expr.value.name),), {}
        else:
            if expr.vararg is not None:
                return None
            fnty = typemap.get(expr.func.name)
            args = tuple(typemap.get(a.name) for a in expr.args)
            kws = {k: typemap.get(v.name) for k, v in expr.kws}
        if fnty is None or None in args or None in kws.values():
            return None
        if isinstance(fnty, types.Function) and not any(issubclass(t, _OverloadFunctionTemplate)
                                                        for t in fnty.templates):
            continue  # a builtin's implementation key is the template's own key
        if isinstance(fnty, (types.BoundFunction, types.NumberClass)):
            continue  # a method is resolved again when lowered; a number class is a cast
        if not isinstance(fnty, (types.Dispatcher, types.Function)):
            return None
        again = typingctx.resolve_function_type(fnty, args, kws)
        if again is None or again.args != sig.args or again.return_type != sig.return_type or again.recvr != sig.recvr:
            return None
    return typemap, calltypes


def _function_ir(ann, func_id):
    """A Numba function IR of the annotation's final blocks for the copy's function
    (its own identity: the copy's symbols and Environment, not the user's)."""
    from numba.core import ir
    from numba.core.ir_utils import build_definitions

    blocks = {label: block.copy() for label, block in ann.blocks.items()}
    return ir.FunctionIR(blocks, False, func_id, ir.Loc.from_function_id(func_id), build_definitions(blocks),
                         func_id.arg_count, func_id.arg_names)


def _annotate(state):
    """What Numba's AnnotateTypes pass leaves for the compile result."""
    from numba.core import config
    from numba.core.annotations.type_annotations import TypeAnnotation

    state.type_annotation = TypeAnnotation(func_ir=state.func_ir.copy(), typemap=state.typemap,
                                           calltypes=state.calltypes, lifted=(), lifted_from=None, args=state.args,
                                           return_type=state.return_type, html_output=config.HTML)
