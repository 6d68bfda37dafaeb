"""The built-in composite cases: the seeds' worked examples, an MLP loss, softmax cross-entropy,
a chain of 100 ops and broadcasting, each checked on every backend like an op.

Each case is named after its function and described by its docstring. Samples stay small (at
most 30 elements per argument): the symbolic backend traces one symbol per element of a function
that is not elementwise, and the engine builds dense Jacobians. Data a case is not differentiated
with respect to (inputs, labels) are trailing positional arguments, outside its argnums.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import adcore.numpy as anp
from adcore.conformance.numpy_function_cases import NUMPY_FUNCTION_CASES
from adcore.spec import POSITIVE, REAL, Case, Domain, Sample, SampleFn

WEIGHTS = Domain(-1.0, 1.0)  # keeps tanh and softmax away from saturation
RELU_KINK_GAP = 0.1  # relu inputs are drawn at least this far from 0, far beyond any difference step
WEIGHT_DECAY = 0.01  # seed 002 §3.4 leaves the regularisation coefficient free


def _case(fn: Callable[..., Any], samples: SampleFn, argnums: tuple[int, ...] = (0,)) -> Case:
    return Case(fn.__name__, fn, samples, argnums, fn.__doc__ or "")


def _unary(domain: Domain, *shapes: tuple[int, ...]) -> SampleFn:
    """One sample per shape, values from `domain`."""

    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [Sample((domain.draw(rng, shape, dtype),)) for shape in shapes]

    return draw


def _pairs(*shape_pairs: tuple[tuple[int, ...], tuple[int, ...]]) -> SampleFn:
    """One sample per pair of shapes, values from REAL."""

    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [Sample((REAL.draw(rng, a, dtype), REAL.draw(rng, b, dtype))) for a, b in shape_pairs]

    return draw


def _one_hot(rng: np.random.Generator, batch: int, classes: int, dtype: Any) -> np.ndarray:
    return np.eye(classes, dtype=dtype)[rng.integers(0, classes, size=batch)]


# --- the seeds' worked examples ----------------------------------------------------------------


def seed_example(x1: Any, x2: Any) -> Any:
    """Seeds 001 (自动微分) and 004: ln x1 + x1 x2 - sin x2, gradient (5.5, 2 - cos 5) at (2, 5)."""
    return anp.log(x1) + x1 * x2 - anp.sin(x2)


def _seed_example_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return [
        Sample((np.asarray(2.0, dtype), np.asarray(5.0, dtype))),  # the seeds' point
        Sample((POSITIVE.draw(rng, (3,), dtype), REAL.draw(rng, (3,), dtype))),
        Sample((POSITIVE.draw(rng, (2, 3), dtype), REAL.draw(rng, (3,), dtype))),
    ]


def seed_tape(a: Any, b: Any) -> Any:
    """Seed 003 (应用示例): (a b)^2, whose tape gives a.grad 500, b.grad 1000 at (10, 5)."""
    return (a * b) ** 2


def _seed_tape_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return [
        Sample((np.asarray(10.0, dtype), np.asarray(5.0, dtype))),  # the seed's point
        Sample((REAL.draw(rng, (3,), dtype), REAL.draw(rng, (3,), dtype))),
    ]


def seed_sigmoid(x: Any) -> Any:
    """Seed 001 (Sigmoid算子): y / (1 + y) with y = e^x, whose derivative is z (1 - z)."""
    y = anp.exp(x)
    return y / (1 + y)


def seed_softmax(x: Any) -> Any:
    """Seed 001 (Softmax算子): e^(x - max x) / sum e^(x - max x) over the last axis."""
    e = anp.exp(x - anp.max(x, axis=-1, keepdims=True))
    return e / anp.sum(e, axis=-1, keepdims=True)


def seed_relu_net(w1: Any, w2: Any, x: Any, labels: Any) -> Any:
    """Seed 002 (3.4 应用): relu(x w1) w2 without biases, cross-entropy plus weight decay."""
    logits = anp.relu(x @ w1) @ w2
    cross_entropy = -anp.mean(anp.sum(labels * anp.log_softmax(logits, axis=-1), axis=-1))
    return cross_entropy + WEIGHT_DECAY * (anp.sum(w1 * w1) + anp.sum(w2 * w2))


def _relu_net_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    batch, features, hidden, classes = 4, 3, 4, 3
    for _ in range(1000):  # redraw until no hidden unit sits near relu's kink (1 draw in 9 does)
        x = WEIGHTS.draw(rng, (batch, features), dtype)
        w1 = WEIGHTS.draw(rng, (features, hidden), dtype)
        if np.min(np.abs(x @ w1)) >= RELU_KINK_GAP:
            break
    else:
        raise RuntimeError("seed_relu_net: no weights drawn keep relu's inputs away from its kink")
    w2 = WEIGHTS.draw(rng, (hidden, classes), dtype)
    return [Sample((w1, w2, x, _one_hot(rng, batch, classes, dtype)))]


# --- small networks and losses -------------------------------------------------------------------


def mlp_loss(w1: Any, b1: Any, w2: Any, b2: Any, x: Any, targets: Any) -> Any:
    """A two-layer tanh MLP's mean squared error: mean((tanh(x w1 + b1) w2 + b2 - targets)^2)."""
    hidden = anp.tanh(x @ w1 + b1)
    return anp.mean(anp.square(hidden @ w2 + b2 - targets))


def _mlp_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    batch, inputs, hidden, outputs = 4, 3, 5, 2
    shapes = ((inputs, hidden), (hidden,), (hidden, outputs), (outputs,), (batch, inputs), (batch, outputs))
    return [Sample(tuple(WEIGHTS.draw(rng, shape, dtype) for shape in shapes))]


