"""The public API: differentiate, grad, jacobian, hessian, hvp, value_and_grad, jvp, vjp, backends.

Arguments, outputs, tangents and cotangents may be pytrees (adcore.tree). This module is
the one that knows it: it flattens them into the flat arrays adcore.derivatives and the
backends work on, and builds each result back in the structure JAX gives it.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import derivatives, ops, tree
from adcore.core import Trace, Tracer, new_trace
from adcore.derivatives import Derivatives, Estimate, get_backend
from adcore.errors import (
    AdcoreError,
    InvalidArgnumsError,
    InvalidInputError,
    InvalidOutputError,
    NonScalarOutputError,
)
from adcore.plugins import get_registry

Argnums = int | Sequence[int]


def backends() -> list[str]:
    """Names of the installed backends."""
    return sorted(get_registry().backends)


def optimizer(name: str, params: Any, **hyper: Any) -> Any:
    """The optimizer a plugin registered as `name`, over `params` (arrays updated in place):
    `adcore.optimizer("adam", [w, b], lr=1e-2)`; then `.step(grads)` once per batch."""
    return get_registry().optimizer(name)(params, **hyper)


def optimizers() -> list[str]:
    """Names of the installed optimizers."""
    return sorted(get_registry().optimizers)


# --- the derivative functions ----------------------------------------------------------------


def differentiate(
    f: Callable[..., Any],
    backend: str = "reverse",
    argnums: Argnums = 0,
    *,
    has_aux: bool = False,
    **options: Any,
):
    """d f / d args[argnums]: for array f and x, an array of shape f(...).shape + x.shape.

    For pytrees, the output's structure of the argument's structure, each leaf of shape
    out_leaf.shape + in_leaf.shape; a tuple `argnums` gives a tuple, one per argument. With
    has_aux, f returns (output, aux) and the result is (derivative, aux). Options pass
    through to the backend. The derivative keeps each argument's dtype.
    """
    return _derivative_function(f, backend, argnums, has_aux, options, scalar=False, want_value=False)


jacobian = differentiate


def grad(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    backend: str = "reverse",
    *,
    has_aux: bool = False,
    **options: Any,
):
    """The gradient of a scalar-valued f (NonScalarOutputError otherwise), in the structure of
    args[argnums]; with has_aux, f returns (loss, aux) and the result is (gradient, aux)."""
    return _derivative_function(f, backend, argnums, has_aux, options, scalar=True, want_value=False)


def value_and_grad(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    backend: str = "reverse",
    *,
    has_aux: bool = False,
    **options: Any,
):
    """Like `grad`, returning (f(...), gradient) from one evaluation of f; with has_aux,
    ((value, aux), gradient)."""
    return _derivative_function(f, backend, argnums, has_aux, options, scalar=True, want_value=True)


def hessian(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    *,
    backend: str | None = None,
    inner: str | None = None,
    outer: str | None = None,
):
    """Second derivatives: the Jacobian (by `outer`) of the Jacobian (by `inner`) of f.

    The default is forward over reverse: one reverse sweep for the gradient, its
    derivative by forward mode with one tangent per input. `backend=` uses one backend
    for both, `inner=`/`outer=` pick each (they override `backend`). The result has
    shape f(...).shape + x.shape + x.shape; with a tuple `argnums`, H[i][j] is
    d^2 f / d args[i] d args[j]; for pytrees, H has x's structure of x's structure (JAX's).
    """
    inner, outer = _inner_outer(f, backend, inner, outer)
    return differentiate(differentiate(f, inner, argnums), outer, argnums)


def hvp(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    *,
    backend: str | None = None,
    inner: str | None = None,
    outer: str | None = None,
):
    """H·v without building H: `hvp(f)(x, v)` is the derivative of grad f at x along v, one
    forward pass over one reverse sweep (`inner`/`outer`/`backend` as for `hessian`).

    The function it returns takes f's arguments and then v, in the structure of
    args[argnums] (a tuple of one per argument for a tuple argnums); the result has v's
    structure.
    """
    inner, outer = _inner_outer(f, backend, inner, outer)
    gradient = grad(f, argnums, inner)

    @functools.wraps(f)
    def product(*args_and_v: Any, **kwargs: Any) -> Any:
        if len(args_and_v) < 2:
            raise InvalidInputError(
                f"hvp(f)(*args, v): give f's arguments and then v, the direction; got {len(args_and_v)} "
                "positional argument(s)"
            )
        *args, v = args_and_v
        nums = derivatives.normalize_argnums(argnums, len(args))
        if len(set(nums)) < len(nums):
            raise InvalidArgnumsError(f"hvp: argnums {argnums!r} names an argument twice; name each once")
        vs = (v,) if type(argnums) is int else v
        if not isinstance(vs, (tuple, list)) or len(vs) != len(nums):
            raise InvalidInputError(
                f"hvp with argnums={argnums!r}: v must be a tuple of {len(nums)} directions, one in the "
                f"structure of each differentiated argument, got {type(v).__name__}"
            )

        def gradient_at(*primals: Any) -> Any:
            full = list(args)
            for i, p in zip(nums, primals):
                full[i] = p
            return gradient(*full, **kwargs)

        primals = tuple(args[i] for i in nums)
        _, product = _jvp(gradient_at, primals, tuple(vs), outer, {}, nums, " (hvp's v)")
        return product

    return product


def jvp(
    f: Callable[..., Any],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    backend: str = "forward",
    **options: Any,
):
    """(f(*primals), J·tangents): the derivative of f at `primals` along `tangents`.

    `primals` and `tangents` are tuples (or lists) of the same length; each tangent has its
    primal's structure, and each leaf its primal leaf's shape and dtype (a Python number is
    taken in the primal's dtype). The tangent out has the output's structure.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise InvalidInputError(
            "jvp(f, primals, tangents): primals and tangents must be tuples (or lists), one entry per "
            f"argument of f, got {type(primals).__name__} and {type(tangents).__name__}; "
            "write jvp(f, (x,), (v,)) for one argument"
        )
    if len(primals) != len(tangents) or not primals:
        raise InvalidInputError(
            f"jvp: {len(primals)} primal(s) but {len(tangents)} tangent(s); give one tangent per primal"
        )
    return _jvp(f, tuple(primals), tuple(tangents), backend, options, range(len(primals)))


def vjp(
    f: Callable[..., Any], *primals: Any, backend: str = "reverse", has_aux: bool = False, **options: Any
):
    """(f(*primals), vjp_fn), or (out, vjp_fn, aux) with has_aux: vjp_fn(cotangent), the
    cotangent in the output's structure, returns a tuple of one cotangent per primal, each
    in that primal's structure."""
    be = derivatives.prepare(f, backend, "vjp", options)
    if not primals:
        raise InvalidInputError("vjp(f, *primals): give at least one primal")
    flat, layout = _flatten_args(primals, range(len(primals)))
    call = _Call({}, False, has_aux)
    level = _next_level() if has_aux else 0
    flat_out, pullback = derivatives.vjp(be, _Flat.of(f, layout, has_aux).bind(call), tuple(flat), options)
    out_def = _output(call, f, primals)
    out = out_def.value(flat_out)

    def vjp_fn(cotangent: Any) -> tuple:
        cts = pullback(out_def.cotangent(cotangent, flat_out))
        return tuple(cts) if layout.defs is None else tuple(_rebuild(layout.defs, cts))

    if has_aux:
        return out, vjp_fn, _aux(be, call, level, f, primals, {})
    return out, vjp_fn


# --- what the derivative functions share --------------------------------------------------------


def _inner_outer(f: Any, backend: str | None, inner: str | None, outer: str | None) -> tuple[str, str]:
    inner = inner if inner is not None else backend if backend is not None else "reverse"
    outer = outer if outer is not None else backend if backend is not None else "forward"
    get_backend(inner), get_backend(outer)  # an unknown name fails here, not at the first call
    if not callable(f):
        raise InvalidInputError(f"expected a function to differentiate, got {type(f).__name__} {f!r}")
    return inner, outer


def _derivative_function(f, backend, argnums, has_aux, options, *, scalar: bool, want_value: bool):
    """differentiate/grad/value_and_grad's function: flatten the call, run the engine, rebuild."""
    be = derivatives.prepare(f, backend, "value_and_jacobian", options)
    flats: dict = {}  # the flat functions of f (_Flat.of), by argument structure, at hand
    positions: dict = {}  # argnums normalised, by the number of arguments of the call

    @functools.wraps(f)
    def derivative(*args: Any, **kwargs: Any) -> Any:
        nums = positions.get(len(args))
        if nums is None:
            nums = positions[len(args)] = derivatives.normalize_argnums(argnums, len(args))
        flat, layout = _flatten_args(args, nums, check=False)  # the engine checks the flat args
        flat_f = flats.get(layout.key)
        if flat_f is None:
            flat_f = flats[layout.key] = _Flat.of(f, layout, has_aux)
        call = _Call(kwargs, scalar, has_aux)
        level = _next_level() if has_aux else 0
        try:
            result = derivatives.value_and_jacobian(
                be,
                flat_f,
                (*flat, call),
                layout.flat_argnums(nums),
                scalar=scalar,
                want_value=want_value,
                options=options,
            )
        except AdcoreError as e:
            _name_leaves(e, layout)
            raise
        out = call.out if call.out is not None else _output(call, f, args)
        if out is _LEAF and layout.defs is None and result.errors is None:  # arrays in, one array out
            picked = result.jacobians[0] if type(argnums) is int else result.jacobians
        else:
            picked = _pick(result, nums, layout, out, argnums)
        if want_value:
            value = out.value(result.value)
            picked = ((value, _aux(be, call, level, f, args, kwargs)) if has_aux else value, picked)
        elif has_aux:
            picked = (picked, _aux(be, call, level, f, args, kwargs))
        return picked

    return derivative


def _pick(result: Derivatives, nums: tuple, layout: _Layout, out: _Output, argnums: Argnums) -> Any:
    """The derivative in JAX's structure: f's output structure whose leaves are the argument's
    structure (a tuple of one per argument for a tuple argnums); an Estimate (derivative,
    error) when the backend was asked for its error (return_error=True)."""

    def build(jacobians: tuple) -> Any:
        per_arg, k = [], 0
        for n in nums:  # the engine gave one Jacobian per flat leaf, in the order asked
            leaves = layout.leaves(n)
            rows = [out.rows(j, x) for j, x in zip(jacobians[k : k + len(leaves)], leaves)]
            per_arg.append([_unflatten_or_leaf(layout.structure(n), [r[o] for r in rows]) for o in out.range])
            k += len(leaves)
        per_out = per_arg[0] if type(argnums) is int else [tuple(a[o] for a in per_arg) for o in out.range]
        return out.build(per_out)

    derivative = build(result.jacobians)
    return derivative if result.errors is None else Estimate(derivative, build(result.errors))


def _jvp(
    f, primals: tuple, tangents: tuple, backend: str, options: dict, names: Any, what: str = ""
) -> tuple:
    """(out, tangent out) in the output's structure, for primals and tangents in theirs; `names`
    are the primals' argument numbers and `what` says what the tangents are, for messages."""
    be = derivatives.prepare(f, backend, "jvp", options)
    flat, layout = _flatten_args(primals, range(len(primals)), where=[f"argument {n}" for n in names])
    flat_t = []
    for p, (t, n) in enumerate(zip(tangents, names)):
        where = f"argument {n}"
        leaves, treedef = tree.flatten(t)
        expected = layout.structure(p) if layout.structure(p) is not None else tree.structure(primals[p])
        if treedef != expected:
            raise InvalidInputError(
                f"jvp: the tangent of {where}{what} has structure {treedef} but its primal has structure "
                f"{expected}; a tangent has its primal's structure, leaf for leaf"
            )
        paths = tree.paths(treedef, where)
        flat_t += [
            derivatives.check_tangent(t_, x, path + what)
            for t_, x, path in zip(leaves, layout.leaves(p), paths)
        ]
    call = _Call({}, scalar=False)
    out, tangent_out = derivatives.jvp(
        be, _Flat.of(f, layout, False).bind(call), tuple(flat), tuple(flat_t), options
    )
    out_def = _output(call, f, primals)
    return out_def.value(out), out_def.value(tangent_out)


# what a differentiated argument may be when it is one array, not a container (the common case)
_ARRAYS = (np.ndarray, np.generic, Tracer, float)
# what f may return as one output array (the engine's output check refuses what it must)
_OUTPUT_ARRAYS = (Tracer, np.generic, float, int)


def _flatten_args(args: Sequence[Any], nums: Sequence[int], where: Sequence[str] | None = None, check=True):
    """The flat arguments (each differentiated argument's leaves in its place, as float arrays
    if `check`; the others as given) and the _Layout that puts them back together."""
    for n in nums:
        if not isinstance(args[n], _ARRAYS):
            break
    else:  # nothing to flatten (the common case): flat is args
        flat = list(args)
        if check:
            for n in nums:
                flat[n] = derivatives.float_input(args[n], f"argument {n}" if where is None else where[n])
        return flat, _Layout(None, None, flat)
    label = (lambda n: where[n]) if where is not None else (lambda n: f"argument {n}")
    flat, defs, positions = [], [], {}
    for n, arg in enumerate(args):
        treedef = None
        if n not in positions and n in nums:
            leaves, treedef = tree.flatten(arg)
            if tree.is_leaf(treedef):
                treedef = None
            elif not leaves:
                raise InvalidInputError(
                    f"{label(n)} is {arg!r:.60}, which holds no array (None or empty containers): "
                    "there is nothing to differentiate; leave it out of argnums"
                )
            positions[n] = tuple(range(len(flat), len(flat) + len(leaves)))
            flat += _float_leaves(leaves, treedef, label(n))
        else:
            flat.append(arg)
        defs.append(treedef)
    return flat, _Layout(tuple(defs), positions, flat)


def _float_leaves(leaves: list, treedef: tree.TreeDef | None, where: str) -> list:
    """The leaves as float arrays; an error names the leaf's path (computed only then)."""
    if treedef is None:
        return [derivatives.float_input(leaves[0], where)]
    if not all(isinstance(x, (np.ndarray, Tracer)) and x.dtype.kind == "f" for x in leaves):
        tree.check_leaves(leaves, treedef, where)
        paths = tree.paths(treedef, where)
        leaves = [derivatives.float_input(x, path) for x, path in zip(leaves, paths)]
    return leaves


class _Layout:
    """Where the call's arguments sit among the flat ones: per argument its structure (None
    for one array or an argument passed as it is) and, if differentiated, its flat positions.
    `defs` is None when no argument was flattened: the flat arguments are the arguments."""

    __slots__ = ("defs", "positions", "flat", "key")

    def __init__(self, defs: tuple | None, positions: dict | None, flat: list) -> None:
        self.defs, self.positions, self.flat = defs, positions, flat
        self.key = len(flat) if defs is None else defs

    def structure(self, n: int) -> tree.TreeDef | None:
        return None if self.defs is None else self.defs[n]

    def flat_argnums(self, nums: tuple) -> tuple:
        return nums if self.defs is None else tuple(i for n in nums for i in self.positions[n])

    def leaves(self, n: int) -> list:
        return [self.flat[n]] if self.defs is None else [self.flat[i] for i in self.positions[n]]


def _name_leaves(error: AdcoreError, layout: _Layout) -> None:
    """A backend names the flat arguments it was given ("argument 3"); when the call's pytrees
    were flattened, a note on the error says which leaf each one it names is. Only the
    innermost derivative function an error passes through adds it (the numbers are its own)."""
    if getattr(error, "_adcore_leaves_named", False):
        return
    error._adcore_leaves_named = True
    if layout.defs is None or not error.args or not isinstance(error.args[0], str):
        return
    names, k = {}, 0
    for n, treedef in enumerate(layout.defs):
        for path in [f"argument {n}"] if treedef is None else tree.paths(treedef, f"argument {n}"):
            names[k] = path
            k += 1
    named = sorted({int(m) for m in re.findall(r"\bargument (\d+)", error.args[0])} & set(names))
    if any(names[k] != f"argument {k}" for k in named):
        error.add_note(
            "adcore flattened the pytree arguments for the backend: "
            + ", ".join(f"its argument {k} is {names[k]}" for k in named)
        )


def _rebuild(defs: tuple, flat: Sequence[Any]) -> list:
    """The call's arguments from flat values laid out as _flatten_args laid them."""
    args, k = [], 0
    for treedef in defs:
        if treedef is None:
            args.append(flat[k])
            k += 1
        else:
            args.append(tree.unflatten(treedef, flat[k : k + treedef.num_leaves]))
            k += treedef.num_leaves
    return args


class _Call:
    """One call of a derivative function: f's keyword arguments, whether its output must be a
    scalar, and what the flat function saw when it ran f (its output's structure, its aux).

    It travels to the flat function as its last argument, not on the function itself, so the
    flat function keeps no state: a backend may call it from several threads or processes,
    and the symbolic backend's cache, keyed by function, holds across calls."""

    __slots__ = ("kwargs", "scalar", "has_aux", "out", "aux")

    def __init__(self, kwargs: dict, scalar: bool, has_aux: bool = False) -> None:
        self.kwargs, self.scalar, self.has_aux = kwargs, scalar, has_aux
        self.out: _Output | None = None
        self.aux: Any = None


class _Flat:
    """f as the engine sees it: the flat arguments then the _Call in, one array out (several
    output leaves ravelled and concatenated). One per (f, argument structures, has_aux),
    kept while f lives, so a backend that caches by function (symbolic) finds it again."""

    __slots__ = ("ref", "defs", "has_aux", "__weakref__")
    # id(f) -> (weak reference to f, {key: _Flat}): by identity, not equality, since two equal
    # callables may still compute different things; an entry goes when its f does
    _cache: dict[int, tuple[weakref.ref, dict]] = {}

    @classmethod
    def of(cls, f: Callable[..., Any], layout: _Layout, has_aux: bool) -> _Flat:
        key = (layout.key, has_aux)
        entry = cls._cache.get(id(f))
        if entry is None or entry[0]() is not f:
            ident = id(f)
            try:
                ref = weakref.ref(f, lambda _: cls._cache.pop(ident, None))
            except TypeError:  # f cannot be weakly referenced: a new one each call
                return cls(f, layout.defs, has_aux, strong=True)
            entry = cls._cache[ident] = (ref, {})
        per_f = entry[1]
        flat = per_f.get(key)
        if flat is None:
            flat = per_f[key] = cls(f, layout.defs, has_aux, strong=False)
        return flat

    def __init__(self, f: Callable[..., Any], defs: tuple | None, has_aux: bool, strong: bool) -> None:
        # a weak reference: the cache's value must not keep its key, f, alive
        self.ref = (lambda: f) if strong else weakref.ref(f)
        self.defs, self.has_aux = defs, has_aux

    def __reduce__(self) -> tuple:  # a process pool sends f itself to its workers
        return _Flat, (self.ref(), self.defs, self.has_aux, True)

    def __call__(self, *flat: Any, call: _Call | None = None) -> Any:
        if call is None:
            call = flat[-1]
            flat = flat[:-1]
        args = flat if self.defs is None else _rebuild(self.defs, flat)
        result = self.ref()(*args, **call.kwargs) if call.kwargs else self.ref()(*args)
        if self.has_aux:
            result, call.aux = _split_aux(result)
        if result.__class__ is np.ndarray or isinstance(result, _OUTPUT_ARRAYS):
            if call.out is None or call.out is _LEAF:  # one array, as at every call before
                call.out = _LEAF
                return result
        return _flat_output(result, call)

    def bind(self, call: _Call) -> Callable[..., Any]:
        """The flat function with `call` in place, for jvp and vjp (whose engine calls differentiate
        every argument they pass)."""
        return functools.partial(self, call=call)


def _split_aux(result: Any) -> tuple[Any, Any]:
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise InvalidOutputError(
            f"has_aux=True: f must return a pair (output, aux), got {type(result).__name__}"
            + (f" of length {len(result)}" if isinstance(result, (tuple, list)) else "")
        )
    return result[0], result[1]


def _flat_output(result: Any, call: _Call) -> Any:
    """f's output as one array for the engine; call.out records its structure, which must be
    the same at every call of f a backend makes (else the engine would mix different outputs)."""
    leaves, treedef = tree.flatten(result)
    if tree.is_leaf(treedef):  # one array, or not a container: the engine's output check says what is wrong
        _same_output(call, _LEAF)
        call.out = _LEAF
        return leaves[0]
    if not leaves:  # a forgotten `return` most often
        raise InvalidOutputError(
            f"the function returned {result!r:.60}, which holds no array; it must return an array or a "
            "pytree of arrays (one array for grad)"
        )
    if call.scalar:
        raise NonScalarOutputError(
            f"grad needs a function with one scalar output, this one returned {type(result).__name__} "
            f"{treedef}; use adcore.jacobian for structured outputs, or return the loss alone "
            "(has_aux=True returns (loss, aux))"
        )
    tree.check_leaves(leaves, treedef, "f's output")
    out = _Output(treedef, leaves)
    _same_output(call, out)
    call.out = out
    return ops.concatenate([ops.reshape(x, shape=(-1,)) for x in leaves], axis=0)


def _same_output(call: _Call, out: _Output) -> None:
    before = call.out
    if (
        before is not None
        and (before is not out)
        and (before is _LEAF or out is _LEAF or (before.treedef, before.shapes) != (out.treedef, out.shapes))
    ):
        raise InvalidOutputError(
            "f returned outputs of different structures when called at different points (a dict whose "
            "keys depend on the values?); a derivative needs one output structure: "
            f"{_describe(before)}, then {_describe(out)}"
        )


def _describe(out: _Output) -> str:
    return "one array" if out is _LEAF else f"{out.treedef} of shapes {out.shapes}"


class _Output:
    """The structure of f's output when it is not one array: the engine saw its leaves ravelled
    and concatenated; this splits values and Jacobian rows back."""

    __slots__ = ("treedef", "shapes", "dtypes", "bounds", "range")

    def __init__(self, treedef: tree.TreeDef, leaves: list) -> None:
        self.treedef = treedef
        self.shapes = [np.shape(x) for x in leaves]
        self.dtypes = [x.dtype if hasattr(x, "dtype") else np.result_type(x) for x in leaves]
        sizes = np.cumsum([0] + [int(np.prod(s)) for s in self.shapes]).tolist()
        self.bounds = list(zip(sizes[:-1], sizes[1:]))
        self.range = range(len(leaves))

    def value(self, flat: Any) -> Any:
        """f's value (or a tangent of it) in f's structure, each leaf in its dtype."""
        pieces = [flat[a:b].reshape(shape) for (a, b), shape in zip(self.bounds, self.shapes)]
        pieces = [p.astype(d) if isinstance(p, np.ndarray) else p for p, d in zip(pieces, self.dtypes)]
        return tree.unflatten(self.treedef, pieces)

    def rows(self, jacobian: Any, x: Any) -> list:
        """A Jacobian w.r.t. one input leaf x, split into one per output leaf."""
        return [jacobian[a:b].reshape(shape + np.shape(x)) for (a, b), shape in zip(self.bounds, self.shapes)]

    def build(self, per_out: list) -> Any:
        return tree.unflatten(self.treedef, per_out)

    def cotangent(self, cotangent: Any, flat_out: Any) -> Any:
        """vjp_fn's cotangent, in f's structure, as the engine's one flat cotangent."""
        leaves, treedef = tree.flatten(cotangent)
        if treedef != self.treedef:
            raise InvalidInputError(
                f"vjp_fn: the cotangent has structure {treedef} but f's output has structure "
                f"{self.treedef}; pass one with the output's structure, leaf for leaf"
            )
        where = tree.paths(treedef, "f's output")
        parts = [
            ops.reshape(derivatives.check_cotangent(c, flat_out[a:b].reshape(shape), w), shape=(-1,))
            for c, (a, b), shape, w in zip(leaves, self.bounds, self.shapes, where)
        ]
        return ops.concatenate(parts, axis=0)


class _Leaf(_Output):
    """f returned one array: values and Jacobians pass through as the engine gave them."""

    range = range(1)

    def __init__(self) -> None:
        pass

    def value(self, flat: Any) -> Any:
        return flat

    def rows(self, jacobian: Any, x: Any) -> list:
        return [jacobian]

    def build(self, per_out: list) -> Any:
        return per_out[0]

    def cotangent(self, cotangent: Any, flat_out: Any) -> Any:
        return derivatives.check_cotangent(cotangent, flat_out, "f's output")


_LEAF = _Leaf()


def _output(call: _Call, f: Callable[..., Any], args: Sequence[Any]) -> _Output:
    """The structure of f's output, as the flat function saw it; if no call of f came back
    to this process (a numeric backend's process pool), from one plain call of f."""
    if call.out is None:
        result = f(*args, **call.kwargs)
        _flat_output(_split_aux(result)[0] if call.has_aux else result, call)
    return call.out


def _unflatten_or_leaf(treedef: tree.TreeDef | None, leaves: Sequence[Any]) -> Any:
    return leaves[0] if treedef is None else tree.unflatten(treedef, leaves)


# --- has_aux ---------------------------------------------------------------------------------


def _next_level() -> int:
    """The level the next transformation opens at: every tracer at it or above, once the
    derivative returns, belongs to a transformation that has closed."""
    with new_trace(Trace) as probe:
        return probe.level


def _aux(be: Any, call: _Call, level: int, f: Callable[..., Any], args: Sequence[Any], kwargs: dict) -> Any:
    """f's aux at the primal, as concrete values: from the backend's own call of f when the
    backend builds on jvp or vjp (a tracing backend: its contract evaluates f at the args it is
    handed, with tracers carrying the primal values), else from one plain call of f (a backend
    answering value_and_jacobian may evaluate f elsewhere: numeric at probe points, symbolic
    on symbols). Tracers of transformations still open outside (a nested derivative) stay."""
    if be.builds != "jacobian":
        aux = call.aux
    else:
        aux = _split_aux(f(*args, **kwargs))[1]

    def lower(x: Any) -> Any:
        while isinstance(x, Tracer) and x._trace.level >= level:
            x = x.value
        return x

    return tree.map(lower, aux)
