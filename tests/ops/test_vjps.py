"""Every registered op's VJP against finite differences of its impl: a new op is checked with no new test."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import op_cases, report

from adcore.conformance import check_dtype_kept, check_vjp


@pytest.mark.parametrize("op, sample", op_cases(np.float64))
def test_vjp_matches_finite_differences(op, sample):
    failures = check_vjp(op, sample, backend="reverse")
    assert failures == [], report(failures)


@pytest.mark.parametrize("op, sample", op_cases(np.float32))
def test_float32_in_float32_out(op, sample):
    failures = check_dtype_kept(op, sample, backend="reverse")
    assert failures == [], report(failures)


@pytest.mark.parametrize("op, sample", op_cases(np.float32))
def test_float32_vjp_is_loosely_right(op, sample):
    failures = check_vjp(op, sample, backend="reverse")
    assert failures == [], report(failures)
