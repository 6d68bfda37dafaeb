"""Elementwise ops: arithmetic, powers, exp/log, trigonometry, kinks, clip and where."""

from __future__ import annotations

import numpy as np

from adcore.spec import NONZERO, POSITIVE, REAL, UNIT_OPEN, Domain, OpSpec, Sample, elementwise_samples


def _unary(name: str, impl, domain: Domain = REAL, doc: str = "") -> OpSpec:
    return OpSpec(
        name, impl, nin=1, numpy=(impl,), samples=elementwise_samples(domain), elementwise=True, doc=doc
    )


def _binary(name: str, impl, x: Domain = REAL, y: Domain = REAL, **spec) -> OpSpec:
    return OpSpec(
        name, impl, nin=2, numpy=(impl,), samples=elementwise_samples(x, y), elementwise=True, **spec
    )


# --- arithmetic -------------------------------------------------------------------
negative = _unary("negative", np.negative)
add = _binary("add", np.add)
subtract = _binary("subtract", np.subtract)
multiply = _binary("multiply", np.multiply)
divide = _binary("divide", np.divide, y=NONZERO, aliases=("true_divide",))  # np.true_divide is np.divide
power = _binary("power", np.power, x=POSITIVE)
square = _unary("square", np.square)
reciprocal = _unary("reciprocal", np.reciprocal, NONZERO)
sqrt = _unary("sqrt", np.sqrt, POSITIVE)

# --- exponentials and logarithms ----------------------------------------------------
exp = _unary("exp", np.exp)
expm1 = _unary("expm1", np.expm1)
log = _unary("log", np.log, POSITIVE)
log1p = _unary("log1p", np.log1p, Domain(-0.5, 2.0))

# --- trigonometric and hyperbolic -------------------------------------------------
sin = _unary("sin", np.sin)
cos = _unary("cos", np.cos)
tan = _unary("tan", np.tan, Domain(-1.2, 1.2))
arcsin = _unary("arcsin", np.arcsin, UNIT_OPEN)
arccos = _unary("arccos", np.arccos, UNIT_OPEN)
arctan = _unary("arctan", np.arctan)
arctan2 = _binary("arctan2", np.arctan2, y=NONZERO)
sinh = _unary("sinh", np.sinh)
cosh = _unary("cosh", np.cosh)
tanh = _unary("tanh", np.tanh)

# --- kinks and steps: conventions in docs/conventions.md -----------------------------
abs = _unary("abs", np.absolute, NONZERO, doc="abs'(0) = 0")
sign = _unary("sign", np.sign, NONZERO, doc="zero derivative")
floor = _unary("floor", np.floor, doc="zero derivative")
round = OpSpec(
    "round",
    np.round,
    params=("decimals",),
    numpy=(np.round,),
    samples=elementwise_samples(REAL),
    elementwise=True,
    doc="zero derivative",
)
maximum = _binary("maximum", np.maximum)
minimum = _binary("minimum", np.minimum)
clip = OpSpec(
    "clip",
    np.clip,
    params=("a_min", "a_max"),
    numpy=(np.clip,),
    samples=elementwise_samples(REAL, params=({"a_min": -1.0, "a_max": 1.0}, {"a_min": None, "a_max": 0.5})),
    elementwise=True,
    doc="derivative 1 on [a_min, a_max] (bounds included), 0 outside",
)


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
)
