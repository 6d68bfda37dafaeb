"""Reductions over axes: sum, mean, prod, max, min, var, std, ptp, average, nansum, nanmean,
median, quantile, percentile (params axis, keepdims, ...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore import core
from adcore.errors import InvalidValueError
from adcore.spec import POSITIVE, REAL, Domain, Kink, OpSpec, Sample

_SHAPE_AXES = (
    ((), (None,)),
    ((3,), (None, 0, -1)),
    ((2, 3), (None, 0, 1, (0, 1))),
    ((2, 3, 4), (None, 1, (0, 2), -1)),
)


QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def check_method(op: str, method: str) -> None:
    if method not in QUANTILE_METHODS:
        raise InvalidValueError(
            f"op {op!r}: method={method!r} is not supported; adcore's {op} takes method in "
            f"{list(QUANTILE_METHODS)} (a quantile that is a fixed interpolation of two order statistics)."
        )


def reduction_samples(domain: Domain, with_zeros: bool = False):
    """Every (shape, axis) above, with and without keepdims; optionally inputs holding zeros."""

    def draw(rng: np.random.Generator, dtype) -> list[Sample]:
        out = []
        for shape, axes in _SHAPE_AXES:
            for axis in axes:
                for keepdims in (False, True):
                    out.append(
                        Sample((domain.draw(rng, shape, dtype),), {"axis": axis, "keepdims": keepdims})
                    )
        if with_zeros:
            one_zero = domain.draw(rng, (2, 3), dtype)
            one_zero[0, 1] = 0
            two_zeros = domain.draw(rng, (4,), dtype)
            two_zeros[[1, 3]] = 0
            out += [Sample((one_zero,), {"axis": 1, "keepdims": False}), Sample((two_zeros,), {"axis": None})]
        return out

    return draw


def _reduction(
    name: str,
    impl,
    domain: Domain = REAL,
    with_zeros: bool = False,
    doc: str = "",
    alias: str = "",
    nonempty: bool = False,
    **spec,
) -> OpSpec:
    return OpSpec(
        name,
        _refusing_empty(name, impl) if nonempty else impl,
        params=("axis", "keepdims"),
        numpy=(impl, getattr(np, alias)) if alias else (impl,),
        samples=reduction_samples(domain, with_zeros),
        doc=doc,
        aliases=(alias,) if alias else (),
        **spec,
    )


def _refusing_empty(name: str, reduce):
    """`reduce` (NumPy's max, min, ptp: no identity) whose ValueError on an empty slice is an
    InvalidValueError naming the op, still a ValueError as NumPy's."""

    def impl(x, *args, **params):
        try:
            return reduce(x, *args, **params)
        except ValueError as e:
            raise InvalidValueError(
                f"op {name!r} of an array of shape {np.shape(x)} along axis {params.get('axis')!r}: {e}; "
                "an empty slice has no value to give: reduce a non-empty array (check x.size or the "
                "axis' length first)"
            ) from e

    impl.__name__ = impl.__qualname__ = reduce.__name__
    impl.__doc__ = reduce.__doc__
    return impl


prod = _reduction(
    "prod",
    np.prod,
    Domain(0.5, 1.5),
    with_zeros=True,
    doc="exact with zeros in the input",
    accepts_complex=True,
)
DISTINCT = Domain(distinct=True)  # ties are kinks: docs/conventions.md tests them on purpose


def _tie_distance(x, axis=None, keepdims=False):
    """How far the largest value along `axis` is from the runner-up (a tie is a kink of max)."""
    x = np.asarray(x)
    axes = list(range(x.ndim)) if axis is None else [int(a) % (x.ndim or 1) for a in np.atleast_1d(axis)]
    x = np.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    x = x.reshape(x.shape[: x.ndim - len(axes)] + (-1,))
    if x.shape[-1] < 2:  # no ties
        return np.array(np.inf)
    s = np.sort(x, axis=-1)
    return s[..., -1] - s[..., -2]


def closest_pair(x, axis=None):
    """How close the two nearest values of each slice along `axis` are (a tie is a kink of
    sort, ptp and the order statistics); inf for a slice of one."""
    x = np.asarray(x)
    axes = list(range(x.ndim)) if axis is None else [int(a) % (x.ndim or 1) for a in np.atleast_1d(axis)]
    x = np.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    x = x.reshape(x.shape[: x.ndim - len(axes)] + (-1,))
    if x.shape[-1] < 2:
        return np.array(np.inf)
    return np.min(np.diff(np.sort(x, axis=-1), axis=-1), axis=-1)


max = _reduction(
    "max",
    np.max,
    DISTINCT,
    doc="the gradient is split equally among ties",
    alias="amax",
    nonempty=True,
    kinks=(Kink(([1.0, 3.0, 3.0],), (np.array([0.0, 0.5, 0.5]),), why="k tied maxima get 1/k each"),),
    kink_distance=_tie_distance,
)
min = _reduction(
    "min",
    np.min,
    DISTINCT,
    doc="the gradient is split equally among ties",
    alias="amin",
    nonempty=True,
    kinks=(Kink(([2.0, 1.0, 1.0, 1.0],), (np.array([0.0, 1, 1, 1]) / 3,), why="k tied minima get 1/k each"),),
    kink_distance=lambda x, axis=None, keepdims=False: _tie_distance(-np.asarray(x), axis),
)


# --- sum and mean with NumPy's dtype= and where= keywords --------------------------------


def float_dtype(op: str, dtype: Any, x: Any) -> Any:
    """`dtype` as given when it is None, a complex dtype, or a float dtype for a real x; else the
    refusal naming the op."""
    if dtype is None:
        return dtype
    target = np.dtype(dtype)
    if target.kind == "c" or (target.kind == "f" and np.result_type(x).kind != "c"):
        return dtype
    if target.kind == "f":
        raise InvalidValueError(
            f"op {op!r}: dtype={target} of a complex x would drop its imaginary part: take np.real(x) "
            "first (or leave dtype out)"
        )
    raise InvalidValueError(
        f"op {op!r}: dtype={target} would give a {target.kind!r}-kind result, which has no derivative (an "
        f"integer or bool result is a step). adcore's {op} takes float and complex dtypes only: leave "
        "dtype out, or cast the plain result outside f."
    )


def _sum(x, axis=None, keepdims=False, dtype=None, where=True):
    if x.__class__ is np.ndarray:  # np.sum's own call for an array, without its Python wrapper
        return np.add.reduce(x, axis=axis, dtype=float_dtype("sum", dtype, x), keepdims=keepdims, where=where)
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=float_dtype("sum", dtype, x), where=where)


