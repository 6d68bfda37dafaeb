"""The scipy.special ops: what each computes and where the conformance checks draw its inputs.

Each impl calls SciPy through a LazyModule and each ufunc is named by a string in `numpy=`
("scipy.special.erf"), so defining the ops imports no SciPy: `scipy.special.erf(x)` on a traced
value runs the op once the user's code has imported scipy.special to call it.

An order that is an input of SciPy's ufunc (iv(v, x), yn(n, x)) or a shape parameter with no
closed-form derivative (betainc's a and b) is an input here too, as SciPy passes it; its rules
refuse with a MissingRuleError naming it (rules.py). The samples hold those inputs as Python
numbers, which the checks keep constant, and differentiate x.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adcore.errors import InvalidValueError
from adcore.extend import LazyModule
from adcore.spec import POSITIVE, REAL, UNARY_SHAPES, UNIT_OPEN, WIDE, Domain, Kink, OpSpec, Sample
from adcore.spec import elementwise_samples as _samples

special = LazyModule("scipy.special")

UNIT = Domain(0.05, 0.95)  # logit, betainc's x: inside (0, 1)


def _scipy(name: str) -> Any:
    """scipy.special.<name>, looked up when called (SciPy is imported by the first call); its value
    as SciPy gives it, dtype included (gammainc(1.5, float32 x) is float64, as SciPy's loop)."""

    def impl(*args: Any) -> Any:
        return getattr(special, name)(*args)

    impl.__name__ = impl.__qualname__ = name
    impl.__doc__ = f"scipy.special.{name}"
    return impl


def _ufunc(
    name: str, *domains: Domain, names: tuple[str, ...] = (), samples: Any = None, **spec: Any
) -> OpSpec:
    """The op of SciPy's ufunc `name` (more names of the same ufunc in `names`), elementwise."""
    return OpSpec(
        name,
        _scipy(name),
        nin=len(domains),
        numpy=tuple(f"scipy.special.{n}" for n in (name, *names)),
        samples=samples or _samples(*domains),
        elementwise=True,
        **spec,
    )


def order_samples(orders: tuple[float, ...], x: Domain, shapes: tuple = UNARY_SHAPES) -> Any:
    """Samples of an op of (order, x): each order a Python number (held constant), x drawn."""

    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [Sample((v, x.draw(rng, s, dtype))) for v in orders for s in shapes]

    return draw


def shape_samples(nshape: int, x: Domain) -> Any:
    """Samples of betainc(a, b, x) / gammainc(a, x): shape parameters as Python numbers, x drawn."""
    params = ((0.7, 2.5), (1.0, 1.0), (2.5, 1.5), (3.0, 0.6))

    def draw(rng: np.random.Generator, dtype: Any) -> list[Sample]:
        return [Sample((*p[:nshape], x.draw(rng, s, dtype))) for p in params for s in UNARY_SHAPES]

    return draw


# --- error functions ---------------------------------------------------------------
# holomorphic: complex z too, SciPy's complex erf's values, erf'(z) = 2/sqrt(pi) exp(-z^2) (docs/complex.md)
erf = _ufunc("erf", WIDE, accepts_complex=True)
erfc = _ufunc("erfc", WIDE, accepts_complex=True)
erfinv = _ufunc("erfinv", UNIT_OPEN)
erfcinv = _ufunc("erfcinv", Domain(0.1, 1.9))

# --- gamma and beta functions: poles at 0, -1, -2, ..., so drawn from (0.5, 3) -----------
gamma = _ufunc("gamma", POSITIVE)
gammaln = _ufunc("gammaln", POSITIVE, doc="log|Gamma(x)|")
digamma = _ufunc("digamma", POSITIVE, names=("psi",), doc="d gammaln / dx (scipy's psi is the same)")
rgamma = _ufunc(
    "rgamma",
    Domain(-3.5, 3.0),
    samples=lambda rng, dtype: (
        _samples(Domain(-3.5, 3.0))(rng, dtype) + [Sample((np.asarray([0.0, -1.0, -2.0, 1.5], dtype=dtype),))]
    ),
    doc="1 / Gamma(x), 0 at the poles of Gamma, where its derivative is (-1)**n n! at x = -n",
)


def _order(n: Any, name: str = "n") -> int:
    """An integer order, checked: a non-negative integer."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise InvalidValueError(
            f"op 'polygamma': its order {name} must be an integer >= 0 (0 is digamma, 1 trigamma, ...), got "
            f"{n!r}; adcore_scipy.special.polygamma(n, x) takes SciPy's order first"
        )
    return int(n)


def _polygamma(x: Any, n: int = 0) -> Any:
    # scipy.special.polygamma computes in float64 whatever x is; psi and zeta keep float32
    n = _order(n)
    if n == 0:
        return special.psi(x)
    return (-1) ** (n + 1) * math.gamma(n + 1) * special.zeta(n + 1, x)


polygamma = OpSpec(
    "polygamma",
    _polygamma,
    params=("n",),
    samples=_samples(POSITIVE, params=({}, {"n": 1}, {"n": 3})),
    elementwise=True,
    doc="polygamma(x, n=0): the n-th derivative of digamma (scipy's polygamma(n, x)); n is static",
)
beta = _ufunc("beta", POSITIVE, POSITIVE)
betaln = _ufunc("betaln", POSITIVE, POSITIVE, doc="log|B(a, b)|, as scipy computes it (no cancellation)")
betainc = _ufunc(
    "betainc",
    POSITIVE,
    POSITIVE,
    UNIT,
    samples=shape_samples(2, UNIT),
    doc="the regularized incomplete beta function I_x(a, b); no derivative in a or b (refused)",
)
gammainc = _ufunc(
    "gammainc",
    POSITIVE,
    POSITIVE,
    samples=shape_samples(1, POSITIVE),
    doc="the regularized lower incomplete gamma P(a, x); no derivative in a (refused)",
)
gammaincc = _ufunc(
    "gammaincc",
    POSITIVE,
    POSITIVE,
    samples=shape_samples(1, POSITIVE),
    doc="the regularized upper incomplete gamma Q(a, x) = 1 - P(a, x); no derivative in a (refused)",
)

# --- logistic: SciPy's own, so a traced call's value is scipy.special.expit's bit for bit -----------
expit = _ufunc(
    "expit",
    REAL,
    samples=lambda rng, dtype: (
        _samples(REAL)(rng, dtype) + [Sample((np.asarray([-40.0, -15.0, 15.0, 40.0], dtype=dtype),))]
    ),
    doc="the logistic sigmoid 1 / (1 + exp(-x)); d/dx = expit(x) expit(-x): finite at +-1e3",
)
logit = _ufunc("logit", UNIT, doc="log(x / (1 - x)), the inverse of expit; d/dx = 1 / (x (1 - x))")

# --- x log y: 0 at x = 0, with the derivative in y 0 there ---------------------------------
_XLOG_KINK_WHY = "at x = 0 the value is 0 for every y, so d/dy = 0; d/dx = log(y) (log1p(y)) as elsewhere"
xlogy = _ufunc(
    "xlogy",
    REAL,
    POSITIVE,
    kinks=(
        Kink(
            ([0.0, 0.0, 2.0], [2.0, 0.5, 3.0]),
            (np.diag([math.log(2.0), math.log(0.5), math.log(3.0)]), np.diag([0.0, 0.0, 2.0 / 3.0])),
            why=_XLOG_KINK_WHY,
        ),
    ),
    doc="x * log(y), 0 where x = 0 (also at y = 0); d/dy = x / y, 0 where x = 0",
)
xlog1py = _ufunc(
    "xlog1py",
    REAL,
    Domain(-0.5, 2.0),
    kinks=(
        Kink(
            ([0.0, 0.0, 2.0], [1.0, -0.5, 2.0]),
            (np.diag([math.log(2.0), math.log(0.5), math.log(3.0)]), np.diag([0.0, 0.0, 2.0 / 3.0])),
            why=_XLOG_KINK_WHY,
        ),
    ),
    doc="x * log1p(y), 0 where x = 0 (also at y = -1); d/dy = x / (1 + y), 0 where x = 0",
)

# --- Bessel functions -------------------------------------------------------------------
i0 = _ufunc("i0", REAL)
i1 = _ufunc("i1", REAL)
j0 = _ufunc("j0", WIDE)
j1 = _ufunc("j1", WIDE)
y0 = _ufunc("y0", POSITIVE)
y1 = _ufunc("y1", POSITIVE)
iv = _ufunc(
    "iv",
    REAL,
    POSITIVE,
    samples=order_samples((0.0, 1.0, 2.5, -0.5), POSITIVE),
    doc="modified Bessel I_v(x); d/dx = (I_{v-1} + I_{v+1}) / 2; no derivative in v (refused)",
)
ive = _ufunc(
    "ive",
    REAL,
    POSITIVE,
    samples=order_samples((0.0, 1.0, 2.5), POSITIVE),
    doc="exp(-|x|) I_v(x); no derivative in v (refused)",
)
jv = _ufunc(
    "jv",
    REAL,
    POSITIVE,
    names=("jn",),  # scipy.special.jn is jv
    samples=order_samples((0.0, 1.0, 2.0, 1.5), POSITIVE),
    doc="Bessel J_v(x) (scipy's jn is jv); d/dx = (J_{v-1} - J_{v+1}) / 2; no derivative in v (refused)",
)
yn = _ufunc(
    "yn",
    REAL,
    POSITIVE,
    samples=order_samples((0, 1, 2), POSITIVE),
    doc="Bessel Y_n(x) of integer order n; d/dx = (Y_{n-1} - Y_{n+1}) / 2; n has no derivative (refused)",
)

OPS: tuple[OpSpec, ...] = (
    erf,
    erfc,
    erfinv,
    erfcinv,
    gamma,
    gammaln,
    digamma,
    rgamma,
    polygamma,
    beta,
    betaln,
    betainc,
    gammainc,
    gammaincc,
    expit,
    logit,
    xlogy,
    xlog1py,
    i0,
    i1,
    j0,
    j1,
    y0,
    y1,
    iv,
    ive,
    jv,
    yn,
)
