"""The sparsity rules of fftn, ifftn, rfftn and irfftn (rules/fft.py)."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_sparsity.extend import Unknown
from plugins.sparsity.rule_check import check_op, dense_pattern

import adcore

OPS = ("fftn", "ifftn", "rfftn", "irfftn")


def pattern(name: str, in_shape, **params) -> np.ndarray:
    op = adcore.plugins.get_registry().ops[name]
    out = np.shape(op.impl(np.zeros(in_shape), **params))
    rule = adcore.plugins.get_registry().rules["sparsity"][name]
    (dep,) = rule(Unknown(out, np.complex128), Unknown(in_shape, np.float64), **params)
    return dense_pattern(dep, int(np.prod(out)), int(np.prod(in_shape)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", OPS)
def test_rule_holds_at_the_op_samples(name, dtype):
    assert check_op(name, dtype=dtype) > 0


def test_irfftn_is_not_exact_and_the_others_are():
    rules = adcore.plugins.get_registry().rules["sparsity"]
    assert [rules[n].exact for n in OPS] == [True, True, True, False]
    assert all(rules[n].order == "linear" for n in OPS)


def test_fibres_off_the_transformed_axes_stay_apart():
    assert np.array_equal(
        pattern("fftn", (3, 4), axes=(1,)), np.kron(np.eye(3), np.ones((4, 4))).astype(bool)
    )
    assert np.array_equal(
        pattern("ifftn", (3, 4), axes=(0,)), np.kron(np.ones((3, 3)), np.eye(4)).astype(bool)
    )
    assert pattern("fftn", (2, 3, 4)).all()


def test_a_crop_reads_the_first_elements_and_a_pad_reads_them_all():
    p = pattern("fftn", (6,), s=(4,))
    assert p.shape == (4, 6) and p[:, :4].all() and not p[:, 4:].any()
    assert pattern("fftn", (3,), s=(8,)).all()


def test_real_transforms_halve_the_last_axis():
    assert pattern("rfftn", (8,)).shape == (5, 8)
    p = pattern("irfftn", (6,), s=(4,))  # reads 4 // 2 + 1 = 3 bins
    assert p.shape == (4, 6) and p[:, :3].all() and not p[:, 3:].any()


def test_irfftn_superset_of_a_jacobian_with_zeros():
    x = np.random.default_rng(3).standard_normal(5)
    jac = np.asarray(adcore.jacobian(lambda z: adcore.ops.irfftn(z), backend="reverse")(x))
    assert (np.abs(jac) < 1e-12).any()  # cos(2 pi k j / n) vanishes: the rule cannot be exact
    assert pattern("irfftn", (5,)).all()


def test_one_fibre_read_whole_is_dense_without_a_matrix():
    rule = adcore.plugins.get_registry().rules["sparsity"]["fftn"]
    assert rule(Unknown((10**5,), np.complex128), Unknown((10**5,), np.float64)) == ("dense",)
