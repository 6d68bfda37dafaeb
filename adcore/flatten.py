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

from adcore import inputs, ops, tree
from adcore.complex_split import imag_part, is_complex, join, real_part
from adcore.core import Tracer
from adcore.errors import (
    AdcoreError,
    InvalidInputError,
    InvalidOutputError,
    InvalidValueError,
    NonScalarOutputError,
    UnsupportedByBackendError,
)

# what a differentiated argument may be when it is one array, not a container (the common case)
_ARRAYS = (np.ndarray, np.generic, Tracer, float)
# what f may return as one output array (the engine's output check refuses what it must)
# f returned one array: a plain ndarray (not a subclass: those take the full check) or one of these
ONE_ARRAY = (Tracer, np.generic, float, int)
REAL = np.dtype(float)  # the dtype of an output without one (a Python number)


def flatten_args(
    args: Sequence[Any], nums: Sequence[int], where: Sequence[str] | None = None, check: bool = True
) -> tuple[list, Layout]:
    """The flat arguments (each differentiated argument's leaves in its place, as float or complex
    arrays if `check`; the others as given) and the Layout that puts them back together."""
    for n in nums:
        if not isinstance(args[n], _ARRAYS):
            break
    else:  # nothing to flatten (the common case): flat is args
        flat = list(args)
        if check:
            for n in nums:
                flat[n] = inputs.differentiable_input(args[n], f"argument {n}" if where is None else where[n])
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
    """The leaves as float or complex arrays; an error names the leaf's path (computed only then)."""
    if treedef is None:
        return [inputs.differentiable_input(leaves[0], where)]
    if not all(isinstance(x, (np.ndarray, Tracer)) and x.dtype.char in "fdFD" for x in leaves):
        tree.check_leaves(leaves, treedef, where)
        paths = tree.paths(treedef, where)
        leaves = [inputs.differentiable_input(x, path) for x, path in zip(leaves, paths)]
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

    __slots__ = ("kwargs", "scalar", "has_aux", "out", "aux", "real")

    def __init__(self, kwargs: dict, scalar: bool, has_aux: bool = False, real: tuple = ()) -> None:
        self.kwargs, self.scalar, self.has_aux = kwargs, scalar, has_aux
        self.out: Output | None = None
        self.aux: Any = None
        # the flat positions the engine differentiates that hold real values: a backend that
        # passes complex values there is taking a complex step, whose complex outputs are its own
        self.real = real

    def stepped(self, flat: Sequence[Any]) -> bool:
        """Whether the backend passed complex values where the arguments are real (a complex step)."""
        return any(flat[i].__class__ is np.ndarray and flat[i].dtype.kind == "c" for i in self.real)


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
        key = (cls, layout.key, has_aux)  # (a subclass, adcore.api's plain-array one, has its own)
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
        return flat_output(result, call, flat)

    @property
    def user_function(self) -> Callable[..., Any]:
        """The function it wraps: the user's (adcore.Backend: a backend may swap it)."""
        return self.ref()

    def with_user_function(self, g: Callable[..., Any]) -> Flat:
        """The same wrapper around `g` instead, for a backend that runs its own version of the
        user's function (source: the generated derivative code)."""
        return type(self)(g, self.defs, self.has_aux, strong=True)

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


def flat_output(result: Any, call: Call, flat: Sequence[Any]) -> Any:
    """What f returned at the `flat` arguments, as one array for the engine (_flat_output)."""
    if result.__class__ is np.ndarray or isinstance(result, ONE_ARRAY):
        # one real array, as at every call before (or a complex step's complex one)
        if (call.out is None or call.out is LEAF) and (
            getattr(result, "dtype", REAL).kind != "c" or call.stepped(flat)
        ):
            call.out = LEAF
            return result
    return _flat_output(result, call, flat)


