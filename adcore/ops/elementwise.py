"""Elementwise ops: arithmetic, powers, exp/log, trigonometry, kinks, clip and where."""

from __future__ import annotations

import numpy as np

from adcore.core import Tracer, concrete, def_traced_params
from adcore.errors import AdcoreError
from adcore.spec import (
    NONZERO,
    POSITIVE,
    REAL,
    UNIT_OPEN,
    WIDE,
    Domain,
    Kink,
    OpSpec,
    Sample,
    elementwise_samples,
)


def _unary(name: str, impl, domain: Domain = REAL, doc: str = "", **spec) -> OpSpec:
    samples = elementwise_samples(domain)
    return OpSpec(name, impl, nin=1, numpy=(impl,), samples=samples, elementwise=True, doc=doc, **spec)


def _binary(name: str, impl, x: Domain = REAL, y: Domain = REAL, **spec) -> OpSpec:
    return OpSpec(
        name, impl, nin=2, numpy=(impl,), samples=elementwise_samples(x, y), elementwise=True, **spec
    )


# --- arithmetic -------------------------------------------------------------------
negative = _unary("negative", np.negative, accepts_complex=True)
add = _binary("add", np.add, accepts_complex=True)
subtract = _binary("subtract", np.subtract, accepts_complex=True)
multiply = _binary("multiply", np.multiply, accepts_complex=True)
# np.true_divide is np.divide
divide = _binary("divide", np.divide, y=NONZERO, aliases=("true_divide",), accepts_complex=True)
power = _binary(
    "power",
    np.power,
    x=POSITIVE,
    accepts_complex=True,
    # points where a rule divides by the input (issue 15, class 4): exact where the limit exists
    kinks=(
        Kink(
            ([0.0, 0.0, 0.0, 0.0, 2.0], [1.0, 2.0, 3.0, 2.5, 0.0]),
            (np.diag([1.0, 0, 0, 0, 0]), np.diag([0, 0, 0, 0, np.log(2.0)])),
            why="x**y at x = 0 < y: d/dx = y x**(y-1), d/dy = 0 (0**y is 0 near y); at y = 0, d/dx = 0",
        ),
    ),
)
square = _unary("square", np.square, accepts_complex=True)
reciprocal = _unary("reciprocal", np.reciprocal, NONZERO, accepts_complex=True)
sqrt = _unary("sqrt", np.sqrt, POSITIVE, accepts_complex=True)

# --- exponentials and logarithms ----------------------------------------------------
exp = _unary("exp", np.exp, accepts_complex=True)
expm1 = _unary("expm1", np.expm1, accepts_complex=True)
log = _unary("log", np.log, POSITIVE, accepts_complex=True)
log1p = _unary("log1p", np.log1p, Domain(-0.5, 2.0), accepts_complex=True)

# --- trigonometric and hyperbolic -------------------------------------------------
sin = _unary("sin", np.sin, accepts_complex=True)
cos = _unary("cos", np.cos, accepts_complex=True)
tan = _unary("tan", np.tan, Domain(-1.2, 1.2), accepts_complex=True)
arcsin = _unary("arcsin", np.arcsin, UNIT_OPEN, accepts_complex=True)
arccos = _unary("arccos", np.arccos, UNIT_OPEN, accepts_complex=True)
arctan = _unary("arctan", np.arctan, accepts_complex=True)
arctan2 = _binary(
    "arctan2", np.arctan2, y=NONZERO, kink_distance=lambda y, x: np.where(x < 0, np.abs(y), np.inf)
)  # its kink distance is from the branch cut, a jump of 2 pi
sinh = _unary("sinh", np.sinh, accepts_complex=True)
cosh = _unary("cosh", np.cosh, accepts_complex=True)
tanh = _unary("tanh", np.tanh, accepts_complex=True)

# --- kinks and steps: conventions in docs/conventions.md -----------------------------
# kink_distance: how far the inputs are from a kink or jump (random programs keep clear of them)
abs = _unary(
    "abs",
    np.absolute,
    NONZERO,
    doc="abs'(0) = 0; on complex z, d|z| = Re(conj(z) dz) / |z|, 0 at z = 0",
    accepts_complex=True,
    kinks=(Kink(([-1.0, 0.0, 2.0],), (np.diag([-1.0, 0, 1]),), why="abs'(0) = 0"),),
    kink_distance=np.abs,
)
sign = _unary(
    "sign",
    np.sign,
    NONZERO,
    doc="zero derivative",
    kinks=(Kink(([-2.0, 0.0, 3.0],), (np.diag([0.0, 0, 0]),), why="sign' = 0, also at 0"),),
    kink_distance=np.abs,
)
floor = _unary(
    "floor",
    np.floor,
    doc="zero derivative",
    kinks=(Kink(([-1.5, 0.0, 1.0, 2.7],), (np.diag([0.0, 0, 0, 0]),), why="floor' = 0, also at the jumps"),),
    kink_distance=lambda x: np.abs(x - np.round(x)),
)


