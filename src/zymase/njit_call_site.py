"""The njit call site of a transform typed inside njit code, for its errors: a
``ZymaseError`` raised while Numba types ``grad(f)(x)``, ``hessian(f)(x)``,
``hvp(f)(x, v)`` or ``jvp(f, ...)`` in an njit function names that function and the line
of the call, as the error of an njit function called from Python names its own line.

An overload's typer is not told where it is called from, but Numba's type inference
holds it up the stack: the call's constraint has its ``loc``, the inferer its function.
Frames of zymase's generated glue (the trampoline a transform's Numba type names,
compiled from ``<zymase ...>`` sources: ``api._exec``) are skipped, so the user's
function is named, not the trampoline between it and the transform.
"""

from __future__ import annotations

import functools

from zymase.errors import ZymaseError

#: the file name of every njit source zymase generates (api._exec)
GENERATED = "<zymase "


def call_site() -> tuple[str | None, str | None]:
    """The user's njit function and ``file:line`` of the transform call Numba is typing
    now, or ``None`` for what is not on the stack."""
    import inspect

    from numba.core import typeinfer

    function = location = None
    frame = inspect.currentframe()
    try:
        while frame is not None and (function is None or location is None):
            owner = frame.f_locals.get("self")
            if (location is None and isinstance(owner, typeinfer.CallConstraint) and owner.loc is not None
                    and not str(owner.loc.filename).startswith(GENERATED)):
                location = f"{owner.loc.filename}:{owner.loc.line}"
            if (function is None and isinstance(owner, typeinfer.TypeInferer)
                    and not str(owner.func_id.filename).startswith(GENERATED)):
                function = owner.func_id.func_name
            frame = frame.f_back
    finally:
        del frame
    return function, location


def naming_the_call_site(typer):
    """``typer`` whose errors name the njit function that calls the transform, and the line."""

    @functools.wraps(typer)
    def named(*args, **kwargs):
        try:
            return typer(*args, **kwargs)
        except ZymaseError as err:
            function, location = call_site()
            err.function = err.function or function
            err.location = err.location or location
            raise

    return named