def _flat_output(result: Any, call: Call, flat: Sequence[Any] = ()) -> Any:
    """f's output as one array for the engine, complex leaves split into real and imaginary parts
    (but at a complex step's points, whose complex values are the step's: Call.stepped of the
    `flat` arguments); call.out records its structure, which must be the same at every call of f
    a backend makes (else the engine would mix different outputs)."""
    leaves, treedef = tree.flatten(result)
    one = tree.is_leaf(treedef)
    stepped = bool(flat) and any(map(is_complex, leaves)) and call.stepped(flat)  # (output_of: f at the args)
    # one array, or not a container: the engine's output check says what is wrong
    if one and (stepped or not is_complex(leaves[0])):
        _same_output(call, LEAF)
        call.out = LEAF
        return leaves[0]
    if not leaves:  # a forgotten `return` most often
        raise InvalidOutputError(
            f"the function returned {result!r:.60}, which holds no array; it must return an array or a "
            "pytree of arrays (one array for grad)"
        )
    if call.scalar and one:
        raise InvalidOutputError(
            f"grad needs a real-valued function, this one returned {np.result_type(leaves[0])} values. "
            "Pass holomorphic=True for the complex derivative f'(z) of a holomorphic f, use adcore.vjp "
            "(or adcore.jvp) for the derivative of any complex-valued f, or differentiate a real "
            "function of the output (abs(f)**2, its real part)"
        )
    if call.scalar:
        raise NonScalarOutputError(
            f"grad needs a function with one scalar output, this one returned {type(result).__name__} "
            f"{treedef}; use adcore.jacobian for structured outputs, or return the loss alone "
            "(has_aux=True returns (loss, aux))"
        )
    tree.check_leaves(leaves, treedef, "f's output")
    out = Output(treedef, leaves, split=not stepped)
    _same_output(call, out)
    call.out = out
    parts = [p for x, c in zip(leaves, out.complex) for p in ((real_part(x), imag_part(x)) if c else (x,))]
    return ops.concatenate([ops.reshape(p, shape=(-1,)) for p in parts], axis=0)


def _same_output(call: Call, out: Output) -> None:
    before = call.out
    if (
        before is not None
        and (before is not out)
        and (
            before is LEAF
            or out is LEAF
            or (before.treedef, before.shapes, before.complex) != (out.treedef, out.shapes, out.complex)
        )
    ):
        if any(getattr(before, "complex", ())) or any(getattr(out, "complex", ())):
            raise UnsupportedByBackendError(
                "f returns complex values at real arguments, and the backend evaluated it at complex ones (a "
                "complex step, numeric's method='complex', which reads the derivative from the imaginary "
                "part f's values already use): it cannot differentiate a complex-valued f. Use "
                "method='central' or 'richardson', or backend='reverse' or 'forward'."
            )
        raise InvalidOutputError(
            "f returned outputs of different structures when called at different points (a dict whose "
            "keys depend on the values?); a derivative needs one output structure: "
            f"{_describe(before)}, then {_describe(out)}"
        )


def _describe(out: Output) -> str:
    if out is LEAF:
        return "one array"
    kinds = " (complex: " + ", ".join(map(str, out.complex)) + ")" if any(out.complex) else ""
    return f"{out.treedef} of shapes {out.shapes}{kinds}"


