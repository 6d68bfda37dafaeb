"""A derivative's result in the caller's structure: the engine's flat Jacobians put back into
the arguments' and the output's pytrees (a complex argument's from its real and imaginary parts,
an estimating backend's errors beside them), the notes naming the leaf an error is about, and
has_aux's aux at the primal. adcore.api calls it when a call is more than plain arrays."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from adcore import complex_split, tree
from adcore.complex_split import Split
from adcore.core import Trace, Tracer, new_trace
from adcore.derivatives import Derivatives
from adcore.errors import AdcoreError, InvalidInputError, InvalidOutputError, NonScalarOutputError
from adcore.flatten import LEAF, Call, Layout, Output, name_leaves, split_aux, unflatten_or_leaf

Argnums = int | Sequence[int]


class Estimate(NamedTuple):
    """A derivative an estimating backend returned with its estimated absolute error, entry by
    entry (return_error=True); a tuple of each for a tuple argnums. Unpacks as `d, err = ...`."""

    derivative: Any
    error: Any


def pick(
    result: Derivatives,
    nums: tuple,
    layout: Layout,
    out: Output,
    argnums: Argnums,
    split: Split | None = None,
    holomorphic: bool = False,
    estimated: bool = False,
) -> Any:
    """The derivative in JAX's structure: f's output structure whose leaves are the argument's
    structure (a tuple of one per argument for a tuple argnums); an Estimate (derivative,
    error) when the backend was asked for its error (return_error=True). A complex argument's
    derivative is put together from those of its real and imaginary parts (complex_split)."""

    def build(jacobians: tuple, errors: bool) -> Any:
        if split is not None:  # per flat leaf: a pair (d/dx, d/dy) for a complex one
            jacobians = split.pairs(layout.flat_argnums(nums), jacobians)
        per_arg, k = [], 0
        for n in nums:  # the engine gave one Jacobian per flat leaf, in the order asked
            leaves = layout.leaves(n)
            rows = [
                _rows(
                    out,
                    j,
                    x,
                    errors,
                    holomorphic,
                    estimated,
                    lambda o, n=n, m=m: _naming(layout, out, n, m, o),
                )
                for m, (j, x) in enumerate(zip(jacobians[k : k + len(leaves)], leaves))
            ]
            per_arg.append([unflatten_or_leaf(layout.structure(n), [r[o] for r in rows]) for o in out.range])
            k += len(leaves)
        per_out = per_arg[0] if type(argnums) is int else [tuple(a[o] for a in per_arg) for o in out.range]
        return out.build(per_out)

    derivative = build(result.jacobians, False)
    return derivative if result.errors is None else Estimate(derivative, build(result.errors, True))


def _rows(out: Output, j: Any, x: Any, errors: bool, holomorphic: bool, estimated: bool, where) -> list:
    """The derivative w.r.t. one flat leaf x, one per output leaf; for a complex x, from the pair
    (d/dx, d/dy) the engine gave (`where(o)` names the leaf and output o for errors)."""
    if type(j) is not tuple:
        return out.rows(j, x, errors)
    dx, dy = out.rows(j[0], x, errors), out.rows(j[1], x, errors)
    if errors:
        return [complex_split.error(a, b, x.dtype) for a, b in zip(dx, dy)]
    return [
        complex_split.derivative(a, b, c, holomorphic, x.dtype, functools.partial(where, o), estimated)
        for o, (a, b, c) in enumerate(zip(dx, dy, out.complex))
    ]


def _naming(layout: Layout, out: Output, n: int, m: int, o: int) -> str:
    """How an error names output leaf o's derivative w.r.t. leaf m of argument n."""
    structure = layout.structure(n)
    arg = f"argument {n}" if structure is None else tree.paths(structure, f"argument {n}")[m]
    output = "f's output" if out is LEAF else tree.paths(out.treedef, "f's output")[o]
    return f"{output} (differentiated with respect to {arg})"


def name_parts(error: AdcoreError, layout: Layout | None, split: Split | None) -> None:
    """The notes that say which leaf (and which real part) each flat argument an error names is
    (only the leaves when `layout` is None), once: by the innermost derivative it passes."""
    if split is not None and not getattr(error, "_adcore_leaves_named", False):
        split.note(error)
    if layout is not None:
        name_leaves(error, layout)
    elif split is not None:
        error._adcore_leaves_named = True


