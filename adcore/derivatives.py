"""The flat derivative engine the API calls: Jacobians, gradients, jvp and vjp built once, for
every backend, from its small contract (adcore.backend), on flat tuples of arrays (pytrees are
adcore.api's business, above this); with the option and output checks (the inputs' are adcore.inputs)."""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore import ops
from adcore.backend import RUNNING, Backend, Derivatives, Running, check_output, check_scalar
from adcore.core import Tracer, shape_of
from adcore.errors import (
    BatchedConversionError,
    InvalidInputError,
    InvalidOutputError,
    StateChangedError,
    UnsupportedByBackendError,
)
from adcore.f_errors import raise_typed, typed_errors_of_f
from adcore.inputs import float_input
from adcore.plugins import get_registry, loaded_registry
from adcore.vmap import vmap

__all__ = [
    "Derivatives",
    "check_output",
    "get_backend",
    "jvp",
    "prepare",
    "pull_back_rows",
    "value_and_jacobian",
    "vjp",
]

# Tangent directions per pass when a Jacobian is built from a jvp: a chunk of the identity as
# seed costs chunk * n numbers per input element, so chunks of at most 2**22 seed entries
# (32 MiB in float64) keep memory bounded while n up to 2048 still takes one pass.
SEED_ENTRIES = 2**22

# The largest cotangent row a backend that `batches` pulls back in a batch with others (vmapped, in
# chunks of SEED_ENTRIES, as _by_jvp's seeds); larger rows one at a time. A batch pays where each
# row's sweep is dominated by per-op costs, not where its arrays are already large and a batch of
# them outgrows the caches. Measured, 10 rows: Brusselator N=64 (8192 entries) 1.33 -> 0.73 ms
# batched, N=128 (32768) 2.28 -> 1.72 ms, N=256 (131072) 7.07 -> 10.54 ms; ba1 (95529 entries,
# 1300 row colors) 22 s one at a time, 31 s in chunks of 43; a 2000 x 2000 Jacobian 367 ms in
# chunks of 65 rows, 282 ms in one.
ROW_ENTRIES = 2**16

# options the engine itself takes, per way of building a Jacobian
ENGINE_OPTIONS = {"jvp": ("chunk_size",), "vjp": (), "jacobian": ()}


def get_backend(name: str) -> Backend:
    """The installed backend called `name` (UnknownBackendError lists the installed ones)."""
    if not isinstance(name, str):
        installed = ", ".join(sorted(get_registry().backends)) or "none"
        raise InvalidInputError(
            f"backend must be the name of an installed backend, a str such as backend='reverse', got "
            f"{type(name).__name__} {name!r}; installed backends: {installed}"
        )
    return loaded_registry().backend(name)  # loads the plugins up to that backend, not all


def prepare(f: Callable[..., Any], backend: str, method: str, options: dict) -> Backend:
    """The backend, once f is known to be callable and the options to be those `method`
    ("value_and_jacobian", "jvp" or "vjp") takes on it."""
    if not callable(f):
        raise InvalidInputError(f"expected a function to differentiate, got {type(f).__name__} {f!r}")
    be = get_backend(backend).for_options(options)
    if be.builds not in ENGINE_OPTIONS:
        raise UnsupportedByBackendError(
            f"backend {backend!r} says it builds Jacobians by {be.builds!r}; a backend's `builds` is "
            "'jvp', 'vjp' or 'jacobian' (see adcore.Backend)"
        )
    if options:
        known, takes_any = _options(type(be), method)
        unknown = [] if takes_any else sorted(set(options) - set(known))
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidInputError(
                f"backend {backend!r} has no option {unknown[0]!r}{hint}. Its options: {', '.join(known) or 'none'}."
            )
    return be


