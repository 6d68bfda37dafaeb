"""The errors adcore raises: one base class, each subclass also the fitting builtin."""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np


class AdcoreError(Exception):
    """Base class of every error adcore raises on purpose."""


class _PlainKeyError(KeyError):
    # KeyError quotes its message in str(); these messages are sentences, not keys.
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownBackendError(AdcoreError, _PlainKeyError):
    """A backend name that no installed plugin registered."""


class UnknownOptimizerError(AdcoreError, _PlainKeyError):
    """An optimizer name that no loaded plugin registered."""


class UnknownOpError(AdcoreError, _PlainKeyError, AttributeError):
    """An op name that no loaded plugin registered."""


class MissingRuleError(AdcoreError, NotImplementedError):
    """An op has no rule of the kind a backend needs."""


class NonScalarOutputError(AdcoreError, TypeError):
    """`grad` was asked of a function whose output is not a scalar."""


class InvalidInputError(AdcoreError, TypeError):
    """An argument a derivative cannot be taken with respect to (integer, not an array, ...)."""


class InvalidArgnumsError(AdcoreError, ValueError):
    """`argnums` names an argument the call does not have."""


class UnsupportedFunctionError(AdcoreError, TypeError):
    """A NumPy function with no matching op was called on a traced value."""


class PluginError(AdcoreError, RuntimeError):
    """A plugin registered something invalid or clashing."""


class GraphFreedError(AdcoreError, RuntimeError):
    """A second backward pass through a graph whose buffers were already freed."""


class GradientError(AdcoreError, RuntimeError):
    """A backward pass that cannot run (no grad required, non-scalar root without a seed, ...)."""


class InvalidOutputError(AdcoreError, TypeError):
    """The differentiated function returned something that is not one float array."""


class MissingDependencyError(AdcoreError, ImportError):
    """An optional dependency of a feature is not installed (the message says what to install)."""


class TracerConversionError(AdcoreError, TypeError):
    """A traced value was turned into a plain number or array (float(x), x.item(), z[0] = x),
    which would cut it out of the derivative."""


class BatchedConversionError(TracerConversionError):
    """f converted a value vmap batches (`if x > 0`, float(x), np.asarray(x), an index read off it):
    each example would have its own answer. vmap catches it to run f once per example (its
    fallback="loop"); with fallback="error" it reaches the caller."""

    def __init__(self, trace: object, what: str) -> None:
        self.trace, self.what = trace, what
        super().__init__(
            f"{what} of a batched value inside vmap has no batched meaning: each example has its own. "
            "Choose between values with anp.where(cond, a, b) instead of if/else on them, and compute "
            "with adcore.numpy functions instead of float(x) or np.asarray(x), to keep f batched; "
            "vmap(f, fallback='loop') (the default) runs f once per example instead."
        )


class ComplexValueError(AdcoreError, TypeError):
    """A complex value where adcore has no derivative for one yet: an op without complex rules
    on a traced complex value, hessian/hvp/checkpoint of a complex argument."""


class NotHolomorphicError(AdcoreError, ValueError):
    """holomorphic=True, but f is not complex-differentiable at the point (Cauchy-Riemann fails)."""


class StateChangedError(AdcoreError, RuntimeError):
    """Something a derivative depends on (a captured constant, a Tensor's data) changed
    between the forward computation and the derivative."""


class InvalidValueError(AdcoreError, ValueError):
    """An option or argument has the right type but a value that cannot work (lr=inf, a
    zero-sized kernel, a cotangent of the wrong shape)."""


class UnreliableEstimateError(AdcoreError, ArithmeticError):
    """A numeric estimate failed its own check (complex step on a non-analytic f, ...)."""


class LinearAlgebraError(InvalidValueError, np.linalg.LinAlgError):
    """A linear-algebra op's input it cannot work with (a singular matrix to inv, a non-square
    one, a matrix that is not positive definite to cholesky): also NumPy's LinAlgError, so NumPy
    code that catches that still does."""


class ValueDependentError(AdcoreError, TypeError):
    """f reads the numbers of a traced value (if/while on it, an index taken from it, float(x))
    where a global sparsity pattern, valid for every input, cannot follow: detect the pattern at
    a point (local) instead, or choose between values with anp.where."""


class UnsupportedByBackendError(AdcoreError, NotImplementedError):
    """A backend was asked for something it does not do (vjp on a backend without a pullback, ...)."""


class DistributedError(AdcoreError, RuntimeError):
    """Work sent to a Dask cluster cannot give the answer this process would: the scheduler cannot
    be reached, a task killed every worker that ran it, or the workers' plugins differ from ours."""


def keywords_checked(function: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """`function` (a public one of adcore's) refusing a keyword one slip away from one of its own
    (`grad(f, argnum=0)`) with 'did you mean', before it could pass as a backend option; where it
    takes no **options, any unknown keyword, as an InvalidInputError (a TypeError, Python's own
    error for it). `name`: the public name, where it is not the function's (a class's __init__)."""
    name = name or function.__name__
    parameters = inspect.signature(function).parameters.values()
    own = [p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    takes_options = any(p.kind is p.VAR_KEYWORD for p in parameters)

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        for key in kwargs.keys() - set(own):
            near = difflib.get_close_matches(key, own, n=1, cutoff=0.75)
            if near or not takes_options:
                hint = f"did you mean {near[0]!r}?" if near else f"its keywords are {', '.join(own[1:])}"
                raise InvalidInputError(f"adcore.{name} has no keyword {key!r}: {hint}")
        return function(*args, **kwargs)

    return checked