def softmax_cross_entropy(logits: Any, labels: Any) -> Any:
    """-sum(labels * log_softmax(logits)) / batch, with gradient (softmax(logits) - labels) / batch."""
    return -anp.sum(labels * anp.log_softmax(logits, axis=-1)) / logits.shape[0]


def _cross_entropy_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return [
        Sample((REAL.draw(rng, (batch, classes), dtype), _one_hot(rng, batch, classes, dtype)))
        for batch, classes in ((1, 3), (4, 5))
    ]


# --- a long chain ------------------------------------------------------------------------------------

# One pass maps 0 to 0 with derivative -1 there (the 4 undoes sigmoid's 1/4, log1p undoes expm1)
# and pulls other values slowly towards 0, so ten passes neither blow up nor vanish: values stay
# in [-1, 1] and derivatives at most 1 in size. (sinh or tan would balance the pull, but make the
# symbolic backend take tens of seconds.)
CHAIN_CYCLE: tuple[Callable[[Any], Any], ...] = (
    anp.sin,
    anp.tanh,
    anp.sigmoid,
    lambda v: v * 4.0,
    lambda v: v - 2.0,
    anp.expm1,
    anp.log1p,
    anp.negative,
    anp.arctan,
    anp.negative,
)
CHAIN_LENGTH = 100


def chain_100(x: Any) -> Any:
    """100 elementwise ops in a row: ten times sin, tanh, sigmoid, *4, -2, expm1, log1p, -, arctan, -."""
    for step in range(CHAIN_LENGTH):
        x = CHAIN_CYCLE[step % len(CHAIN_CYCLE)](x)
    return x


# --- broadcasting (seed 001, 张量广播规律) -----------------------------------------------------------


def broadcast_add(a: Any, b: Any) -> Any:
    """Seed 001 (元素级运算): a 2x1 plus b 2x2; a's gradient sums over the broadcast axis."""
    return a + b


def broadcast_multiply(a: Any, b: Any) -> Any:
    """Seed 001 (元素级运算): a * b with a broadcast, 2x1 with 2x2 and 3 with 2x3."""
    return a * b


def broadcast_sum(a: Any, b: Any) -> Any:
    """sin(a) * b summed over axis 0, an axis that a is broadcast along."""
    return anp.sum(anp.sin(a) * b, axis=0)


def broadcast_matmul(a: Any, b: Any) -> Any:
    """Seed 001 (矩阵级运算): tanh(a @ b), batch dimensions broadcast: 2x1 @ 4x1x3, 2x1x2x3 @ 3x3x2."""
    return anp.tanh(a @ b)


# --- where a rule divides by the input (issue 15, class 4) ------------------------------------------


def polynomial_at_zero(x: Any) -> Any:
    """1 + 2x + 3x**2 + 4x**3 as a sum of x**k, summed over x: derivative 2 at x = 0."""
    # the rules of x**0.0 and x**1.0 divide by x there (0 * inf) unless they know the limit
    return anp.sum(1.0 * x**0.0 + 2.0 * x**1.0 + 3.0 * x**2.0 + 4.0 * x**3.0)


def _polynomial_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return [Sample((np.array(0.0, dtype=dtype),)), Sample((np.array([0.0, -1.2, 0.7], dtype=dtype),))]


# --- the where trap (issue 15, class 13) ------------------------------------------------------------


# Where a branch is not taken it is nan (sqrt(-1.5), arcsin(2)) and so is its own derivative, which
# must not leak (0 * nan): the derivative is the taken branch's, 0 there. Sampled away from 0 and ±1,
# so every point has a neighbourhood on one side of each condition and numeric differences agree.
def where_untaken_nan(x: Any) -> Any:
    """sqrt(x) where x > 0 plus arcsin(x) where |x| < 1 (else 0), summed, at points a branch is nan."""
    return anp.sum(anp.where(x > 0, anp.sqrt(x), 0.0) + anp.where(anp.abs(x) < 1, anp.arcsin(x), 0.0))


def _where_untaken_nan_samples(rng: np.random.Generator, dtype: Any) -> list[Sample]:
    return [
        Sample((np.array(-1.5, dtype=dtype),)),
        Sample((np.array([-1.5, -0.5, 0.5, 2.0], dtype=dtype),)),
        Sample((np.array([[2.5, 0.25], [-0.75, -3.0]], dtype=dtype),)),
    ]


BUILTIN_CASES: tuple[Case, ...] = (
    _case(seed_example, _seed_example_samples, (0, 1)),
    _case(seed_tape, _seed_tape_samples, (0, 1)),
    _case(seed_sigmoid, _unary(Domain(-4.0, 4.0), (), (5,), (2, 3))),
    _case(seed_softmax, _unary(REAL, (4,), (2, 4))),
    _case(seed_relu_net, _relu_net_samples, (0, 1)),
    _case(mlp_loss, _mlp_samples, (0, 1, 2, 3)),
    _case(softmax_cross_entropy, _cross_entropy_samples),
    _case(chain_100, _unary(REAL, (2,))),
    _case(broadcast_add, _pairs(((2, 1), (2, 2))), (0, 1)),
    _case(broadcast_multiply, _pairs(((2, 1), (2, 2)), ((3,), (2, 3))), (0, 1)),
    _case(broadcast_sum, _pairs(((3,), (4, 3)), ((1, 3), (2, 4, 3))), (0, 1)),
    _case(broadcast_matmul, _pairs(((2, 1), (4, 1, 3)), ((2, 1, 2, 3), (3, 3, 2))), (0, 1)),
    _case(polynomial_at_zero, _polynomial_samples),
    _case(where_untaken_nan, _where_untaken_nan_samples),
    *NUMPY_FUNCTION_CASES,
)