def value_and_jacobian(
    be: Backend,
    f: Callable[..., Any],
    args: tuple,
    argnums: tuple[int, ...],
    *,
    scalar: bool,
    want_value: bool,
    options: dict,
) -> Derivatives:
    """f(*args) (None unless want_value) and d f / d args[i] for each i in argnums, each a fresh
    array of its argument's dtype with shape out.shape + args[i].shape; errors from an
    estimating backend asked for them (return_error=True).

    argnums are non-negative positions (adcore.inputs.normalize_argnums); a position named twice is
    differentiated once and its derivative given at each place it was named, as JAX does: a
    backend asked for the same argument twice would split (or double) its derivative.
    """
    unique = tuple(dict.fromkeys(argnums)) if len(argnums) > 1 else argnums
    for i in unique:
        a = args[i]
        if not (a.__class__ is np.ndarray and a.dtype.char in "fd"):  # float32/64: checked at no cost
            args = (*args[:i], float_input(a, f"argument {i}"), *args[i + 1 :])
    try:  # typed_errors_of_f, inline: the hot path's try costs nothing
        value, jacobians, errors = _jacobians(be, f, args, unique, scalar, want_value, options)
    except ValueError as e:
        raise_typed(be, e)
        raise
    if scalar:  # a size-1 output of shape (1,) or (1, 1): the gradient of the scalar it holds
        jacobians = tuple([_gradient_shaped(j, args[i]) for j, i in zip(jacobians, unique)])
        errors = (
            None if errors is None else tuple(_gradient_shaped(e, args[i]) for e, i in zip(errors, unique))
        )
    if len(unique) != len(argnums):  # a position named twice: its derivative at each place
        place = {i: k for k, i in enumerate(unique)}
        jacobians = tuple(jacobians[place[i]] for i in argnums)
        errors = None if errors is None else tuple(errors[place[i]] for i in argnums)
    return Derivatives(
        _fresh(value) if want_value else None,
        tuple([_like(j, args[i]) for j, i in zip(jacobians, argnums)]),
        None if errors is None else tuple(_like(e, args[i]) for e, i in zip(errors, argnums)),
    )


def _gradient_shaped(jacobian: Any, arg: Any) -> Any:
    """A size-1 output's Jacobian (shape (1, ...) + arg.shape) as the gradient, arg's shape (arg is
    an array or tracer here: value_and_jacobian's float_input made it one)."""
    if getattr(jacobian, "shape", None) == arg.shape:
        return jacobian  # a 0-d output's, the common case
    return ops.reshape(jacobian, shape=arg.shape)


def jvp(be: Backend, f: Callable[..., Any], args: tuple, tangents: tuple, options: dict) -> tuple[Any, Any]:
    """(f(*args), J·tangents) for checked args and tangents (float_input, check_tangent)."""
    if not _implements(type(be), "jvp"):  # J·t from the Jacobian
        with typed_errors_of_f(be):
            value, jacobians, _ = _jacobians(
                be, f, args, tuple(range(len(args))), False, True, options, "jvp"
            )
        total = None
        for jac, t in zip(jacobians, tangents):
            flat = ops.reshape(jac, shape=(int(np.prod(np.shape(value))), int(np.size(t))))
            term = ops.reshape(ops.matmul(flat, ops.reshape(t, shape=(-1,))), shape=np.shape(value))
            total = term if total is None else total + term
        return _fresh(value), _like(total, _dtyped(value))
    batched = tuple(ops.reshape(t, shape=(1,) + np.shape(x)) for t, x in zip(tangents, args))
    token = RUNNING.set((*RUNNING.get(), Running(be, False)))
    try:
        with typed_errors_of_f(be):
            out, tangent_out = be.jvp(f, args, batched, **options)
    finally:
        RUNNING.reset(token)
    check_output(out, be.name, scalar=False)
    if tangent_out is None:
        return _fresh(out), np.zeros(np.shape(out), dtype=_dtype(out))
    return _fresh(out), _like(ops.reshape(tangent_out, shape=np.shape(out)), _dtyped(out))