class Output:
    """The structure of f's output when it is not one real array: the engine saw its leaves
    ravelled and concatenated, a complex leaf as its real part then its imaginary part (so
    backends differentiate a real function); this splits values and Jacobian rows back."""

    __slots__ = ("treedef", "shapes", "dtypes", "complex", "bounds", "range")

    def __init__(self, treedef: tree.TreeDef, leaves: list, split: bool = True) -> None:
        self.treedef = treedef
        self.shapes = [np.shape(x) for x in leaves]
        self.dtypes = [x.dtype if hasattr(x, "dtype") else np.result_type(x) for x in leaves]
        self.complex = [split and d.kind == "c" for d in self.dtypes]
        widths = [int(np.prod(s)) * (2 if c else 1) for s, c in zip(self.shapes, self.complex)]
        sizes = np.cumsum([0] + widths).tolist()
        self.bounds = list(zip(sizes[:-1], sizes[1:]))
        self.range = range(len(leaves))

    def _pieces(self, flat: Any, tail: tuple = ()) -> list:
        """flat's rows per output leaf, shaped leaf shape + tail: (real, imaginary) for a complex one."""
        pieces = []
        for (a, b), shape, c in zip(self.bounds, self.shapes, self.complex):
            if c:
                m = (a + b) // 2
                pieces.append((flat[a:m].reshape(shape + tail), flat[m:b].reshape(shape + tail)))
            else:
                pieces.append(flat[a:b].reshape(shape + tail))
        return pieces

    def value(self, flat: Any) -> Any:
        """f's value (or a tangent of it) in f's structure, each leaf in its dtype."""
        pieces = [join(*p) if c else p for p, c in zip(self._pieces(flat), self.complex)]
        pieces = [p.astype(d) if isinstance(p, np.ndarray) else p for p, d in zip(pieces, self.dtypes)]
        return tree.unflatten(self.treedef, pieces)

    def rows(self, jacobian: Any, x: Any, errors: bool = False) -> list:
        """A Jacobian w.r.t. one input leaf x, split into one per output leaf: d Re + 1j*d Im for
        a complex one (complex of x's precision), or with `errors`, the error estimates |e_re| + |e_im|."""
        rows = []
        for p, c in zip(self._pieces(jacobian, np.shape(x)), self.complex):
            if not c:
                rows.append(p)
            elif errors:
                rows.append(np.abs(p[0]) + np.abs(p[1]))
            else:
                joined = join(*p)
                rows.append(
                    joined if isinstance(joined, Tracer) else joined.astype(np.result_type(x.dtype, 1j))
                )
        return rows

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
        parts = []
        for c, (a, b), shape, w, complex_out in zip(leaves, self.bounds, self.shapes, where, self.complex):
            if complex_out:  # Re(ct * dz) = Re ct * dx - Im ct * dy: the real cotangents (Re ct, -Im ct)
                c = _complex_cotangent(c, shape, w)
                parts += [real_part(c), -imag_part(c) if is_complex(c) else np.zeros(shape)]
            else:
                parts.append(inputs.check_cotangent(c, flat_out[a:b].reshape(shape), w))
        return ops.concatenate([ops.reshape(p, shape=(-1,)) for p in parts], axis=0)


class _Leaf(Output):
    """f returned one array: values and Jacobians pass through as the engine gave them."""

    range = range(1)
    complex = (False,)

    def __init__(self) -> None:
        pass

    def value(self, flat: Any) -> Any:
        return flat

    def rows(self, jacobian: Any, x: Any, errors: bool = False) -> list:
        return [jacobian]

    def build(self, per_out: list) -> Any:
        return per_out[0]

    def cotangent(self, cotangent: Any, flat_out: Any) -> Any:
        return inputs.check_cotangent(cotangent, flat_out, "f's output")


LEAF = _Leaf()


def _complex_cotangent(cotangent: Any, shape: tuple, where: str) -> Any:
    """vjp_fn's cotangent for a complex output: numbers (complex or real) of its shape."""
    if not isinstance(cotangent, Tracer):
        given = cotangent
        cotangent = np.asarray(cotangent)
        if cotangent.dtype.kind not in "fiuc":
            raise InvalidInputError(
                f"vjp_fn: the cotangent must be numbers, got {type(given).__name__} of dtype "
                f"{cotangent.dtype} for {where}, a complex output"
            )
    if np.shape(cotangent) != shape:
        raise InvalidValueError(
            f"vjp_fn: the cotangent has shape {np.shape(cotangent)} but {where} has shape {shape}; a "
            f"cotangent weighs each output element, so pass one of shape {shape}"
        )
    return cotangent


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
