"""What the distributions share: standardizing x, and refusing derivatives that do not exist."""

from __future__ import annotations

from typing import Any

from adcore.core import Tracer, concrete
from adcore.errors import InvalidInputError, MissingRuleError, UnsupportedByBackendError


def standardize(x: Any, loc: Any, scale: Any) -> Any:
    """(x - loc) / scale, SciPy's standardized variable."""
    return (x - loc) / scale


def _has_number(value: Any) -> bool:
    """Whether a traced value has a number behind it (the symbolic backend's symbols have none)."""
    try:
        concrete(value)
    except UnsupportedByBackendError:
        return False
    return True


def refuse_discrete(function: str, name: str, value: Any) -> None:
    """A typed error if `name`, a discrete argument of `function`, is traced: a derivative in it is
    asked (InvalidInputError), or the symbolic backend made it a symbol, which has no number to
    find the support with (UnsupportedByBackendError)."""
    if not isinstance(value, Tracer):
        return
    if not _has_number(value):
        raise UnsupportedByBackendError(
            f"{function}: argument {name!r} is discrete and its values choose the support, but backend "
            f"'symbolic' traces it as a symbol; pass {name} as a constant (close over it) or use another backend."
        )
    raise InvalidInputError(
        f"{function}: argument {name!r} is discrete (an integer count or shift), so it has no "
        f"derivative; differentiate with respect to the distribution's continuous parameters only."
    )


def refuse_shape_derivative(function: str, name: str, value: Any) -> None:
    """A typed error if a derivative is asked in `name`, a shape parameter of a CDF whose derivative
    in it has no closed form (the incomplete beta or gamma function's in a, b). A symbol of the
    symbolic backend passes: that backend differentiates by the op's own rule, which refuses."""
    if isinstance(value, Tracer) and _has_number(value):
        raise MissingRuleError(
            f"{function}: the derivative in {name!r} (a shape parameter of the CDF) has no closed form, "
            f"so no rule gives it; only x, loc and scale are differentiable here. Hold {name} constant, "
            "or estimate that derivative with backend='numeric'."
        )
