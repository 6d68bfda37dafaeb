"""Every registered op's JVP against finite differences of its impl and against its VJP.

The forward rules (jvps.py) and the reverse rules (vjps.py) are two independent
derivations: <u, J v> computed from one must equal <J^T u, v> from the other.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import op_cases, report

from adcore.conformance import check_dtype_kept, check_jvp, check_vjp


@pytest.mark.parametrize("op, sample", op_cases(np.float64))
def test_jvp_matches_finite_differences_and_the_vjp(op, sample):
    failures = check_jvp(op, sample, backend="forward", against="reverse")
    assert failures == [], report(failures)


@pytest.mark.parametrize("op, sample", op_cases(np.float64))
def test_forward_jacobian_matches_finite_differences(op, sample):
    failures = check_vjp(op, sample, backend="forward")
    assert failures == [], report(failures)


@pytest.mark.parametrize("op, sample", op_cases(np.float32))
def test_float32_in_float32_out(op, sample):
    failures = check_dtype_kept(op, sample, backend="forward")
    assert failures == [], report(failures)


@pytest.mark.parametrize("op, sample", op_cases(np.float32))
def test_float32_jvp_is_loosely_right(op, sample):
    failures = check_jvp(op, sample, backend="forward", against="reverse")
    assert failures == [], report(failures)
