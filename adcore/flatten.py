"""A call over pytrees as the flat engine sees it: the differentiated arguments' leaves as flat
arguments, f wrapped to take them and return one array (several output leaves ravelled and
concatenated), and the engine's results split back into the caller's structures."""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import derivatives, ops, tree
from adcore.core import Tracer
from adcore.errors import AdcoreError, InvalidInputError, InvalidOutputError, NonScalarOutputError

# what a differentiated argument may be when it is one array, not a container (the common case)
_ARRAYS = (np.ndarray, np.generic, Tracer, float)
# what f may return as one output array (the engine's output check refuses what it must)
_OUTPUT_ARRAYS = (Tracer, np.generic, float, int)


def flatten_args(
    args: Sequence[Any], nums: Sequence[int], where: Sequence[str] | None = None, check: bool = True
) -> tuple[list, Layout]:
    """The flat arguments (each differentiated argument's leaves in its place, as float arrays
    if `check`; the others as given) and the Layout that puts them back together."""
    for n in nums:
        if not isinstance(args[n], _ARRAYS):
            break
    else:  # nothing to flatten (the common case): flat is args
        flat = list(args)
        if check:
            for n in nums:
                flat[n] = derivatives.float_input(args[n], f"argument {n}" if where is None else where[n])
        return flat, Layout(None, None, flat)
    label = (lambda n: where[n]) if where is not None else (lambda n: f"argument {n}")
    flat, defs, positions = [], [], {}
    for n, arg in enumerate(args):
        treedef = None
        if n in nums:
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
    return flat, Layout(tuple(defs), positions, flat)


def _float_leaves(leaves: list, treedef: tree.TreeDef | None, where: str) -> list:
    """The leaves as float arrays; an error names the leaf's path (computed only then)."""
    if treedef is None:
        return [derivatives.float_input(leaves[0], where)]
    if not all(isinstance(x, (np.ndarray, Tracer)) and x.dtype.kind == "f" for x in leaves):
        tree.check_leaves(leaves, treedef, where)
        paths = tree.paths(treedef, where)
        leaves = [derivatives.float_input(x, path) for x, path in zip(leaves, paths)]
    return leaves


class Layout:
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


def name_leaves(error: AdcoreError, layout: Layout) -> None:
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


def rebuild(defs: tuple, flat: Sequence[Any]) -> list:
    """The call's arguments from flat values laid out as flatten_args laid them."""
    args, k = [], 0
    for treedef in defs:
        if treedef is None:
            args.append(flat[k])
            k += 1
        else:
            args.append(tree.unflatten(treedef, flat[k : k + treedef.num_leaves]))
            k += treedef.num_leaves
    return args


class Call:
    """One call of a derivative function: f's keyword arguments, whether its output must be a
    scalar, and what the flat function saw when it ran f (its output's structure, its aux).

    It travels to the flat function as its last argument, not on the function itself, so the
    flat function keeps no state: a backend may call it from several threads or processes,
    and the symbolic backend's cache, keyed by function, holds across calls."""

    __slots__ = ("kwargs", "scalar", "has_aux", "out", "aux")

    def __init__(self, kwargs: dict, scalar: bool, has_aux: bool = False) -> None:
        self.kwargs, self.scalar, self.has_aux = kwargs, scalar, has_aux
        self.out: Output | None = None
        self.aux: Any = None


class Flat:
    """f as the engine sees it: the flat arguments then the Call in, one array out (several
    output leaves ravelled and concatenated). One per (f, argument structures, has_aux),
    kept while f lives, so a backend that caches by function (symbolic) finds it again."""

    __slots__ = ("ref", "defs", "has_aux", "__weakref__")
    # id(f) -> (weak reference to f, {key: Flat}): by identity, not equality, since two equal
    # callables may still compute different things; an entry goes when its f does
    _cache: dict[int, tuple[weakref.ref, dict]] = {}

    @classmethod
    def of(cls, f: Callable[..., Any], layout: Layout, has_aux: bool) -> Flat:
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
        return Flat, (self.ref(), self.defs, self.has_aux, True)

    def __call__(self, *flat: Any, call: Call | None = None) -> Any:
        if call is None:
            call = flat[-1]
            flat = flat[:-1]
        args = flat if self.defs is None else rebuild(self.defs, flat)
        result = self.ref()(*args, **call.kwargs) if call.kwargs else self.ref()(*args)
        if self.has_aux:
            result, call.aux = split_aux(result)
        if result.__class__ is np.ndarray or isinstance(result, _OUTPUT_ARRAYS):
            if call.out is None or call.out is LEAF:  # one array, as at every call before
                call.out = LEAF
                return result
        return _flat_output(result, call)

    def bind(self, call: Call) -> Callable[..., Any]:
        """The flat function with `call` in place, for jvp and vjp (whose engine calls differentiate
        every argument they pass)."""
        return functools.partial(self, call=call)


def split_aux(result: Any) -> tuple[Any, Any]:
    """(output, aux) from what a has_aux function returned, which must be a pair."""
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise InvalidOutputError(
            f"has_aux=True: f must return a pair (output, aux), got {type(result).__name__}"
            + (f" of length {len(result)}" if isinstance(result, (tuple, list)) else "")
        )
    return result[0], result[1]


def _flat_output(result: Any, call: Call) -> Any:
    """f's output as one array for the engine; call.out records its structure, which must be
    the same at every call of f a backend makes (else the engine would mix different outputs)."""
    leaves, treedef = tree.flatten(result)
    if tree.is_leaf(treedef):  # one array, or not a container: the engine's output check says what is wrong
        _same_output(call, LEAF)
        call.out = LEAF
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
    out = Output(treedef, leaves)
    _same_output(call, out)
    call.out = out
    return ops.concatenate([ops.reshape(x, shape=(-1,)) for x in leaves], axis=0)


def _same_output(call: Call, out: Output) -> None:
    before = call.out
    if (
        before is not None
        and (before is not out)
        and (before is LEAF or out is LEAF or (before.treedef, before.shapes) != (out.treedef, out.shapes))
    ):
        raise InvalidOutputError(
            "f returned outputs of different structures when called at different points (a dict whose "
            "keys depend on the values?); a derivative needs one output structure: "
            f"{_describe(before)}, then {_describe(out)}"
        )


def _describe(out: Output) -> str:
    return "one array" if out is LEAF else f"{out.treedef} of shapes {out.shapes}"


class Output:
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


class _Leaf(Output):
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


LEAF = _Leaf()


def output_of(call: Call, f: Callable[..., Any], args: Sequence[Any]) -> Output:
    """The structure of f's output, as the flat function saw it; if no call of f came back
    to this process (a numeric backend's process pool), from one plain call of f."""
    if call.out is None:
        result = f(*args, **call.kwargs)
        _flat_output(split_aux(result)[0] if call.has_aux else result, call)
    return call.out


def unflatten_or_leaf(treedef: tree.TreeDef | None, leaves: Sequence[Any]) -> Any:
    """The tree of structure treedef, or the one leaf when treedef is None (an array argument)."""
    return leaves[0] if treedef is None else tree.unflatten(treedef, leaves)