def _mean(x, axis=None, keepdims=False, dtype=None, where=True):
    return np.mean(x, axis=axis, keepdims=keepdims, dtype=float_dtype("mean", dtype, x), where=where)


def _masked_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    """dtype= and where= calls: a mask of x's shape, one broadcasting against it (a slice masked out
    whole, where mean is nan and finite differences cannot go, is tested in tests/ops)."""
    x = REAL.draw(rng, (2, 3), dtype)
    return [
        Sample((x,), {"axis": 1, "where": np.array([[True, False, True], [False, True, True]])}),
        Sample((x,), {"axis": None, "where": np.array([True, False, True])}),
        Sample(
            (x,), {"axis": 0, "keepdims": True, "where": np.array([[True, True, False], [False, True, True]])}
        ),
        Sample((x,), {"axis": 1, "dtype": dtype}),
    ]


def _with_keywords(plain, masked):
    def draw(rng: np.random.Generator, dtype) -> list[Sample]:
        return plain(rng, dtype) + masked(rng, dtype)

    return draw


_KEYWORDS = ("axis", "keepdims", "dtype", "where")
sum = OpSpec(
    "sum",
    _sum,
    params=_KEYWORDS,
    numpy=(np.sum,),
    samples=_with_keywords(reduction_samples(REAL), _masked_samples),
    doc="dtype: float or complex; where: a constant mask, masked-out elements get derivative 0",
    accepts_complex=True,
)
mean = OpSpec(
    "mean",
    _mean,
    params=_KEYWORDS,
    numpy=(np.mean,),
    samples=_with_keywords(reduction_samples(REAL), _masked_samples),
    doc="dtype: float or complex; where: a constant mask, masked-out elements (and all-masked slices) get derivative 0",
    accepts_complex=True,
)


# --- spread: var, std, ptp ------------------------------------------------------------------


def reduced_count(x: Any, axis: Any) -> int:
    """How many elements of x each slice of a reduction over `axis` holds."""
    ndim = np.ndim(x)
    axes = range(ndim) if axis is None or ndim == 0 else [a % ndim for a in np.atleast_1d(axis)]
    return int(np.prod([np.shape(x)[a] for a in axes], dtype=int))


def _dof(op: str, x: Any, axis: Any, ddof: Any) -> int:
    """n - ddof, refused when not positive: NumPy's inf or nan there has no derivative."""
    n = reduced_count(x, axis)
    if n - ddof <= 0:
        raise InvalidValueError(
            f"op {op!r}: ddof={ddof} with {n} element(s) per reduced slice divides by n - ddof = {n - ddof} "
            "(NumPy gives inf or nan with a RuntimeWarning), which has no derivative; use ddof < n."
        )
    return n - ddof


