"""The errors only the symbolic backend raises (sympy-free, so they import with the plugin)."""

from __future__ import annotations

from adcore.errors import UnsupportedByBackendError

OTHER_BACKENDS = "reverse, forward or numeric"


class SymbolicControlFlowError(UnsupportedByBackendError, TypeError):
    """f needed the number behind a traced value (if, while, float(), a NumPy predicate): what
    symbolic does not do, so adcore.check_grads skips it as it does a missing rule."""

    def __init__(self, what: str = "its number") -> None:
        super().__init__(
            f"backend 'symbolic' traces f with sympy symbols, so a traced value has no number yet, "
            f"and f asked for {what}: Python control flow (if/while/and/or), float(), int(), .item() "
            "or a NumPy predicate such as isfinite. Choose between branches with adcore.numpy.where "
            f"(np.where), which becomes a sympy Piecewise, or use another backend ({OTHER_BACKENDS}), "
            "which runs f on numbers."
        )


class ExpressionTooLargeError(UnsupportedByBackendError):
    """The derivative's work passed the budget, `max_nodes` (adcore_symbolic.budget); a
    NotImplementedError, so a RuntimeError too."""


class SymbolicComplexError(UnsupportedByBackendError, TypeError):
    """A complex value inside f: symbolic differentiates real expressions only (its symbols are
    real), so it refuses rather than compute with the real part alone."""

    def __init__(self, op: str, what: str) -> None:
        super().__init__(
            f"backend 'symbolic' does not differentiate complex values: op {op!r} got {what}. Its symbols "
            "are real, and computing on the real part alone would give a wrong derivative. Use another "
            f"backend ({OTHER_BACKENDS}), which carries complex values through f (docs/complex.md)."
        )
