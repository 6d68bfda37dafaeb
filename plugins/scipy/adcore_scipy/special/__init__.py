"""`scipy.special`'s functions, differentiable: the same names and signatures as SciPy's.

The ufuncs are adcore ops, so `scipy.special.erf(x)` on a traced value is differentiable as
written; `adcore_scipy.special.erf(x)` is the same op. The functions that are not ufuncs
(logsumexp, softmax, log_softmax, multigammaln, polygamma) are differentiable only as called
from here. Orders (polygamma's n, yn's n, multigammaln's d) have no derivative; the derivatives
SciPy has no closed form for (betainc in a and b, gammainc/gammaincc in a, iv/ive/jv in v) raise
a MissingRuleError naming the argument.
"""

from __future__ import annotations

from adcore_scipy.special.functions import log_softmax, logsumexp, multigammaln, polygamma, psi, softmax
from adcore_scipy.special.ops import (
    beta,
    betainc,
    betaln,
    digamma,
    erf,
    erfc,
    erfcinv,
    erfinv,
    expit,
    gamma,
    gammainc,
    gammaincc,
    gammaln,
    i0,
    i1,
    iv,
    ive,
    j0,
    j1,
    jv,
    logit,
    rgamma,
    xlog1py,
    xlogy,
    y0,
    y1,
    yn,
)

jn = jv  # scipy.special.jn is jv

__all__ = [
    "beta",
    "betainc",
    "betaln",
    "digamma",
    "erf",
    "erfc",
    "erfcinv",
    "erfinv",
    "expit",
    "gamma",
    "gammainc",
    "gammaincc",
    "gammaln",
    "i0",
    "i1",
    "iv",
    "ive",
    "j0",
    "j1",
    "jn",
    "jv",
    "log_softmax",
    "logit",
    "logsumexp",
    "multigammaln",
    "polygamma",
    "psi",
    "rgamma",
    "softmax",
    "xlog1py",
    "xlogy",
    "y0",
    "y1",
    "yn",
]