def refuse_std_second_order(std: Any, x: Any, axis: Any) -> None:
    """std's rules under an outer derivative (a traced x or std) where std is 0 over more than one
    element: the gradient there is the subgradient 0 and (x - mean) / (n std) nearby, unbounded, so
    its derivative would be a plausible wrong number ((I - 1/n) / n came out)."""
    if not any(map(core.differentiated, (std, x))) or reduced_count(x, axis) < 2:
        return
    if core.plain_numbers(core.concrete(std) == 0).any():  # (under vmap: where any example's is 0)
        raise InvalidValueError(
            "op 'std': no second derivative where all elements of a slice are equal (std = 0): the "
            "first derivative there is the subgradient 0, and std's gradient is unbounded nearby; take "
            "second derivatives where the elements differ, or of var"
        )


def _var(x, axis=None, ddof=0, keepdims=False):
    _dof("var", x, axis, ddof)
    return np.var(x, axis=axis, ddof=ddof, keepdims=keepdims)


def _std(x, axis=None, ddof=0, keepdims=False):
    _dof("std", x, axis, ddof)
    return np.std(x, axis=axis, ddof=ddof, keepdims=keepdims)


# fewer and smaller calls than reduction_samples: symbolic's derivative of a spread is n^2 terms
_SPREAD_SHAPE_AXES = (((3,), (None, 0)), ((2, 3), (None, 1, (0, 1))), ((2, 3, 4), ((0, 2), -1)))


def spread_samples(domain: Domain):
    """Every (shape, axis) above, with and without keepdims, and with ddof=1."""

    def draw(rng: np.random.Generator, dtype) -> list[Sample]:
        out = []
        for shape, axes in _SPREAD_SHAPE_AXES:
            for axis in axes:
                for params in ({"keepdims": False}, {"keepdims": True}, {"ddof": 1}):
                    out.append(Sample((domain.draw(rng, shape, dtype),), {"axis": axis, **params}))
        return out

    return draw


def _ptp_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    return [s for s in spread_samples(DISTINCT)(rng, dtype) if "ddof" not in s.params]


var = OpSpec(
    "var",
    _var,
    params=("axis", "ddof", "keepdims"),
    numpy=(np.var,),
    samples=spread_samples(REAL),
    doc="ddof >= n is refused (NumPy's inf/nan has no derivative)",
    accepts_complex=True,
)
std = OpSpec(
    "std",
    _std,
    params=("axis", "ddof", "keepdims"),
    numpy=(np.std,),
    samples=spread_samples(REAL),
    doc="derivative 0 where std is 0 (all elements equal), as abs'(0) = 0; ddof >= n is refused",
    kinks=(
        Kink((np.array([1.5, 1.5, 1.5]),), (np.zeros(3),), why="std of equal elements is 0: derivative 0"),
    ),
    kink_distance=lambda x, axis=None, ddof=0, keepdims=False: np.std(x, axis=axis),
    accepts_complex=True,
)
ptp = OpSpec(
    "ptp",
    _refusing_empty("ptp", np.ptp),
    params=("axis", "keepdims"),
    numpy=(np.ptp,),
    samples=_ptp_samples,
    doc="max - min: the gradient is split equally among ties of the max and of the min",
    kinks=(
        Kink(
            ([3.0, 1.0, 3.0, 1.0],),
            (np.array([0.5, -0.5, 0.5, -0.5]),),
            why="ties of the max and of the min get 1/k each",
        ),
    ),
    kink_distance=lambda x, axis=None, keepdims=False: np.minimum(
        _tie_distance(x, axis), _tie_distance(-np.asarray(x), axis)
    ),
)


# --- average ---------------------------------------------------------------------------------


def _average(a, weights, axis=None, keepdims=False, returned=False):
    if returned:
        raise InvalidValueError(
            "op 'average': returned=True (the sum of the weights as a second output) is not supported; "
            "compute it as anp.sum(weights, axis) beside anp.average(a, weights, axis)."
        )
    return np.average(a, axis=axis, weights=weights, keepdims=keepdims)


def _average_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    weights = POSITIVE
    return [
        Sample((REAL.draw(rng, (4,), dtype), weights.draw(rng, (4,), dtype)), {}),
        Sample((REAL.draw(rng, (2, 3), dtype), weights.draw(rng, (2, 3), dtype)), {"axis": 1}),
        Sample(
            (REAL.draw(rng, (2, 3), dtype), weights.draw(rng, (2,), dtype)), {"axis": 0, "keepdims": True}
        ),
        Sample((REAL.draw(rng, (2, 3, 2), dtype), weights.draw(rng, (2, 3, 2), dtype)), {"axis": (0, 2)}),
        Sample((REAL.draw(rng, (2, 3), dtype), REAL.draw(rng, (3,), dtype) + 3), {"axis": -1}),
    ]


