"""User-facing errors.

Every failure a user can cause is raised as a :class:`ZymaseError` and printed by
the command line as one line ``zymase: error: ...`` naming the construct, the
function and the source location, followed by a hint. The C compiler's own errors
(:class:`CompilerDiagnostics`) are shown as the compiler printed them. Internal bugs stay ordinary
exceptions so that they are not mistaken for user errors.
"""

from __future__ import annotations


class ZymaseError(Exception):
    """An error the user can act on.

    ``construct`` names the instruction/op (e.g. ``call @foo`` or ``math.sin``),
    ``function`` the enclosing function, ``location`` a ``file:line[:col]`` string
    and ``hint`` what to do about it.
    """

    def __init__(
        self,
        message: str,
        *,
        construct: str | None = None,
        function: str | None = None,
        location: str | None = None,
        hint: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.construct = construct
        self.function = function
        self.location = location
        self.hint = hint

    def format(self) -> str:
        """The single line printed to stderr (the hint is appended after ``; hint:``)."""
        where = []
        if self.location:
            where.append(self.location)
        text = "zymase: error: "
        if where:
            text += ": ".join(where) + ": "
        text += self.message
        context = []
        if self.construct:
            context.append(f"in '{self.construct}'")
        if self.function:
            context.append(f"in function '{self.function}'")
        if context:
            text += " (" + ", ".join(context) + ")"
        if self.hint:
            text += f"; hint: {self.hint}"
        return text

    def __str__(self) -> str:  # pragma: no cover - convenience
        return self.format()


def warn(message: str, **context) -> None:
    """Print one ``zymase: warning: ...`` line (same parts as a ZymaseError) to stderr:
    for programs zymase handles correctly but that are most likely not what was meant."""
    import sys

    text = ZymaseError(message, **context).format().replace("zymase: error:", "zymase: warning:", 1)
    print(text, file=sys.stderr)


class VectorModeRefused(ZymaseError):
    """Vector mode (width > 1) does not cover a construct of the function. Where the user
    asked for the width (``enzyme_width`` in C, ``width`` in MLIR) it is the error; where
    zymase chose it (``jacfwd`` and ``jacrev`` chunk their columns), the caller
    falls back to one lane per call, which every construct with a width-1 rule has."""


class CompilerDiagnostics(ZymaseError):
    """The C compiler rejected the program: its diagnostics (``file:line:col: error:``,
    the source line and the caret, for every error) are the message, shown verbatim
    rather than re-wrapped, as a compiler driver shows them."""

    def __init__(self, diagnostics: str, *, first_error: str):
        super().__init__(first_error, hint="fix the C error")
        self.diagnostics = diagnostics.rstrip("\n")

    def format(self) -> str:
        return self.diagnostics