def vjp(be: Backend, f: Callable[..., Any], args: tuple, options: dict) -> tuple[Any, Callable[[Any], tuple]]:
    """(f(*args), pullback) for checked args (float_input); pullback(ct), for a ct checked by
    check_cotangent, gives one fresh cotangent per argument, in its dtype. The pullback is
    differentiable: a traced ct (or traced args) gives traced cotangents."""
    every = tuple(range(len(args)))
    if not _implements(type(be), "vjp"):  # ctᵀJ from the Jacobian
        with typed_errors_of_f(be):
            value, jacobians, _ = _jacobians(be, f, args, every, False, True, options, "vjp")
        size = int(np.prod(np.shape(value)))

        def transposed(cotangent: Any) -> tuple:
            row = ops.reshape(_ct(cotangent, value), shape=(1, size))
            return tuple(
                _like(
                    ops.reshape(ops.matmul(row, ops.reshape(j, shape=(size, np.size(x)))), shape=np.shape(x)),
                    x,
                )
                for j, x in zip(jacobians, args)
            )

        return _fresh(value), transposed
    # the pullback runs later, after the caller may have changed its arrays: keep copies, in their
    # memory layout (order K): NumPy's sums depend on it, and the traced value must be f(x)'s bits
    copies = tuple(a.copy(order="K") if isinstance(a, np.ndarray) else a for a in args)
    token = RUNNING.set((*RUNNING.get(), Running(be, False)))
    try:
        with typed_errors_of_f(be):
            out, pullback_ = be.vjp(f, copies, every, **options)
    finally:
        RUNNING.reset(token)
    check_output(out, be.name, scalar=False)

    def pullback(cotangent: Any) -> tuple:
        cotangents = (None,) * len(args) if pullback_ is None else pullback_(_ct(cotangent, out))
        return tuple(_zeros((), x) if g is None else _like(g, x) for g, x in zip(cotangents, args))

    return _fresh(out), pullback


# --- Jacobians from each backend's contract -------------------------------------------------


def _jacobians(be, f, args, argnums, scalar, want_value, options, purpose="jacobian") -> tuple:
    """(value, jacobians, errors) for distinct argnums, by the way the backend `builds`; the
    differentiated arrays are read-only while a tracing backend runs f and sweeps."""
    builds = be.builds
    if builds == "jacobian":
        return _direct(be, f, args, argnums, scalar, want_value, options, purpose)
    frozen = _freeze([args[i] for i in argnums])
    try:
        if builds == "vjp":
            return (*_by_vjp(be, f, args, argnums, scalar, options), None)
        return (*_by_jvp(be, f, args, argnums, scalar, **options), None)
    except ValueError as e:
        if any(_FROZEN[id(a)].thaw for a in frozen) and "read-only" in str(e):
            raise StateChangedError(
                f"backend {be.name!r}: f wrote into an array it is differentiated with respect to ({e}); "
                "the derivative would be taken at values that changed under it. Compute on a copy "
                "inside f, or change the array before or after the call."
            ) from e
        raise
    finally:
        _thaw(frozen)


class _Frozen:
    """An array made read-only by calls still running (`holders`), and whether to make it
    writable again when the last ends; views to thaw after it (their base must be writable first)."""

    __slots__ = ("array", "holders", "thaw", "views")

    def __init__(self, array: np.ndarray) -> None:
        self.array, self.holders, self.thaw, self.views = array, 0, array.flags.writeable, []


_FROZEN: dict[int, _Frozen] = {}  # by id: the arrays calls hold read-only, across threads
_FROZEN_LOCK = threading.Lock()


def _freeze(arrays: list) -> list:
    """Make the differentiated arrays, and the arrays they are views of, read-only while f runs
    and the backward pass reads them; return them all, for _thaw. Copying them instead on every
    call costs more than the sweep of a small MLP (fresh pages for every weight matrix), and a
    write from inside f (through a global naming the same array) would change the values the
    derivative is taken at. Calls in several threads may hold the same array or base: the last
    to end thaws it."""
    held = []
    with _FROZEN_LOCK:
        for a in arrays:
            while isinstance(a, np.ndarray):
                entry = _FROZEN.get(id(a))
                if entry is None:
                    entry = _FROZEN[id(a)] = _Frozen(a)
                    a.setflags(write=False)  # (a.flags.writeable = ... builds a flags object first)
                entry.holders += 1
                held.append(a)
                a = a.base
    return held


def _thaw(held: list) -> None:
    """Let go of the arrays _freeze held: each that no other call holds is writable again, as it
    was, once the array it is a view of is (else it waits in that array's `views`)."""
    with _FROZEN_LOCK:
        for a in held:
            entry = _FROZEN[id(a)]
            entry.holders -= 1
            if entry.holders:
                continue
            del _FROZEN[id(a)]
            base = _FROZEN.get(id(a.base)) if isinstance(a.base, np.ndarray) else None
            if base is not None:  # its base is still held: thaw it (and its waiting views) after that
                base.views += [entry, *entry.views]
                continue
            for e in (entry, *entry.views):
                if e.thaw:
                    e.array.setflags(write=True)


