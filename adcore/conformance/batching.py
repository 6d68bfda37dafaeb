"""The vmap column: each subject batched by adcore.vmap, against a plain loop over the batch.

A subject's call is batched with the calls of the same label (the same shapes, dtypes and
params) in further draws of its samples: BATCH examples, one function (the first draw's). Then

- values: `vmap(f)(X)` against `stack([f(x) for x in X])` with every array argument batched
  along axis 0, along its last axis, and (for a function of several arrays) with each array in
  turn not batched (in_axes None: the first example's shared by all);
- derivatives: `vmap(grad(f))` (`vmap(jacobian(f))` for a non-scalar f) against a loop of the
  same, on every backend whose transformations nest with vmap's (Backend.batches), batched
  along axis 0 and with the first differentiated argument not batched (per-example
  gradients: the weights shared, the data batched), at DERIVATIVE_CALLS calls of the subject
  in each dtype.

How a value is judged (`judge`): an elementwise op's values in a real dtype bit for bit (its
batch rule runs NumPy's same ufunc over a larger array; complex arithmetic NumPy rounds
differently by the array's size and layout: np.square of a complex64 batch differs from each
example's by 4 units in the last place); ints and bools exactly; everything else, derivatives
included, within tolerances.VMAP, since batching may change NumPy's summation order (matmul,
reductions). A typed AdcoreError from vmap where the loop ran is a refusal (declined, shown in
the cell, as the rule allows: a right value, a typed error, or the loop); any other exception
an error.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from adcore import api
from adcore.conformance import tolerances
from adcore.conformance.abilities import api_options, batches
from adcore.conformance.calls import CheckedCall
from adcore.conformance.checks import value_difference
from adcore.conformance.results import Cell, Tally, Worst, compare
from adcore.errors import AdcoreError
from adcore.vmap import VmapFallbackWarning, vmap

VMAP = "vmap"  # the report's column of these checks (Report.vmap); no backend may take the name
BATCH = 3  # examples per batch
# calls of a subject (per dtype) whose derivatives are batched: the costly part (odeint's smallest
# call costs 1.6 s a dtype, its next 15 s), so one, the smallest of those with the most arrays
DERIVATIVE_CALLS = 1
STREAM = 34  # the further draws' seeds are [seed, STREAM, j]: apart from the engine's own draws

Draw = Callable[[Any], list[CheckedCall]]  # a subject's calls drawn with a seed (int or sequence)
Variant = tuple[str, tuple, tuple, list[tuple]]  # (how, in_axes, batched args, each example's args)


def batched_calls(draw: Draw, calls: list[CheckedCall], seed: int) -> list[list[CheckedCall]]:
    """Each of `calls` (the draw with `seed`) with the calls of the same label in BATCH - 1 more
    draws: a subject whose shapes or params are random gets fewer examples for those calls."""
    others = []
    for j in range(1, BATCH):
        try:
            others.append({c.label: c for c in draw([seed, STREAM, j])})
        except Exception:  # the engine's own draw raised nothing; this one is a bonus
            continue
    return [[call, *(o[call.label] for o in others if call.label in o)] for call in calls]


def check_vmap(
    subject: str,
    groups: list[list[CheckedCall]],
    backends: Sequence[str],
    dtype: str,
    supported: Callable[[str], str],
    *,
    exact: bool = False,
) -> Cell:
    """The vmap column's cell of one subject in one dtype, from its calls in batches (batched_calls).

    `exact`: the subject's values are compared bit for bit (an elementwise op's); `supported` as
    for check_subject: derivatives are batched on the nesting backends that support the subject."""
    tally = Tally()
    judged = tolerances.judged_as(dtype)
    nesting = [b for b in backends if batches(b) and not supported(b)]
    with warnings.catch_warnings():
        # f converting a batched value runs once per example: right, and this checks that
        warnings.simplefilter("ignore", VmapFallbackWarning)
        for group in groups:
            check_values(tally, group, judged, exact)
        for group in derivative_groups(groups):
            for backend in nesting:
                check_derivatives(tally, backend, group, judged)
    return tally.cell(subject, VMAP, dtype)


def derivative_groups(groups: list[list[CheckedCall]]) -> list[list[CheckedCall]]:
    """The DERIVATIVE_CALLS batches derivatives are taken at: those with the most array arguments
    (so that one can be left unbatched), of those the smallest (fewest differentiated elements;
    the first of equals); none empty."""
    usable = [g for g in groups if g[0].argnums and all(np.size(g[0].args[i]) for i in g[0].argnums)]
    arrays = lambda g: sum(map(batchable, g[0].args))  # noqa: E731
    return sorted(usable, key=lambda g: (-arrays(g), g[0].size))[:DERIVATIVE_CALLS]


def batchable(value: Any) -> bool:
    """Whether an argument is batched: an array (a Python number or other param-like argument is
    shared by every example, the label having held it equal)."""
    return isinstance(value, (np.ndarray, np.generic))


def variants(
    group: list[CheckedCall], *, every: bool = True, unbatched: Sequence[int] | None = None
) -> Iterator[Variant]:
    """The ways a group's examples are batched: along axis 0, along the last axis (with `every`,
    where some example has an axis), and with each position of `unbatched` (default: every array
    argument, where there are several) shared instead."""
    examples = [c.args for c in group]
    positions = [i for i, a in enumerate(examples[0]) if batchable(a)]
    if not positions:
        return
    yield ("in_axes 0", *_stacked(examples, positions, 0))
    if every and any(np.ndim(examples[0][i]) for i in positions):
        yield ("in_axes -1 (each argument's last axis)", *_stacked(examples, positions, -1))
    if len(positions) > 1:
        for i in positions if unbatched is None else unbatched:
            yield (f"argument {i} not batched (in_axes None)", *_stacked(examples, positions, 0, i))


def _stacked(examples: list[tuple], positions: list[int], axis: int, shared: int | None = None) -> tuple:
    """(in_axes, batched args, each example's args): the arrays at `positions` stacked along
    `axis`, but `shared`'s, which is the first example's in every example."""
    first = examples[0]
    axes, xs = [], []
    for i, a in enumerate(first):
        if i in positions and i != shared:
            axes.append(axis)
            xs.append(np.stack([e[i] for e in examples], axis=axis))
        else:
            axes.append(None)
            xs.append(a)
    each = [tuple(first[i] if i == shared else e[i] for i in range(len(first))) for e in examples]
    return tuple(axes), tuple(xs), each


def check_values(tally: Tally, group: list[CheckedCall], dtype: str, exact: bool) -> None:
    """vmap(f)(X) against the loop, for each way of batching (variants)."""
    fn, label = group[0].fn, group[0].label
    for how, axes, xs, each in variants(group):
        try:
            expected = np.stack([np.asarray(fn(*args)) for args in each])
        except Exception:  # f raises at an example: the value check says so, nothing to batch
            continue
        where = f"{label}; {how}"
        got = _batched(tally, fn, axes, xs, where)
        if got is not None:
            judge(tally, where, "vmap", np.asarray(got), expected, dtype, exact)


def check_derivatives(tally: Tally, backend: str, group: list[CheckedCall], dtype: str) -> None:
    """vmap(grad(f)) (jacobian for a non-scalar f) on `backend` against a loop of the same."""
    call = group[0]
    try:
        scalar = np.shape(call.fn(*call.args)) == ()
    except Exception:
        return
    transform, check = (api.grad, "vmap(grad)") if scalar else (api.jacobian, "vmap(jacobian)")
    derivative = transform(call.fn, argnums=call.argnums, **api_options(backend))
    for how, axes, xs, each in variants(group, every=False, unbatched=call.argnums[:1]):
        try:
            loop = [derivative(*args) for args in each]
        except Exception:  # the backend's own checks say why
            continue
        where = f"{call.label}; {how}; {check} on backend {backend!r}"
        got = _batched(tally, derivative, axes, xs, where)
        if got is None:
            continue
        for n in range(len(call.argnums)):
            expected = np.stack([np.asarray(d[n]) for d in loop])
            judge(tally, where, check, np.asarray(got[n]), expected, dtype, exact=False)


def _batched(tally: Tally, fn: Callable[..., Any], axes: tuple, xs: tuple, where: str) -> Any:
    """vmap(fn, in_axes=axes)(*xs), or None where it raised (declined when typed, else an error)."""
    try:
        return vmap(fn, in_axes=axes)(*xs)
    except AdcoreError as e:
        tally.decline(f"vmap at sample {where}", e)
    except Exception as e:
        tally.error = tally.error or f"vmap at sample {where}: {type(e).__name__}: {e}"
    return None


def judge(
    tally: Tally,
    where: str,
    check: str,
    got: np.ndarray,
    expected: np.ndarray,
    dtype: str,
    exact: bool,
) -> None:
    """One batched result against the loop's: dtype and shape always; numbers bit for bit where
    `exact` or not floats, else within tolerances.VMAP (nan where the loop has nan)."""
    source = "a loop over the batch"
    if (got.dtype, got.shape) != (expected.dtype, expected.shape):
        detail = f"vmap gave {got.dtype} {got.shape}, the loop {expected.dtype} {expected.shape}"
        tally.add(Worst(where, check, math.inf, math.inf, 0.0, detail), math.inf)
        return
    if exact or got.dtype.kind not in "fc":
        differs = value_difference(got, expected, names=("vmap", "loop"))
        if differs:
            tally.add(
                Worst(where, check, 0.0, 0.0, 0.0, f"{differs} (bit for bit; reference: {source})"), math.inf
            )
        else:
            tally.checks += 1
        return
    both = np.isnan(got) & np.isnan(expected)
    got, expected = np.where(both, 0.0, got), np.where(both, 0.0, expected)
    compare(tally, where, check, got, expected, tolerances.VMAP[dtype], source=source)
