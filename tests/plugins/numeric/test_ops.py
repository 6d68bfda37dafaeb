"""Every registered op's NumPy impl, differentiated by finite differences alone, agrees with
the reverse backend's rules within the numeric backend's own error estimate.

This is the numeric backend's promise: it needs no rules, so it checks everyone else's.
The estimate must also be small (it would bound anything if it were huge), and ops whose
samples sit on a kink are drawn away from it by their sample domains.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import float_inputs, has_differentiable_inputs, op_cases

import adcore
from adcore.errors import MissingRuleError

# odeint's impl is an adaptive solve: a finite difference of it sees the step-size controller (6.7e-11
# off the adjoint's derivative of the ODE, solved to 1e-10, for a bar of 1.5e-12), so its rules are
# proved against closed forms instead (tests/plugins/scipy/test_integrate.py) and by conformance.
ADAPTIVE = {"odeint"}
CASES = [
    case
    for case in op_cases(np.float64)
    if has_differentiable_inputs(case.values[0]) and case.values[0].name not in ADAPTIVE
]
# LAPACK's iterative eigen and singular value solvers round in jumps as their input moves, not as
# the smooth noise ECnoise measures: numeric's bar on svd's vectors was 1.9 times too narrow (2.4e-13
# off for a bar of 1.3e-13, reverse agreeing with a 40-digit difference to 5e-16). Their bar is
# held to within this factor; every other op's to its own bar.
ITERATIVE_SOLVER_SLACK = {"svd_packed": 4.0, "eigh_packed": 4.0, "eigvalsh": 4.0, "svdvals": 4.0}


@pytest.mark.parametrize("op, sample", CASES)
def test_numeric_on_the_impl_agrees_with_reverse_within_its_estimate(op, sample):
    args, params = list(sample.args), sample.params
    for i in float_inputs(op, sample):

        def impl(x, i=i):
            return op.impl(*args[:i], x, *args[i + 1 :], **params)

        def through_ops(x, i=i):
            return op(*args[:i], x, *args[i + 1 :], **params)

        numeric, error = adcore.jacobian(impl, backend="numeric", method="richardson", return_error=True)(
            args[i]
        )
        try:
            reverse = adcore.jacobian(through_ops, backend="reverse")(args[i])
        except MissingRuleError as refusal:  # an argument with no closed-form derivative (jv's order)
            assert "argument" in str(refusal) and "numeric" in str(refusal)
            continue  # the rules refuse it by name; numeric's estimate of it has nothing to check against
        assert numeric.shape == reverse.shape == error.shape
        gap = np.abs(numeric - reverse)
        worst = np.unravel_index(np.argmax(gap - error), gap.shape) if gap.size else ()
        assert np.all(gap <= error * ITERATIVE_SOLVER_SLACK.get(op.name, 1.0)), (
            f"{op.name} input {i}: |numeric - reverse| {gap[worst]} > estimate {error[worst]}"
        )
        # the bar is small: 1e-7 relative where input and output are float64 (astype's cross-dtype
        # samples step or round in float32)
        in_float64 = (
            np.result_type(args[i], impl(args[i])) == np.float64 and np.result_type(args[i]) == np.float64
        )
        loose = 1e-7 if in_float64 else 1e-3
        assert np.all(error <= loose * (1 + np.abs(reverse))), f"{op.name} input {i}: estimate too loose"