def _by_vjp(be: Backend, f, args: tuple, argnums: tuple, scalar: bool, options: dict) -> tuple:
    """One pullback per output element (one for a scalar loss: one trace, one sweep), or of all of
    them at once, vmapped, on a backend that `batches`."""
    token = RUNNING.set((*RUNNING.get(), Running(be, False)))  # f runs once; the pullbacks later
    try:
        out, pullback = be.vjp(f, args, argnums, **options)
    finally:
        RUNNING.reset(token)
    if not _valid_float_output(out, scalar):
        check_output(out, be.name, scalar)
    shape = getattr(out, "shape", ())  # a number or an array: check_output says so
    if pullback is None:  # the output does not depend on the inputs
        return out, tuple(_zeros(shape, args[i]) for i in argnums)
    if shape == ():
        cotangents = pullback(out.dtype.type(1), final=True)  # connected: an array (or tracer) of f's dtype
        return out, _filled(cotangents, args, argnums)
    if be.batches and 0 not in shape:  # (an empty output: no pullback runs, below)
        jacobians = _by_batched_pullback(pullback, out, shape, args, argnums)
        if jacobians is not None:
            return out, jacobians
    rows: list[list[Any]] = [[] for _ in argnums]
    cells = list(np.ndindex(shape))
    for k, index in enumerate(cells):
        seed = np.zeros(shape, dtype=_dtype(out))
        seed[index] = 1
        for row, g in zip(rows, pullback(seed, final=k == len(cells) - 1)):
            row.append(g)
    return out, tuple(_stacked(row, shape, args[i]) for row, i in zip(rows, argnums))


def _by_batched_pullback(pullback: Callable, out: Any, shape: tuple, args: tuple, argnums: tuple) -> Any:
    """The Jacobians from vmapped pullbacks of chunks of the identity's rows (all at once when they
    fit in SEED_ENTRIES); None where one pullback per row is the way (see pull_back_rows)."""
    size = int(np.prod(shape))
    chunk = _row_chunk(size)
    if chunk == 1:
        return None

    def identity_rows(start: int, stop: int) -> np.ndarray:  # built a chunk at a time: size**2 entries in all
        return np.eye(stop - start, size, k=start, dtype=_dtype(out)).reshape((stop - start, *shape))

    joined = _pulled_back_in_chunks(pullback, size, chunk, identity_rows, args, argnums)
    if joined is None:
        return None
    return tuple(ops.reshape(j, shape=shape + np.shape(args[i])) for j, i in zip(joined, argnums))


def pull_back_rows(pullback: Callable, rows: Any, args: tuple, argnums: tuple) -> tuple | None:
    """A backend's pullback (of f at args, for argnums) of each of `rows` (shape (k,) + out.shape),
    vmapped, for a backend that `batches`: per argnum, shape (k,) + args[i].shape, in chunks of
    SEED_ENTRIES. None where the caller should pull back one row at a time, as the pullback,
    never told `final`, still allows: no row, rows too large for a batch to pay (ROW_ENTRIES), or
    a backward pass that converts its cotangent (a custom_vjp's bwd in plain NumPy)."""
    count = len(rows)
    chunk = _row_chunk(int(np.prod(np.shape(rows)[1:])))
    if count == 0 or chunk == 1:
        return None
    return _pulled_back_in_chunks(pullback, count, chunk, lambda start, stop: rows[start:stop], args, argnums)


