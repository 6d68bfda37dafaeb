"""The sparsity rules of eig_packed and eigvals (rules/eig.py)."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.extend import Unknown
from plugins.sparsity.rule_check import check_op, dense_pattern

import adcore


def rule(name: str):
    return adcore.plugins.get_registry().rules["sparsity"][name]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["eig_packed", "eigvals"])
def test_rule_holds_at_the_op_samples(name, dtype):
    assert check_op(name, dtype=dtype) > 0


def test_a_stack_of_matrices_is_block_diagonal():
    (dep,) = rule("eigvals")(Unknown((2, 3), np.complex128), Unknown((2, 3, 3), np.float64))
    assert np.array_equal(dense_pattern(dep, 6, 18), np.kron(np.eye(2), np.ones((3, 9))).astype(bool))


def test_the_eigenvector_of_a_1x1_matrix_is_constant():
    (dep,) = rule("eig_packed")(Unknown((2, 2, 1), np.complex128), Unknown((2, 1, 1), np.float64))
    p = dense_pattern(dep, 4, 2)
    assert p[[0, 2]].tolist() == [[True, False], [False, True]] and not p[[1, 3]].any()
