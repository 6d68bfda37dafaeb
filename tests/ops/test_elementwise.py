"""The ops flagged `elementwise` really are: each output element is the op on the inputs'
elements at the same broadcast position. The symbolic backend relies on the flag to trace
one scalar for a whole array."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import op_cases

ELEMENTWISE_CASES = [case for case in op_cases(np.float64) if case.values[0].elementwise]


def test_the_catalogue_flags_the_elementwise_ops():
    flagged = {case.values[0].name for case in ELEMENTWISE_CASES}
    assert {"sin", "add", "where", "clip", "relu", "sigmoid", "round"} <= flagged
    assert not flagged & {"sum", "softmax", "matmul", "getitem", "logsumexp"}


@pytest.mark.parametrize("op, sample", ELEMENTWISE_CASES)
def test_each_output_element_is_the_op_on_the_elements_at_its_position(op, sample):
    whole = np.asarray(op.impl(*sample.args, **sample.params))
    shape = np.broadcast_shapes(*(np.shape(a) for a in sample.args))
    assert whole.shape == shape
    spread = [np.broadcast_to(a, shape) for a in sample.args]
    for index in np.ndindex(shape):
        alone = op.impl(*(a[index] for a in spread), **sample.params)
        assert np.array_equal(alone, whole[index], equal_nan=True), (op.name, index)