def _round_distance(x, decimals: int = 0):
    scaled = x * 10.0**decimals
    return np.abs(scaled - np.floor(scaled) - 0.5) / 10.0**decimals


def _clip_distance(x, a_min=None, a_max=None):
    bounds = [b for b in (a_min, a_max) if b is not None]
    return np.min([np.abs(x - b) for b in bounds], axis=0) if bounds else np.array(np.inf)


_TIE = (Kink((1.5, 1.5), (np.array(0.5), np.array(0.5)), why="ties split 0.5/0.5"),)


def _tie_distance(x, y):
    return np.abs(x - y)


round = OpSpec(
    "round",
    np.round,
    params=("decimals",),
    numpy=(np.round,),
    samples=elementwise_samples(REAL),
    elementwise=True,
    doc="zero derivative",
    kinks=(Kink(([-1.5, 0.5, 2.5, 2.7],), (np.diag([0.0, 0, 0, 0]),), why="round' = 0, also at the jumps"),),
    kink_distance=_round_distance,
)
maximum = _binary("maximum", np.maximum, kinks=_TIE, kink_distance=_tie_distance)
minimum = _binary("minimum", np.minimum, kinks=_TIE, kink_distance=_tie_distance)
clip = OpSpec(
    "clip",
    np.clip,
    params=("a_min", "a_max"),
    numpy=(np.clip,),
    samples=elementwise_samples(REAL, params=({"a_min": -1.0, "a_max": 1.0}, {"a_min": None, "a_max": 0.5})),
    elementwise=True,
    doc="derivative 1 on [a_min, a_max] (bounds included), 0 outside",
    kinks=(
        Kink(
            ([-1.0, 0.0, 1.0, 2.0],),
            (np.diag([1.0, 1, 1, 0]),),
            {"a_min": -1.0, "a_max": 1.0},
            why="clip' = 1 on the closed interval",
        ),
    ),
    kink_distance=_clip_distance,
)


def _clip_with_traced_bounds(x, a_min=None, a_max=None):
    """np.clip with traced bounds, differentiable in them too (as JAX's clip): NumPy's value, from
    the clip of x between the bounds' numbers (x's derivative 1 on the closed interval, as clip's),
    with each traced bound selected where it is the answer: a_max where max(x, a_min) > a_max (NumPy's
    order: the upper bound wins when a_min > a_max), a_min where x < a_min otherwise."""
    try:
        xc, lo, hi = concrete(x), concrete(a_min), concrete(a_max)
        out = clip(x, a_min=lo, a_max=hi)
    except AdcoreError:  # values with no numbers yet (symbolic): the same selection, traced
        xc, lo, hi, out = x, a_min, a_max, x
    above = np.False_ if hi is None else (xc if lo is None else maximum(xc, lo)) > hi
    if isinstance(a_min, Tracer):
        below = (xc < lo) & ~above
        out = where(below if hi is None else below & (hi == hi), a_min, out)  # a NaN a_max gives NaN
    if isinstance(a_max, Tracer):
        out = where(above, a_max, out)
    return out


def_traced_params("clip", _clip_with_traced_bounds)


def _where_samples(rng: np.random.Generator, dtype) -> list[Sample]:
    pairs = (((3,), (3,), (3,)), ((2, 3), (2, 3), ()), ((2, 1), (2, 2), (2,)))
    return [
        Sample((rng.random(c) > 0.5, REAL.draw(rng, x, dtype), REAL.draw(rng, y, dtype))) for c, x, y in pairs
    ]


where = OpSpec(
    "where",
    np.where,
    nin=3,
    differentiable=(1, 2),
    numpy=(np.where,),
    samples=_where_samples,
    elementwise=True,
    doc="the condition is not differentiable",
    accepts_complex=True,
)


# === Elementwise ops added in issue 17 (docs/conventions.md, "Elementwise ops added in issue 17") ===


def elementwise_op(name: str, impl, *domains: Domain, numpy: tuple = (), samples=None, **spec) -> OpSpec:
    """An elementwise op of len(domains) inputs, standing for `impl` (a ufunc) and the NumPy functions
    in `numpy`."""
    return OpSpec(
        name,
        impl,
        nin=len(domains),
        numpy=tuple(dict.fromkeys((impl, *numpy) if isinstance(impl, np.ufunc) else numpy)),
        samples=samples or elementwise_samples(*domains),
        elementwise=True,
        **spec,
    )


def _with_edges(draw, *edges: tuple):
    """`draw`'s samples and fixed edge-case calls (inputs given as lists, cast to the sample dtype)."""

    def samples(rng: np.random.Generator, dtype) -> list[Sample]:
        return draw(rng, dtype) + [Sample(tuple(np.asarray(a, dtype=dtype) for a in args)) for args in edges]

    return samples


