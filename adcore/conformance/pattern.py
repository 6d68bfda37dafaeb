"""The checks of a pattern backend (Backend.pattern): its Jacobians are dependency patterns (1 where
an output element may depend on an input element, else 0), judged as sets against the entries of
the reference Jacobian that the comparison tells from 0, not as numbers.

Per call and differentiated input, with `required` those entries (|J| above the atol a 0 would be
judged against: tolerances.allowed's atol term, plus the reference's own error) and the backend's
global pattern (valid for every input) and local one (at the call's values):

- global pattern: global ⊇ required;
- local pattern: local ⊇ required;
- local within global: local ⊆ global;
- exact pattern, where the backend claims its pattern of the op exact (abilities.exact_for) and the
  call is the op alone (CheckedCall.op_alone: no complex value split into parts, which adds dependencies
  of its own): local holds no entry where J is 0: exactly 0, or within the reference's error where
  that is an estimate. A true derivative too small to tell from 0 by the comparison's atol (3e-71
  at an edge sample) is no zero: exactness is judged at the reference's own resolution.

At an op's kinks, the global and local patterns must hold the convention's non-zeros.
A global pattern the function cannot have (it reads a traced value's numbers: ValueDependentError)
is a declined check; the local one is still checked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore.conformance import tolerances
from adcore.conformance.abilities import backend as backend_named
from adcore.conformance.results import Tally, Worst
from adcore.errors import ValueDependentError

SHOWN = 4  # wrong entries a disagreement lists


def check_patterns(
    tally: Tally, backend: str, call: Any, reference: Any, dtype: str, *, exact: bool = False
) -> None:
    """The four set checks of the module docstring, for each differentiated input of `call`."""
    local = patterns_of(backend, call.fn, call.args, call.argnums, local=True)
    try:
        glob = patterns_of(backend, call.fn, call.args, call.argnums, local=False)
    except ValueDependentError as e:
        tally.decline(f"the global pattern at sample {call.label}", e)
        glob = None
    for n, i in enumerate(call.argnums):
        jacobian = np.asarray(reference.jacobians[n], dtype=np.float64)
        size = int(np.size(call.args[i]))
        judge = _Judge(tally, call.label, f"input {i}", reference.source)
        if not judge.shapes(jacobian, local[n], None if glob is None else glob[n]):
            continue
        jacobian = _matrix(jacobian, size)
        error = np.broadcast_to(
            np.asarray(reference.error(n), dtype=np.float64), np.shape(reference.jacobians[n])
        )
        required = nonzeros(jacobian, tolerances.EXACT[dtype], _matrix(error, size))
        here = _matrix(local[n], size) != 0
        if glob is not None:
            everywhere = _matrix(glob[n], size) != 0
            judge(
                "global pattern",
                required & ~everywhere,
                "the global pattern misses {} of the Jacobian's non-zeros",
            )
            judge("local within global", here & ~everywhere, "the local pattern has {} the global one lacks")
        judge("local pattern", required & ~here, "the local pattern misses {} of the Jacobian's non-zeros")
        if exact:
            zero = np.abs(jacobian) <= tolerances.SAFETY * _matrix(error, size)  # nan: not 0
            judge("exact pattern", here & zero, "the pattern, claimed exact, has {} where the Jacobian is 0")
    if call.zeros:  # the inputs the op declares not differentiable: nothing may depend on them
        held = patterns_of(backend, call.fn, call.args, call.zeros, local=True)
        for n, i in enumerate(call.zeros):
            judge = _Judge(tally, call.label, f"input {i}", reference.source)
            judge(
                "no dependency",
                _matrix(held[n], int(np.size(call.args[i]))) != 0,
                "the pattern has {} on an input the op declares not differentiable",
            )


def check_kink_patterns(
    tally: Tally, backend: str, fn: Callable[..., Any], inputs: tuple, expected: Sequence[Any], label: str
) -> None:
    """At a kink: the global and local patterns hold every non-zero of the convention's Jacobians."""
    nums = tuple(range(len(inputs)))
    local = patterns_of(backend, fn, inputs, nums, local=True)
    try:
        glob = patterns_of(backend, fn, inputs, nums, local=False)
    except ValueDependentError as e:
        tally.decline(f"the global pattern at {label}", e)
        glob = None
    for n, want in enumerate(expected):
        want = np.asarray(want, dtype=np.float64)
        judge = _Judge(tally, label, f"input {n}", "docs/conventions.md")
        if not judge.shapes(want, local[n], None if glob is None else glob[n]):
            continue
        size = int(np.size(inputs[n]))
        required = _matrix(np.isinf(want) | ((want != 0) & ~np.isnan(want)), size)
        missing = "the {} pattern misses {{}} of the convention's non-zeros"
        if glob is not None:
            judge("global pattern", required & ~(_matrix(glob[n], size) != 0), missing.format("global"))
        judge("local pattern", required & ~(_matrix(local[n], size) != 0), missing.format("local"))


