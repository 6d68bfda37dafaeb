"""What the distributions share: standardizing x, and refusing derivatives that do not exist."""

from __future__ import annotations

from typing import Any

from adcore.core import Tracer
from adcore.errors import InvalidInputError, UnsupportedByBackendError


def standardize(x: Any, loc: Any, scale: Any) -> Any:
    """(x - loc) / scale, SciPy's standardized variable."""
    return (x - loc) / scale


def refuse_discrete(function: str, name: str, value: Any) -> None:
    """A typed error if a derivative is asked in `name`, a discrete argument of `function`."""
    if isinstance(value, Tracer):
        raise InvalidInputError(
            f"{function}: argument {name!r} is discrete (an integer count or shift), so it has no "
            f"derivative; differentiate with respect to the distribution's continuous parameters only."
        )


def refuse_shape_derivative(function: str, name: str, value: Any) -> None:
    """A typed error if a derivative is asked in `name`, a shape parameter of a CDF whose derivative
    in it has no closed form (the incomplete beta or gamma function's in a, b)."""
    if isinstance(value, Tracer):
        raise UnsupportedByBackendError(
            f"{function}: the derivative in {name!r} (a shape parameter of the CDF) has no closed form, "
            f"so no rule gives it; only x, loc and scale are differentiable here. Hold {name} constant, "
            "or estimate that derivative with backend='numeric'."
        )
