"""JVP rules of the special ops: the "jvp" table the forward backend needs.

Each entry maps an op name to a tuple with one rule per input of the op:

    rule(t, ans, *inputs, **params) -> that input's share of the output's tangent

`t` is the input's tangent with a leading batch axis, shape (B,) + input.shape (B
tangent directions at once); `ans` and `inputs` have no batch axis; `params` are as the
caller passed them. The share must broadcast to (B,) + ans.shape: for an elementwise
unary op `t * f'(x)` does, and powm1 `lift`s its tangent so that the input's axes
sit under the output's. The shares of the inputs are summed. Rules are written with
adcore ops, so forward-over-reverse Hessians and forward-over-forward work.
"""

from __future__ import annotations

from typing import Any

from adcore.extend import lift, power_by_base, power_by_exponent
from adcore_special.ops import psi
from adcore_special.vjps import erfcx_slope, loggamma_slope

# fmt: off
JVPS: dict[str, tuple[Any, ...]] = {
    "erfcx":     (lambda t, ans, x: t * erfcx_slope(x, ans),),
    "loggamma":  (lambda t, ans, x: t * loggamma_slope(x),),
    "psi":       (lambda t, ans, x, n=0: t * psi(x, n=n + 1),),
    "powm1":     (lambda t, ans, x, y: lift(t, ans) * power_by_base(x, y),
                  lambda t, ans, x, y: lift(t, ans) * power_by_exponent(x, y, ans + 1)),
}
# fmt: on