def holomorphic_arguments(
    flat: list, flat_nums: tuple, split: Split | None, layout: Layout, nums: tuple
) -> None:
    """holomorphic=True differentiates with respect to complex arguments only (as JAX)."""
    complex_ = () if split is None else split.positions
    for i in flat_nums:
        if i not in complex_:
            raise InvalidInputError(
                f"holomorphic=True needs complex arguments, but a differentiated argument (flat leaf {i} of "
                f"the arguments {nums}) has dtype {getattr(flat[i], 'dtype', type(flat[i]).__name__)}; pass "
                "it as complex (x + 0j), or leave holomorphic out for a real one"
            )


def holomorphic_scalar(out: Output) -> None:
    """grad with holomorphic=True: f's output must be one complex scalar."""
    if out is LEAF:
        raise InvalidOutputError(
            "holomorphic=True: f returned real values, and a holomorphic function has complex ones; leave "
            "holomorphic out for a real-valued f (grad then gives df/dx - 1j*df/dy)"
        )
    if len(out.shapes) != 1 or out.shapes[0] != () or not tree.is_leaf(out.treedef):
        raise NonScalarOutputError(
            f"grad needs a function with one scalar output, this one returned {_describe_out(out)}; use "
            "adcore.jacobian(f, holomorphic=True) for array outputs"
        )


def _describe_out(out: Output) -> str:
    return f"{out.treedef} of shapes {out.shapes}"


# --- has_aux ---------------------------------------------------------------------------------


def next_level() -> int:
    """The level the next transformation opens at: every tracer at it or above, once the
    derivative returns, belongs to a transformation that has closed."""
    with new_trace(Trace) as probe:
        return probe.level


def aux_of(be: Any, call: Call, level: int, f: Callable[..., Any], args: Sequence[Any], kwargs: dict) -> Any:
    """f's aux at the primal, as concrete values: from the backend's own call of f when the
    backend builds on jvp or vjp (a tracing backend: its contract evaluates f at the args it is
    handed, with tracers carrying the primal values), else from one plain call of f (a backend
    answering value_and_jacobian may evaluate f elsewhere: numeric at probe points, symbolic
    on symbols). Tracers of transformations still open outside (a nested derivative) stay."""
    if be.builds != "jacobian":
        aux = call.aux
    else:
        aux = split_aux(f(*args, **kwargs))[1]

    def lower(x: Any) -> Any:
        while isinstance(x, Tracer) and x._trace.level >= level:
            x = x.value
        return x

    return tree.map(lower, aux)


def detached(result: Any, args: Sequence[Any]) -> Any:
    """`result` with every eager value (a tracer of level 0, of no transformation: an eager reverse
    Tensor f closed over) as its plain array: a derivative at plain arguments is plain arrays, as
    torch.autograd.grad's without create_graph. Tracers of transformations open outside (a nested
    derivative) stay, and so does everything when an argument is itself eager (a rule run by
    backward(create_graph=True), checkpoint's and custom_vjp's, records its derivative)."""
    if isinstance(result, _PLAIN) or (
        result.__class__ is tuple and all(isinstance(r, _PLAIN) for r in result)
    ):
        return result  # the common cases, plain already
    if any(_eager(a) for a in args):
        return result
    if isinstance(result, Tracer):  # the common case, one array, costs one check
        return _plain_below(result)
    if result.__class__ is tuple and all(isinstance(r, _LEAVES) for r in result):
        return tuple([_plain_below(r) for r in result])  # (value, gradient) nested: no tree.map
    return tree.map(_plain_below, result)


_PLAIN = (np.ndarray, np.generic)
_LEAVES = (Tracer, *_PLAIN)  # a tuple of these is a tree of leaves only


def _eager(x: Any) -> bool:
    return isinstance(x, Tracer) and x._trace.level == 0


def _plain_below(x: Any) -> Any:
    while isinstance(x, Tracer) and x._trace.level == 0:
        x = x.value
    return x
