"""Prepared sparse derivatives: the pattern (given or detected), its coloring and the evaluation plan,
made once; each call checks its arguments against what was prepared and evaluates the plan.
`adcore.PreparedJacobian` and `adcore.PreparedHessian` are these classes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.backend import Backend
from adcore.errors import InvalidInputError
from adcore_sparsity.checks import Signature, check_columns
from adcore_sparsity.plans import plan


class PreparedJacobian:
    """A sparse Jacobian prepared for repeated calls: `prep(*args)` -> csr_array (m, n).

    `pattern` (bool csr_array) and `coloring` (None on the dense path of a backend with neither
    jvp nor vjp) are what was prepared; `backend` names the backend that evaluates."""

    what = "Jacobian"

    def __init__(
        self,
        f: Callable[..., Any],
        signature: Signature,
        backend: str,
        pattern: Any,
        coloring: Any,
        plan: Callable[[Callable[..., Any], np.ndarray], Any],
    ) -> None:
        self._f, self._signature, self._plan = f, signature, plan
        self.backend, self.pattern, self.coloring = backend, pattern, coloring

    def __call__(self, *args: Any) -> Any:
        return self.evaluate(self._signature.check(args, f"prepared {self.what}"))

    def evaluate(self, args: tuple) -> Any:
        """The sparse derivative at checked arguments."""
        argnum = self._signature.argnum
        return self._plan(_of_one(self._f, args, argnum), args[argnum])

    def __repr__(self) -> str:
        m, n = self.pattern.shape
        colors = (
            "dense path" if self.coloring is None else f"{self.coloring.ncolors} {self.coloring.kind} colors"
        )
        return (
            f"<prepared sparse {self.what} ({m}, {n}), {self.pattern.nnz} entries, {colors}, "
            f"backend {self.backend!r}>"
        )


class PreparedHessian(PreparedJacobian):
    """A sparse Hessian prepared for repeated calls: `prep(*args)` -> csr_array (n, n)."""

    what = "Hessian"
    inner: str = ""  # the backend of the gradient that `backend` differentiates again


def make_jacobian(
    engine: Any, patterns: Any, f, args, argnum, be, given, local, options, chunk
) -> PreparedJacobian:
    """Pattern (given, or detected by `patterns`, the sparsity backend), coloring and plan for f at args."""
    n, constants = args[argnum].size, []
    if given is not None:
        check_columns(given, n, "sparsity")
        pattern = given
    else:
        pattern = patterns.jacobian_pattern(f, args, argnum, local=local, constants=constants)
    how, coloring = plan(
        engine, be, patterns.color, pattern, "column", "row", args[argnum], options, chunk, given is not None
    )
    signature = Signature(engine, args, argnum, constants)
    return PreparedJacobian(f, signature, be.name, pattern, coloring, how)


def make_hessian(
    engine: Any, patterns: Any, f, args, argnum, inner_be, outer_be, given, local
) -> PreparedHessian:
    """Pattern, star coloring and plan for f's Hessian at args: the plan differentiates the
    gradient (by `inner_be`) with `outer_be`."""
    n, constants = args[argnum].size, []
    if given is not None:
        check_columns(given, n, "sparsity")
        if given.shape[0] != n:
            raise InvalidInputError(
                f"sparsity has shape {given.shape}, but a Hessian with respect to an argument of {n} "
                f"elements is ({n}, {n})"
            )
        pattern = given
    else:
        pattern = patterns.hessian_pattern(f, args, argnum, local=local, constants=constants)
    how, coloring = plan(
        engine, outer_be, patterns.color, pattern, "star", "star", args[argnum], {}, None, given is not None
    )
    signature = Signature(engine, args, argnum, constants)
    prepared = PreparedHessian(
        _gradient(engine, f, inner_be, argnum), signature, outer_be.name, pattern, coloring, how
    )
    prepared.inner = inner_be.name
    return prepared


def _gradient(engine: Any, f: Callable[..., Any], inner: Backend, argnum: int) -> Callable[..., Any]:
    """f's gradient with respect to args[argnum] by the `inner` backend, as a function of all
    the arguments (the outer backend differentiates it again)."""

    def gradient(*args: Any) -> Any:
        found = engine.value_and_jacobian(
            inner, f, args, (argnum,), scalar=True, want_value=False, options={}
        )
        return found.jacobians[0]

    return gradient


def _of_one(f: Callable[..., Any], args: tuple, argnum: int) -> Callable[..., Any]:
    """f as a function of args[argnum] alone, the other arguments fixed: a backend then sees one
    float argument, never an index array or a string it might try to perturb or measure."""
    if len(args) == 1:
        return f
    before, after = args[:argnum], args[argnum + 1 :]
    return lambda x: f(*before, x, *after)