def _row_chunk(size: int) -> int:
    """Cotangent rows of `size` entries per vmapped pullback (1: batching them would not pay)."""
    return 1 if size > ROW_ENTRIES else max(1, SEED_ENTRIES // max(size, 1))


def _pulled_back_in_chunks(
    pullback: Callable, count: int, chunk: int, rows_at: Callable, args: tuple, argnums: tuple
) -> tuple | None:
    """Per argnum, the vmapped pullbacks of rows 0..count (`rows_at(start, stop)`, `chunk` at a time)
    joined along axis 0; None if a backward pass converts its cotangent."""
    parts = []
    for start in range(0, count, chunk):
        rows = rows_at(start, min(start + chunk, count))
        try:
            parts.append(vmap(lambda ct: _filled(pullback(ct), args, argnums), fallback="error")(rows))
        except BatchedConversionError:
            return None
    return tuple(
        parts[0][k] if len(parts) == 1 else ops.concatenate(*[p[k] for p in parts], axis=0)
        for k in range(len(argnums))
    )


def _filled(cotangents: Any, args: tuple, argnums: tuple) -> tuple:
    """A pullback's cotangents, zeros (of the argument's shape and dtype) where none flows."""
    return tuple([_zeros((), args[i]) if g is None else g for g, i in zip(cotangents, argnums)])


def _valid_float_output(out: Any, scalar: bool) -> bool:
    """Whether out is a float64 scalar, or a float array (0-d for grad): the common outputs, which
    check_output would pass, told apart by their class and dtype here (inline, no call into backend.py)."""
    cls = out.__class__
    return cls is np.float64 or (
        cls is np.ndarray and out.dtype.char in "fd" and (not scalar or out.shape == ())
    )


def _stacked(row: list[Any], out_shape: tuple[int, ...], arg: Any) -> Any:
    """One gradient per output element stacked into shape out.shape + arg.shape."""
    if not row:  # an empty output: no pullback ran
        return _zeros(out_shape, arg)
    row = [_zeros((), arg) if g is None else g for g in row]
    return ops.reshape(ops.stack(*row), shape=out_shape + np.shape(arg))


def default_chunk_size(n: int) -> int:
    """Directions per jvp for n inputs: all of them while the seed stays under SEED_ENTRIES."""
    return max(1, min(n, SEED_ENTRIES // max(n, 1)))


def _by_jvp(
    be: Backend, f, args: tuple, argnums: tuple, scalar: bool, chunk_size: Any = None, **options
) -> tuple:
    """One jvp per chunk of the identity's rows (all of them at once when they fit)."""
    sizes = [math.prod(shape_of(args[i])) for i in argnums]
    n = sum(sizes)
    if chunk_size is None:
        chunk = default_chunk_size(n)
    elif type(chunk_size) is int and chunk_size >= 1:
        chunk = chunk_size
    else:
        raise InvalidInputError(
            f"backend {be.name!r}: chunk_size must be a positive int (tangent directions per pass), "
            f"got {chunk_size!r}"
        )
    value, columns = None, []
    token = RUNNING.set((*RUNNING.get(), Running(be, n > chunk)))  # f runs once per chunk
    try:
        for start in range(0, n, chunk) if n else [0]:
            stop = min(start + chunk, n)
            tangents, offset = [None] * len(args), 0
            for i, size in zip(argnums, sizes):
                tangents[i] = _identity_rows(start, stop, offset, size, args[i])
                offset += size
            out, tangent = be.jvp(f, args, tuple(tangents), **options)
            if start == 0:
                if not _valid_float_output(out, scalar):
                    check_output(out, be.name, scalar)
                value = out
            columns.append(tangent if tangent is not None else _zeros((stop - start,), _dtyped(out)))
    finally:
        RUNNING.reset(token)
    tangents = columns[0] if len(columns) == 1 else ops.concatenate(*columns, axis=0)
    jacobians, offset = [], 0
    for i, size in zip(argnums, sizes):
        part = tangents if size == n else ops.getitem(tangents, index=slice(offset, offset + size))
        out_ndim = len(shape_of(value))
        # a scalar output's tangents are its gradient's entries in order: no transpose to record
        moved = part if out_ndim == 0 else ops.transpose(part, axes=tuple(range(1, out_ndim + 1)) + (0,))
        shape = shape_of(value) + shape_of(args[i])
        jacobians.append(moved if shape_of(moved) == shape else ops.reshape(moved, shape=shape))
        offset += size
    return value, tuple(jacobians)


def _identity_rows(start: int, stop: int, offset: int, size: int, arg: Any) -> np.ndarray | None:
    """Rows start..stop of the n x n identity, restricted to this argument's columns
    offset..offset+size and shaped (stop - start,) + arg.shape; None if they are all zero."""
    if max(start, offset) >= min(stop, offset + size):
        return None
    seed = np.eye(stop - start, size, k=start - offset, dtype=arg.dtype)
    return seed.reshape((stop - start,) + shape_of(arg))


def _direct(be: Backend, f, args, argnums, scalar, want_value, options, purpose) -> tuple:
    """A backend's own value_and_jacobian, its results checked: shapes out.shape + arg.shape."""
    token = RUNNING.set((*RUNNING.get(), Running(be, be.estimates)))  # finite differences run f again
    try:
        if want_value or not _takes_want_value(type(be)):
            result = be.value_and_jacobian(f, args, argnums, **options)
        else:
            result = be.value_and_jacobian(f, args, argnums, want_value=False, **options)
    finally:
        RUNNING.reset(token)
    value, jacobians, *rest = result
    errors = rest[0] if rest else None
    if errors is not None and purpose != "jacobian":
        raise InvalidInputError(
            f"backend {be.name!r}: {purpose} gives no error estimate; ask for one with "
            "adcore.jacobian(f, ..., return_error=True)"
        )
    if value is not None:
        check_output(value, be.name, scalar)
    for jac, i in zip(jacobians, argnums):
        shape, tail = np.shape(jac), np.shape(args[i])
        out_shape = shape[: len(shape) - len(tail)]
        if shape[len(out_shape) :] != tail or (value is not None and out_shape != np.shape(value)):
            raise InvalidOutputError(
                f"backend {be.name!r} returned a Jacobian of shape {shape} for argument {i} of shape "
                f"{tail}; it must be f's output shape + the argument's shape (a bug in the backend)"
            )
        if scalar:
            check_scalar(out_shape)
    return value, jacobians, errors


def _implements(cls: type, method: str) -> bool:
    return getattr(cls, method) is not getattr(Backend, method)


def _takes_want_value(cls: type) -> bool:
    return "want_value" in _parameters(cls.value_and_jacobian)


def _options(cls: type, method: str) -> tuple[list[str], bool]:
    """The option names `method` takes on a backend class, and whether it takes any (**options):
    those of the backend method that does the work, and the engine's own for that way."""
    if method != "value_and_jacobian" and _implements(cls, method):
        own, engine = method, ()
    else:  # a Jacobian, or jvp/vjp built from one
        own = "value_and_jacobian" if cls.builds == "jacobian" else cls.builds
        engine = ENGINE_OPTIONS[cls.builds]
    params = _parameters(getattr(cls, own)).values()
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    names = [
        p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name not in ("want_value", "scalar_output")
    ]
    return sorted(names + list(engine)), takes_any


@functools.cache
def _parameters(method: Callable) -> Any:
    """A backend method's parameters, by the function itself (a patched method is read anew)."""
    return inspect.signature(method).parameters


def _ct(cotangent: Any, out: Any) -> Any:
    """A plain cotangent in f's output dtype; a traced one as it is (so the pullback stays
    differentiable)."""
    return cotangent if isinstance(cotangent, Tracer) else np.asarray(cotangent, dtype=_dtype(out))


def _dtype(value: Any) -> np.dtype:
    dtype = getattr(value, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.result_type(value)


def _dtyped(value: Any) -> Any:
    """Something with f's output dtype, for _like and _zeros (a Python float is float64)."""
    return value if hasattr(value, "dtype") else np.asarray(value)


def _zeros(out_shape: tuple[int, ...], arg: Any) -> np.ndarray:
    return np.zeros(out_shape + shape_of(arg), dtype=arg.dtype)


def _like(jac: Any, arg: Any) -> Any:
    """The derivative as a fresh, writable ndarray of the argument's dtype (a tracer when nested).

    Always a copy: a backend may hand back a read-only broadcast, a view of the caller's own
    array (d/dx sum(w * x) is w) or an array it keeps for the next call (a compiled constant);
    the caller must be able to write into what it gets (g *= lr) without changing any of them.
    """
    if isinstance(jac, Tracer):
        # cast too: under vmap the tracer's batch is what the caller gets (a float32 argument's
        # derivative from a rule computing in float64, as scipy's y1 does, must be float32)
        return jac if jac.dtype == arg.dtype else ops.astype(jac, dtype=arg.dtype)
    return np.array(jac, dtype=arg.dtype, copy=True)


def _fresh(value: Any) -> Any:
    """f's value as the caller may keep and write into: an ndarray is copied, since f may have
    returned its input itself (lambda x: x); scalars and tracers are immutable."""
    return value.copy() if isinstance(value, np.ndarray) else value