def patterns_of(
    backend: str, fn: Callable[..., Any], args: tuple, argnums: Sequence[int], *, local: bool
) -> list:
    """The backend's pattern of fn(*args) for each of `argnums`, as its value_and_jacobian gives it
    (shape out.shape + arg.shape; None where nothing depends on the argument, as a zero array)."""
    result = backend_named(backend).value_and_jacobian(fn, tuple(args), tuple(argnums), local=local)
    jacobians = result[1]
    value = result[0]
    out_shape = np.shape(value) if value is not None else None
    patterns = []
    for i, jac in zip(argnums, jacobians):
        if jac is None:
            shape = (out_shape if out_shape is not None else np.shape(fn(*args))) + np.shape(args[i])
            jac = np.zeros(shape, dtype=bool)
        patterns.append(np.asarray(jac))
    return patterns


def nonzeros(jacobian: np.ndarray, tolerance: tolerances.Tolerance, error: Any = 0.0) -> np.ndarray:
    """The entries of `jacobian` a 0 would not agree with (results.compare): |J| above the atol term
    of tolerances.allowed (scaled by the largest finite entry) plus the error term; inf included,
    nan not (a nan says nothing about dependence)."""
    scale = max(1.0, tolerances.largest_finite(jacobian))
    floor = tolerance.atol * scale + tolerances.SAFETY * np.asarray(error, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.isinf(jacobian) | (np.abs(jacobian) > floor)


def _matrix(a: Any, size: int) -> np.ndarray:
    """An out.shape + arg.shape array as (out elements, arg elements), flat C order."""
    a = np.asarray(a)
    return a.reshape(a.size // size if size else 0, size)


class _Judge:
    """Adds the set checks of one input at one sample to a cell's tally."""

    def __init__(self, tally: Tally, sample: str, what: str, source: str) -> None:
        self.tally, self.sample, self.what, self.source = tally, sample, what, source

    def shapes(self, jacobian: np.ndarray, *patterns: np.ndarray | None) -> bool:
        """Whether every pattern has the Jacobian's shape (a disagreement if one has not)."""
        for pattern in patterns:
            if pattern is not None and np.shape(pattern) != np.shape(jacobian):
                detail = f"{self.what}: pattern of shape {np.shape(pattern)}, the Jacobian's is {np.shape(jacobian)}"
                self.tally.add(Worst(self.sample, "pattern shape", 1.0, 1.0, 0.0, detail), np.inf)
                return False
        return True

    def __call__(self, check: str, wrong: np.ndarray, text: str) -> None:
        """One check: `wrong` marks the entries it faults ((out element, input element), flat);
        `text` says what they are, "{}" standing for "3 entries"."""
        count = int(np.count_nonzero(wrong))
        if not count:
            self.tally.checks += 1
            return
        at = ", ".join(str(tuple(map(int, rc))) for rc in np.argwhere(wrong)[:SHOWN])
        more = f" and {count - SHOWN} more" if count > SHOWN else ""
        detail = (
            f"{self.what}: {text.format(f'{count} entr' + ('y' if count == 1 else 'ies'))}, at (output "
            f"element, input element) {at}{more}, flat C order (reference: {self.source})"
        )
        self.tally.add(Worst(self.sample, check, float(count), count / wrong.size, 0.0, detail), np.inf)