def jacobian_diag(*values: float) -> np.ndarray:
    return np.diag(np.array(values, dtype=np.float64))


def distance_to_integer(v):
    v = np.asarray(v, dtype=np.float64)
    return np.abs(v - np.round(v))


def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """np.nan_to_num, always on a copy: an op does not write into its input."""
    return np.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf)


# --- inverse hyperbolic -------------------------------------------------------------
arcsinh = elementwise_op("arcsinh", np.arcsinh, WIDE, accepts_complex=True)
arccosh = elementwise_op(
    "arccosh", np.arccosh, Domain(1.1, 4.0), doc="derivative +inf at 1, where it starts", accepts_complex=True
)
arctanh = elementwise_op(
    "arctanh", np.arctanh, UNIT_OPEN, doc="derivative +inf at -1 and 1", accepts_complex=True
)

# --- bases 2 and 10, log-sum-exp of two -------------------------------------------------
log2 = elementwise_op("log2", np.log2, POSITIVE, accepts_complex=True)
log10 = elementwise_op("log10", np.log10, POSITIVE, accepts_complex=True)
exp2 = elementwise_op("exp2", np.exp2, REAL, accepts_complex=True)
_LARGE_PAIRS = ([800.0, -700.0, 3.0], [799.0, -701.0, -900.0])  # no overflow, no underflow to -inf
_INF_PAIRS = ([-np.inf, 1.0, -np.inf, np.inf, 3.0], [2.0, 1.0, -np.inf, 5.0, np.inf])
_INF_WEIGHTS = (jacobian_diag(0, 0.5, 0.5, 1, 0), jacobian_diag(1, 0.5, 0.5, 0, 1))
logaddexp = elementwise_op(
    "logaddexp",
    np.logaddexp,
    REAL,
    REAL,
    samples=_with_edges(elementwise_samples(REAL, REAL), _LARGE_PAIRS),
    kinks=(Kink(_INF_PAIRS, _INF_WEIGHTS, why="d/dx = exp(x - ans), its limit at infinite inputs"),),
    doc="d/dx = exp(x - ans): 0 or 1 where an input is infinite, 0.5/0.5 for two equal infinities",
)
logaddexp2 = elementwise_op(
    "logaddexp2",
    np.logaddexp2,
    REAL,
    REAL,
    samples=_with_edges(elementwise_samples(REAL, REAL), _LARGE_PAIRS),
    kinks=(Kink(_INF_PAIRS, _INF_WEIGHTS, why="d/dx = 2**(x - ans), its limit at infinite inputs"),),
    doc="d/dx = 2**(x - ans): 0 or 1 where an input is infinite, 0.5/0.5 for two equal infinities",
)

# --- sinc, hypot, angles, cube root ------------------------------------------------------
sinc = elementwise_op(
    "sinc",
    np.sinc,
    WIDE,
    numpy=(np.sinc,),  # not a ufunc: dispatched by __array_function__
    accepts_complex=True,
    samples=_with_edges(elementwise_samples(WIDE), ([0.0, 0.05, -0.08, 1.5],)),
    kinks=(Kink(([0.0, 1.0],), (jacobian_diag(0.0, -1.0),), why="sinc'(0) = 0, the limit (no 0/0)"),),
    doc="sin(pi x) / (pi x); sinc'(0) = 0 and sinc''(0) = -pi**2/3 (a series near 0)",
)
hypot = elementwise_op(
    "hypot",
    np.hypot,
    REAL,
    REAL,
    kinks=(
        Kink(
            ([0.0, 3.0, np.inf], [0.0, -4.0, 2.0]),
            (jacobian_diag(0, 0.6, 1), jacobian_diag(0, -0.8, 0)),
            why="no derivative at (0, 0): 0 to each (hypot(x, 0) = |x|, abs'(0) = 0); the limit at inf",
        ),
    ),
    kink_distance=np.hypot,
    doc="d/dx = x / hypot(x, y); 0 at (0, 0), as abs'(0) = 0",
)
deg2rad = elementwise_op(
    "deg2rad", np.deg2rad, Domain(-360.0, 360.0), numpy=(np.radians,), aliases=("radians",)
)
rad2deg = elementwise_op("rad2deg", np.rad2deg, REAL, numpy=(np.degrees,), aliases=("degrees",))
cbrt = elementwise_op(
    "cbrt",
    np.cbrt,
    NONZERO,
    kink_distance=np.abs,
    doc="derivative 1 / (3 cbrt(x)**2): +inf at 0 (a vertical tangent), so samples keep away from 0",
)