average = OpSpec(
    "average",
    _average,
    nin=2,
    params=("axis", "keepdims", "returned"),
    samples=_average_samples,
    doc="sum(a * w) / sum(w), weights differentiable too (1-d weights lie along an int axis); "
    "returned=True is refused; np.average without weights is mean",
    accepts_complex=True,
)


def numpy_average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """np.average on a traced value: mean without weights, else the average op."""
    if weights is None and not returned:
        return mean(a, axis=axis, keepdims=keepdims)
    if weights is not None and not isinstance(weights, core.Tracer):
        weights = np.asarray(weights)  # a list, as NumPy takes it (the rules read its shape)
    return average(a, weights, axis=axis, keepdims=keepdims, returned=returned)


NUMPY_FUNCTIONS = {np.average: numpy_average}


# --- ignoring NaNs ---------------------------------------------------------------------------


def _nan_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    # NaN inputs, where finite differences cannot go, are tested in tests/ops/test_reductions_more.py
    return reduction_samples(REAL)(rng, dtype)


nansum = OpSpec(
    "nansum",
    np.nansum,
    params=("axis", "keepdims"),
    numpy=(np.nansum,),
    samples=_nan_samples,
    doc="derivative 0 at NaN elements, never NaN",
    accepts_complex=True,
)
nanmean = OpSpec(
    "nanmean",
    np.nanmean,
    params=("axis", "keepdims"),
    numpy=(np.nanmean,),
    samples=_nan_samples,
    doc="derivative 0 at NaN elements (and for an all-NaN slice), never NaN",
    accepts_complex=True,
)


# --- order statistics: median, quantile, percentile (rules: sort + interpolation weights) ----


def _quantile(x, q, axis=None, method="linear", keepdims=False):
    check_method("quantile", method)
    return np.quantile(x, q, axis=axis, method=method, keepdims=keepdims)


def _percentile(x, q, axis=None, method="linear", keepdims=False):
    check_method("percentile", method)
    return np.percentile(x, q, axis=axis, method=method, keepdims=keepdims)


def _quantile_samples(scale: float):
    def draw(rng: np.random.Generator, dtype) -> list[Sample]:
        calls = (
            ((5,), {"q": 0.3}),
            ((2, 4), {"q": np.array([0.1, 0.5, 1.0]), "axis": 1}),
            ((3, 4), {"q": 0.75, "axis": 0, "keepdims": True}),
            ((2, 3, 2), {"q": np.array([0.0, 0.4]), "axis": (0, 2)}),
            ((6,), {"q": 0.45, "method": "lower"}),
            ((6,), {"q": 0.45, "method": "higher"}),
            ((6,), {"q": 0.5, "method": "nearest"}),
            ((2, 5), {"q": np.array([0.3, 0.5]), "axis": -1, "method": "midpoint"}),
        )
        return [
            Sample((DISTINCT.draw(rng, shape, dtype),), {**p, "q": np.asarray(p["q"]) * scale})
            for shape, p in calls
        ]

    return draw


_ORDER_DOC = (
    "sort + interpolation: the derivative is the interpolation weights on the two order statistics; "
    "ties follow the stable sort (the weight goes to the element whose stable rank is the slot)"
)
_STABLE = "ties follow the stable sort: the weight goes to the element of the slot's stable rank"
median = OpSpec(
    "median",
    np.median,
    params=("axis", "keepdims"),
    numpy=(np.median,),
    samples=reduction_samples(DISTINCT),
    doc=_ORDER_DOC,
    kinks=(Kink(([2.0, 2.0, 2.0],), (np.array([0.0, 1.0, 0.0]),), why=_STABLE),),
    kink_distance=lambda x, axis=None, keepdims=False: closest_pair(x, axis),
)
quantile = OpSpec(
    "quantile",
    _quantile,
    params=("q", "axis", "method", "keepdims"),
    numpy=(np.quantile,),
    samples=_quantile_samples(1.0),
    kinks=(Kink(([1.0, 5.0, 1.0],), (np.array([0.6, 0.0, 0.4]),), {"q": 0.2}, why=_STABLE),),
    kink_distance=lambda x, q, axis=None, method="linear", keepdims=False: closest_pair(x, axis),
    doc=f"q constant, as given (the value's dtype is NumPy's); methods {', '.join(QUANTILE_METHODS)}; {_ORDER_DOC}",
)
percentile = OpSpec(
    "percentile",
    _percentile,
    params=("q", "axis", "method", "keepdims"),
    numpy=(np.percentile,),
    samples=_quantile_samples(100.0),
    kinks=(Kink(([1.0, 5.0, 1.0],), (np.array([0.6, 0.0, 0.4]),), {"q": 20.0}, why=_STABLE),),
    kink_distance=lambda x, q, axis=None, method="linear", keepdims=False: closest_pair(x, axis),
    doc=f"quantile with q in percent; {_ORDER_DOC}",
)
