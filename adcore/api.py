"""The public API: differentiate, grad, jacobian, hessian, hvp, value_and_grad, jvp, vjp, backends.

Arguments, outputs, tangents and cotangents may be pytrees (adcore.tree). This module is
the one that knows it: it flattens them into the flat arrays adcore.derivatives and the
backends work on, and builds each result back in the structure JAX gives it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore import derivatives, inputs, tree
from adcore import sparse as _sparse
from adcore.complex_split import Split
from adcore.derivatives import get_backend
from adcore.errors import (
    AdcoreError,
    InvalidArgnumsError,
    InvalidInputError,
    keywords_checked,
)
from adcore.flatten import (
    LEAF,
    ONE_ARRAY,
    REAL,
    Call,
    Flat,
    Layout,
    flat_output,
    flatten_args,
    output_of,
    rebuild,
)
from adcore.plugins import get_registry
from adcore.results import (
    aux_of,
    detached,
    holomorphic_arguments,
    holomorphic_scalar,
    name_parts,
    next_level,
    pick,
)

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


@keywords_checked
def differentiate(
    f: Callable[..., Any],
    backend: str = "reverse",
    argnums: Argnums = 0,
    *,
    has_aux: bool = False,
    holomorphic: bool = False,
    sparse: bool = False,
    sparsity: Any = None,
    local: bool = False,
    **options: Any,
):
    """d f / d args[argnums]: for array f and x, an array of shape f(...).shape + x.shape.

    For pytrees, the output's structure of the argument's structure, each leaf of shape
    out_leaf.shape + in_leaf.shape; a tuple `argnums` gives a tuple, one per argument. With
    has_aux, f returns (output, aux) and the result is (derivative, aux). Options pass
    through to the backend. The derivative keeps each argument's dtype (complex where it is).

    Complex values follow JAX (docs/complex.md): a real output's derivative with respect to
    a complex z is d/dx - 1j*d/dy; a complex output's with respect to a real x is d Re + 1j*d Im;
    with respect to a complex z it needs holomorphic=True (f'(z), checked by Cauchy-Riemann).

    sparse=True (adcore.sparse): a `scipy.sparse.csr_array` (f(x).size, x.size) for one array
    argument (an int argnums) and one array output, from the pattern the `sparsity` backend
    detects (global; at this point with local=True) or the one given as `sparsity=` (trusted:
    an entry it misses is silently wrong on the compressed paths), colored, one compressed
    jvp/pullback/difference per color; `chunk_size` bounds the colors per jvp call.
    """
    if sparse or sparsity is not None or local:
        _sparse.sparse_only(sparse, has_aux, holomorphic)
        return _sparse.jacobian_function(f, argnums, backend, sparsity, local, options)
    return _derivative_function(
        f, backend, argnums, has_aux, options, scalar=False, want_value=False, holomorphic=holomorphic
    )


jacobian = differentiate


@keywords_checked
def grad(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    backend: str = "reverse",
    *,
    has_aux: bool = False,
    holomorphic: bool = False,
    **options: Any,
):
    """The gradient of a scalar-valued f (NonScalarOutputError otherwise; an output of size 1, shape
    (1,) or (1, 1), is the scalar it holds, as autograd and torch take it), in the structure of
    args[argnums]; with has_aux, f returns (loss, aux) and the result is (gradient, aux).

    f must be real-valued; of a complex z its gradient is df/dx - 1j*df/dy (JAX's: grad of
    abs(z)**2 is 2*conj(z), docs/complex.md). holomorphic=True takes a holomorphic f of complex
    arguments with a complex value and gives f'(z), after checking Cauchy-Riemann."""
    return _derivative_function(
        f, backend, argnums, has_aux, options, scalar=True, want_value=False, holomorphic=holomorphic
    )


@keywords_checked
def value_and_grad(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    backend: str = "reverse",
    *,
    has_aux: bool = False,
    holomorphic: bool = False,
    **options: Any,
):
    """Like `grad`, returning (f(...), gradient) from one evaluation of f; with has_aux,
    ((value, aux), gradient)."""
    return _derivative_function(
        f, backend, argnums, has_aux, options, scalar=True, want_value=True, holomorphic=holomorphic
    )


@keywords_checked
def value_and_jacobian(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    backend: str = "reverse",
    *,
    has_aux: bool = False,
    holomorphic: bool = False,
    **options: Any,
):
    """Like `jacobian`, returning (f(...), derivative) from one evaluation of f; with has_aux,
    ((value, aux), derivative)."""
    return _derivative_function(
        f, backend, argnums, has_aux, options, scalar=False, want_value=True, holomorphic=holomorphic
    )


@keywords_checked
def elementwise_grad(f: Callable[..., Any], argnums: Argnums = 0, backend: str = "reverse", **options: Any):
    """autograd's elementwise_grad: the gradient of sum(f(...)), the vector-Jacobian product with ones.

    It is each element's derivative only for an elementwise f (output element i depends on input
    element i alone, as anp.sin or anp.tanh): elementwise_grad(anp.tanh)(x) is 1 - tanh(x)**2. For
    any other f it is the sum of the Jacobian's rows, not a derivative of f; as autograd warns,
    use adcore.jacobian there."""

    @functools.wraps(f)
    def summed(*args: Any, **kwargs: Any) -> Any:
        return np.sum(f(*args, **kwargs))  # on a traced output, the sum op

    return grad(summed, argnums, backend, **options)


@keywords_checked
def hessian(
    f: Callable[..., Any],
    argnums: Argnums = 0,
    *,
    backend: str | None = None,
    inner: str | None = None,
    outer: str | None = None,
    sparse: bool = False,
    sparsity: Any = None,
    local: bool = False,
    has_aux: bool = False,
):
    """Second derivatives: the Jacobian (by `outer`) of the Jacobian (by `inner`) of f.

    The default is forward over reverse: one reverse sweep for the gradient, its
    derivative by forward mode with one tangent per input. `backend=` uses one backend
    for both, `inner=`/`outer=` pick each (they override `backend`). The result has
    shape f(...).shape + x.shape + x.shape; with a tuple `argnums`, `H[i][j]` is
    `d^2 f / d args[i] d args[j]`; for pytrees, H has x's structure of x's structure (JAX's).
    With has_aux, f returns (output, aux) and the result is (H, aux), as jax.hessian's.

    sparse=True (adcore.sparse): a symmetric `scipy.sparse.csr_array` (x.size, x.size) of a
    scalar f of one array, from the detected (or given, `sparsity=`) Hessian pattern, star
    colored, one batched Hessian-vector product (outer over inner) for all colors.
    """
    inner, outer = _inner_outer(f, backend, inner, outer)
    if sparse or sparsity is not None or local:
        _sparse.sparse_only(sparse, has_aux, False)
        return _sparse.hessian_function(f, argnums, inner, outer, sparsity, local)
    # with has_aux the inner derivative returns (J, aux), and the outer takes that aux as its own
    second = differentiate(differentiate(f, inner, argnums, has_aux=has_aux), outer, argnums, has_aux=has_aux)

    @functools.wraps(f)
    def hessian_of(*args: Any, **kwargs: Any) -> Any:
        inputs.real_arguments("hessian", args, argnums)
        return second(*args, **kwargs)

    return hessian_of


@keywords_checked
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
        inputs.real_arguments("hvp", args, argnums)
        nums = inputs.normalize_argnums(argnums, len(args))
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


@keywords_checked
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


@keywords_checked
def vjp(
    f: Callable[..., Any], *primals: Any, backend: str = "reverse", has_aux: bool = False, **options: Any
):
    """(f(*primals), vjp_fn), or (out, vjp_fn, aux) with has_aux: vjp_fn(cotangent), the
    cotangent in the output's structure, returns a tuple of one cotangent per primal, each
    in that primal's structure."""
    be = derivatives.prepare(f, backend, "vjp", options)
    if not primals:
        raise InvalidInputError("vjp(f, *primals): give at least one primal")
    flat, layout = flatten_args(primals, range(len(primals)))
    split = Split.of(flat, range(len(flat)))
    call = Call({}, False, has_aux, _real_positions(len(flat), split))
    level = next_level() if has_aux else 0
    fn = Flat.of(f, layout, has_aux).bind(call)
    engine_args = flat if split is None else split.args(flat)
    try:
        flat_out, pullback = derivatives.vjp(
            be, fn if split is None else split.function(fn), tuple(engine_args), options
        )
    except AdcoreError as e:
        name_parts(e, None, split)
        raise
    out_def = output_of(call, f, primals)
    out = detached(out_def.value(flat_out), flat)

    def vjp_fn(cotangent: Any) -> tuple:
        cts = pullback(out_def.cotangent(cotangent, flat_out))
        if split is not None:  # a complex primal's cotangent is gx - 1j*gy (JAX's)
            cts = split.cotangents(flat, cts)
        return detached(tuple(cts) if layout.defs is None else tuple(rebuild(layout.defs, cts)), flat)

    if has_aux:
        return out, vjp_fn, aux_of(be, call, level, f, primals, {})
    return out, vjp_fn


# --- what the derivative functions share --------------------------------------------------------


def _inner_outer(f: Any, backend: str | None, inner: str | None, outer: str | None) -> tuple[str, str]:
    inner = inner if inner is not None else backend if backend is not None else "reverse"
    outer = outer if outer is not None else backend if backend is not None else "forward"
    get_backend(inner), get_backend(outer)  # an unknown name fails here, not at the first call
    if not callable(f):
        raise InvalidInputError(f"expected a function to differentiate, got {type(f).__name__} {f!r}")
    return inner, outer


def _derivative_function(
    f, backend, argnums, has_aux, options, *, scalar: bool, want_value: bool, holomorphic: bool
):
    """differentiate/grad/value_and_grad's function: flatten the call (complex arguments as real
    pairs, adcore.complex_split), run the engine, rebuild."""
    be = derivatives.prepare(f, backend, "value_and_jacobian", options)
    flats: dict = {}  # the flat functions of f (Flat.of), by argument structure, at hand
    positions: dict = {}  # argnums normalised, by the number of arguments of the call
    plain = not (has_aux or holomorphic)  # may take the fast path (plain arrays in, one array out)

    @functools.wraps(f)
    def derivative(*args: Any, **kwargs: Any) -> Any:
        nums = positions.get(len(args))
        if nums is None:
            nums = positions[len(args)] = inputs.normalize_argnums(argnums, len(args))
        if plain:  # float arrays in: no pytree, no complex split, f's flat function is f itself
            for n in nums:
                a = args[n]
                if not (a.__class__ is np.ndarray and a.dtype.char in "fd"):
                    break
            else:
                flat_f = flats.get(len(args))
                if flat_f is None:
                    flat_f = flats[len(args)] = _PlainFlat.of(f, Layout(None, None, args), False)
                call = _PlainCall(kwargs, scalar, nums)
                try:
                    result = derivatives.value_and_jacobian(
                        be, flat_f, (*args, call), nums, scalar=scalar, want_value=want_value, options=options
                    )
                except AdcoreError as e:
                    e._adcore_leaves_named = True  # the numbers it names are the arguments' (name_leaves)
                    raise
                out = call.out if call.out is not None else output_of(call, f, args)
                if out is not LEAF or result.errors is not None:  # a pytree out, or an Estimate
                    picked = pick(
                        result, nums, Layout(None, None, list(args)), out, argnums, None, False, be.estimates
                    )
                else:  # one array out
                    picked = result.jacobians[0] if type(argnums) is int else result.jacobians
                if want_value:
                    return detached((out.value(result.value), picked), args)
                return picked if picked.__class__ is np.ndarray else detached(picked, args)
        flat, layout = flatten_args(args, nums, check=False)  # the engine checks the flat args
        flat_f = flats.get(layout.key)
        if flat_f is None:
            flat_f = flats[layout.key] = Flat.of(f, layout, has_aux)
        flat_nums = layout.flat_argnums(nums)
        split = Split.of(flat, flat_nums)
        if holomorphic:
            holomorphic_arguments(flat, flat_nums, split, layout, nums)
        real = flat_nums if split is None else tuple(i for i in flat_nums if i not in split.positions)
        call = Call(kwargs, scalar and not holomorphic, has_aux, real)
        level = next_level() if has_aux else 0
        try:
            result = derivatives.value_and_jacobian(
                be,
                flat_f if split is None else split.function(flat_f),
                (*(flat if split is None else split.args(flat)), call),
                flat_nums if split is None else split.argnums(flat_nums),
                scalar=call.scalar,
                want_value=want_value,
                options=options,
            )
        except AdcoreError as e:
            name_parts(e, layout, split)
            raise
        out = call.out if call.out is not None else output_of(call, f, args)
        if holomorphic and scalar:
            holomorphic_scalar(out)
        if (
            out is LEAF and layout.defs is None and result.errors is None and split is None
        ):  # arrays in, one array out
            picked = result.jacobians[0] if type(argnums) is int else result.jacobians
        else:
            picked = pick(result, nums, layout, out, argnums, split, holomorphic, be.estimates)
        if want_value:
            value = out.value(result.value)
            picked = ((value, aux_of(be, call, level, f, args, kwargs)) if has_aux else value, picked)
        elif has_aux:
            picked = (picked, aux_of(be, call, level, f, args, kwargs))
        return detached(picked, flat)

    return derivative


class _PlainCall(Call):
    """A Call on the plain-array path (no aux; the differentiated arguments are real), made here."""

    __slots__ = ()

    def __init__(self, kwargs: dict, scalar: bool, real: tuple) -> None:
        self.kwargs, self.scalar, self.has_aux, self.real = kwargs, scalar, False, real
        self.out = self.aux = None


class _PlainFlat(Flat):
    """f on the plain-array path (no pytree argument, no aux): flatten.Flat's call, its common case
    (one real array out) answered here, so a warm call runs no function of adcore.flatten."""

    __slots__ = ()

    def __call__(self, *flat: Any, call: Call | None = None) -> Any:
        if call is None:
            call = flat[-1]
            flat = flat[:-1]
        result = self.ref()(*flat, **call.kwargs) if call.kwargs else self.ref()(*flat)
        if (
            (result.__class__ is np.ndarray or isinstance(result, ONE_ARRAY))
            and (call.out is None or call.out is LEAF)
            and getattr(result, "dtype", REAL).kind != "c"
        ):
            call.out = LEAF
            return result
        return flat_output(result, call, flat)  # a pytree or complex output, or one that changed


def _real_positions(n: int, split: Split | None) -> tuple[int, ...]:
    return tuple(i for i in range(n) if split is None or i not in split.positions)


def _jvp(
    f, primals: tuple, tangents: tuple, backend: str, options: dict, names: Any, what: str = ""
) -> tuple:
    """(out, tangent out) in the output's structure, for primals and tangents in theirs; `names`
    are the primals' argument numbers and `what` says what the tangents are, for messages."""
    be = derivatives.prepare(f, backend, "jvp", options)
    flat, layout = flatten_args(primals, range(len(primals)), where=[f"argument {n}" for n in names])
    split = Split.of(flat, range(len(flat)))
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
            inputs.check_tangent(t_, x, path + what) for t_, x, path in zip(leaves, layout.leaves(p), paths)
        ]
    call = Call({}, scalar=False, real=_real_positions(len(flat), split))
    fn = Flat.of(f, layout, False).bind(call)
    if split is not None:  # a complex primal and its tangent as their real and imaginary parts
        fn, flat, flat_t = split.function(fn), split.args(flat), split.args(flat_t)
    try:
        out, tangent_out = derivatives.jvp(be, fn, tuple(flat), tuple(flat_t), options)
    except AdcoreError as e:
        name_parts(e, None, split)
        raise
    out_def = output_of(call, f, primals)
    return detached(out_def.value(out), flat), detached(out_def.value(tangent_out), flat)