# --- steps, kinks and signs -----------------------------------------------------------
ceil = elementwise_op(
    "ceil",
    np.ceil,
    REAL,
    kinks=(Kink(([-1.0, 0.0, 2.0, 2.5],), (jacobian_diag(0, 0, 0, 0),), why="ceil' = 0, also at the jumps"),),
    kink_distance=distance_to_integer,
    doc="zero derivative",
)
fabs = elementwise_op(
    "fabs",
    np.fabs,
    NONZERO,
    kinks=(Kink(([-1.0, 0.0, 2.0],), (jacobian_diag(-1, 0, 1),), why="fabs'(0) = 0, as abs'(0)"),),
    kink_distance=np.abs,
    doc="fabs'(0) = 0, as abs'(0)",
)
copysign = elementwise_op(
    "copysign",
    np.copysign,
    NONZERO,
    NONZERO,
    kinks=(
        Kink(
            ([0.0, 1.5, -1.5, 2.0], [2.0, 0.0, 0.0, -1.0]),
            (jacobian_diag(0, 1, -1, -1), jacobian_diag(0, 0, 0, 0)),
            why="d/dx = sign(x) times y's sign, 0 at x = 0 as abs'(0); d/dy = 0, also at the jump y = 0",
        ),
    ),
    kink_distance=lambda x, y: np.minimum(np.abs(x), np.abs(y)),
    doc="|x| with y's sign: d/dx = sign(x) sign(y) (0 at x = 0, -0.0 counts as negative), d/dy = 0",
)
heaviside = elementwise_op(
    "heaviside",
    np.heaviside,
    NONZERO,
    Domain(0.0, 1.0),
    kinks=(
        Kink(
            ([-1.0, 0.0, 2.0], [0.5, 0.5, 0.5]),
            (jacobian_diag(0, 0, 0), jacobian_diag(0, 1, 0)),
            why="a step in x: 0, also at 0; d/dh = 1 where x = 0, since the value there is h",
        ),
    ),
    kink_distance=lambda x, h: np.abs(x) + 0 * np.asarray(h),
    doc="zero derivative in x (a step); the value at 0, h, has derivative 1 where x = 0, else 0",
)
_TIES_AND_NANS = ([1.5, np.nan, 2.0, np.nan, 1.0], [1.5, 2.0, np.nan, np.nan, 3.0])
fmax = elementwise_op(
    "fmax",
    np.fmax,
    REAL,
    REAL,
    kinks=(
        Kink(
            _TIES_AND_NANS,
            (jacobian_diag(0.5, 0, 1, 0.5, 0), jacobian_diag(0.5, 1, 0, 0.5, 1)),
            why="ties split 0.5/0.5 as maximum; a NaN is ignored, so the other input gets it all",
        ),
    ),
    kink_distance=lambda x, y: np.abs(np.subtract(x, y)),
    doc="as maximum, but a NaN input is ignored: the derivative flows to the other input",
)
fmin = elementwise_op(
    "fmin",
    np.fmin,
    REAL,
    REAL,
    kinks=(
        Kink(
            _TIES_AND_NANS,
            (jacobian_diag(0.5, 0, 1, 0.5, 1), jacobian_diag(0.5, 1, 0, 0.5, 0)),
            why="ties split 0.5/0.5 as minimum; a NaN is ignored, so the other input gets it all",
        ),
    ),
    kink_distance=lambda x, y: np.abs(np.subtract(x, y)),
    doc="as minimum, but a NaN input is ignored: the derivative flows to the other input",
)

# --- float_power, nan_to_num -------------------------------------------------------------
float_power = elementwise_op(
    "float_power",
    np.float_power,
    POSITIVE,
    REAL,
    accepts_complex=True,
    kinks=(
        Kink(
            ([0.0, 0.0, 2.0], [2.0, 3.0, 0.0]),
            (jacobian_diag(0, 0, 0), jacobian_diag(0, 0, np.log(2.0))),
            why="as power: at x = 0 < y, d/dy = 0 (0**y is 0 near y); at y = 0, d/dx = 0",
        ),
    ),
    doc="x**y computed in float64: float32 inputs give a float64 output; the rules are power's",
)
nan_to_num = elementwise_op(
    "nan_to_num",
    _nan_to_num,
    REAL,
    numpy=(np.nan_to_num,),
    # NaN and inf are not sampled (numeric refuses them): they are the kink
    samples=elementwise_samples(REAL, params=({}, {"nan": 1.0, "posinf": 5.0, "neginf": -5.0})),
    params=("copy", "nan", "posinf", "neginf"),
    kinks=(
        Kink(
            ([0.5, np.nan, np.inf, -np.inf],),
            (jacobian_diag(1, 0, 0, 0),),
            why="1 where x is finite, 0 where replaced",
        ),
    ),
    doc="derivative 1 where x is finite, 0 where a NaN or an infinity was replaced (always a copy)",
)
