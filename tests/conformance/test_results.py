"""A cell's relative error: one number, from the comparison that decides the verdict (docs/conformance.md)."""

from __future__ import annotations

import numpy as np
import pytest

from adcore.conformance.results import Cell, Tally, Worst, compare, merge
from adcore.conformance.tolerances import Tolerance

LOOSE = Tolerance(rtol=1e-2, atol=1e-4)


def _tally(actual, expected, tolerance=LOOSE, **kw) -> Tally:
    tally = Tally()
    compare(tally, "#0", "jacobian", np.asarray(actual), np.asarray(expected, dtype=float), tolerance, **kw)
    return tally


def test_the_worst_entry_is_the_one_furthest_out_of_tolerance_not_the_largest_difference():
    # allowed: 1e-2 |r| + 1e-4 * 100, i.e. 1.01 for 100 and 0.02 for 1; entry 0 differs by 1.0
    # (within), entry 1 by 0.1 (five times out): the verdict is entry 1's, and so are the numbers
    tally = _tally([101.0, 1.1], [100.0, 1.0])
    worst = tally.worst
    assert tally.worst_ratio == pytest.approx(5.0)
    assert worst.detail.startswith("at (1,): got 1.1")
    assert worst.abs_error == pytest.approx(0.1)
    assert worst.rel_error == pytest.approx(0.1 / 100)  # relative to the reference's largest |entry|
    assert worst.tolerance == pytest.approx(0.02 / 100)  # its allowed difference, in the same units
    assert worst.ratio == pytest.approx(tally.worst_ratio)
    assert worst.figure() == "1.0e-03"
    assert worst.error_text() == "rel 1.0e-03 > tol 2.0e-04 (abs 1.0e-01)"
    assert tally.cell("f", "reverse", "float64").status == "disagrees"


def test_a_comparison_within_tolerance_says_so_with_the_same_numbers():
    tally = _tally([100.5, 1.0], [100.0, 1.0])
    assert tally.worst.error_text() == "rel 5.0e-03 ≤ tol 1.0e-02 (abs 5.0e-01)"
    assert tally.cell("f", "reverse", "float64").status == "agrees"


def test_against_a_zero_reference_the_relative_error_is_the_absolute_one():
    worst = _tally([0.0, 0.3], [0.0, 0.0]).worst
    assert worst.rel_error == worst.abs_error == pytest.approx(0.3)


def test_a_dot_product_is_relative_to_the_sum_of_its_terms_sizes():
    # <u, J v> = 0.01 from terms of size 4: (rtol + atol) * 4 + atol allowed, 4 the size
    worst = _tally(0.51, 0.01, scale=4.0).worst
    assert worst.rel_error == pytest.approx(0.5 / 4)
    assert worst.tolerance == pytest.approx(((1e-2 + 1e-4) * 4 + 1e-4) / 4)


def test_the_merged_cell_is_the_dtype_furthest_out_of_tolerance_with_its_own_numbers():
    # float32 has the larger relative error but is allowed far more: float64 is the worse
    f64 = Cell("sin", "reverse", "float64", "disagrees", 3, Worst("#1", "jacobian", 1e-6, 1e-6, 2e-9, ""))
    f32 = Cell("sin", "reverse", "float32", "disagrees", 3, Worst("#1", "jacobian", 5e-3, 5e-3, 2e-3, ""))
    merged = merge([f32, f64])
    assert merged.worst is f64.worst and merged.rel_error == 1e-6
    assert merged.dtype == "float32/float64" and merged.checks == 6


def test_a_wrong_dtype_has_no_number_and_says_so():
    worst = Worst("#0", "dtype", 0.0, 0.0, 0.0, "input 0 is float32, its derivative float64")
    assert worst.ratio > 1 and worst.figure() == "dtype" and worst.error_text() == ""


def test_an_infinite_reference_entry_does_not_let_the_finite_ones_pass_anything():
    # log' at 0 is inf and agrees; entry 1 is 0.5 off a reference of 1: it must fail, not be
    # allowed atol * inf because the Jacobian holds an infinity
    tally = _tally([np.inf, 1.5], [np.inf, 1.0])
    assert tally.worst.detail.startswith("at (1,): got 1.5")
    assert tally.worst_ratio > 1
    assert _tally([np.inf, 1.0 + 1e-6], [np.inf, 1.0]).worst_ratio <= 1
