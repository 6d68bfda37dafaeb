"""Backend: the base class of every differentiator a plugin registers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import ops
from adcore.core import Tracer
from adcore.errors import InvalidOutputError, NonScalarOutputError, UnsupportedByBackendError


class Backend:
    """A differentiator. Subclasses set `name`, list the rule `kinds` they need, and
    implement `value_and_jacobian`; `vjp` and `jvp` where they can do them directly
    (the base `jvp` multiplies the Jacobian by the tangents).

    A backend that estimates its own error takes the option `return_error=True` and then
    returns (value, jacobians, errors), one error array per Jacobian.

    `adcore.api` checks the call (f callable, argnums in range and each named once, float
    inputs) before a backend sees it, and afterwards copies the results into fresh arrays of
    each argument's dtype, so a backend may return views, read-only or cached arrays.
    """

    name: str = ""
    kinds: tuple[str, ...] = ()

    def value_and_jacobian(
        self,
        f: Callable[..., Any],
        args: tuple,
        argnums: Sequence[int],
        *,
        scalar_output: bool = False,
        **options: Any,
    ) -> tuple[Any, tuple[Any, ...]]:
        """f(*args) and, per argnum, d f / d args[i] with shape out.shape + args[i].shape."""
        raise UnsupportedByBackendError(f"backend {self.name!r} does not implement value_and_jacobian")

    def jacobian(
        self,
        f: Callable[..., Any],
        args: tuple,
        argnums: Sequence[int],
        *,
        scalar_output: bool = False,
        **options: Any,
    ) -> tuple:
        """Like value_and_jacobian, for callers that do not need f(*args): a backend that can
        skip computing it (numeric) returns None in its place."""
        return self.value_and_jacobian(f, args, argnums, scalar_output=scalar_output, **options)

    def jvp(self, f: Callable[..., Any], args: tuple, tangents: tuple, **options: Any) -> tuple[Any, Any]:
        """f(*args) and the directional derivative J·tangents, summed over every argument."""
        value, jacobians = self.value_and_jacobian(f, args, tuple(range(len(args))), **options)
        out_shape = np.shape(value)
        total = None
        for jac, t in zip(jacobians, tangents):
            flat = ops.reshape(jac, shape=(int(np.prod(out_shape)), int(np.size(t))))
            term = ops.reshape(ops.matmul(flat, ops.reshape(t, shape=(-1,))), shape=out_shape)
            total = term if total is None else total + term
        return value, total

    def vjp(self, f: Callable[..., Any], args: tuple, **options: Any) -> tuple[Any, Callable[[Any], tuple]]:
        """f(*args) and a function from an output cotangent to the cotangent of every argument."""
        raise UnsupportedByBackendError(f"backend {self.name!r} has no vjp; use backend='reverse'")

    def __repr__(self) -> str:
        return f"<backend {self.name}>"


def check_output(value: Any, backend: str, scalar: bool) -> None:
    """The output must be one array of numbers (not bools, strings or objects); for `grad`, a scalar one."""
    if not isinstance(value, (Tracer, np.ndarray, np.generic, float, int)):
        raise InvalidOutputError(
            f"backend {backend!r}: the function returned {type(value).__name__}; it must return one "
            "array (differentiate each output separately, or stack them)"
        )
    kind = "b" if isinstance(value, bool) else np.dtype(getattr(value, "dtype", float)).kind
    if kind == "b":
        raise InvalidOutputError(
            f"backend {backend!r}: the function returned a bool (a comparison?), which has no derivative; "
            "return a number, e.g. anp.where(x > 0, a, b) picks between differentiable values"
        )
    if kind not in "fiuc":
        raise InvalidOutputError(
            f"backend {backend!r}: the function returned an array of dtype {value.dtype}; it must return "
            "numbers (a float array)"
        )
    if scalar and getattr(value, "shape", ()) != ():
        raise NonScalarOutputError(
            f"grad needs a function with a scalar output, this one returned shape {value.shape}; "
            "use adcore.jacobian (or differentiate) for array outputs, or reduce the output (sum, mean)"
        )
