"""A misspelled keyword of custom_vjp, custom_jvp and the sparse entry points is refused with 'did you
mean', as grad's is (issue 32, class 10), and the next call with the right keyword works."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
from adcore.errors import AdcoreError


def _scaled(x, c):
    return c * np.sin(x)


def _scaled_fwd(x, c):
    return c * np.sin(x), np.cos(x)


def _scaled_bwd(c, cos_x, g):
    return (c * cos_x * g,)


@pytest.mark.parametrize("custom", [adcore.custom_vjp, adcore.custom_jvp])
def test_a_custom_rules_misspelled_keyword_says_did_you_mean(custom):
    name = custom.__name__
    with pytest.raises(
        AdcoreError, match=rf"adcore\.{name} has no keyword 'nondiff_argnum': did you mean 'nondiff_argnums'"
    ) as caught:
        custom(_scaled, nondiff_argnum=(1,))
    assert isinstance(caught.value, TypeError)
    f = custom(_scaled, nondiff_argnums=(1,))
    if custom is adcore.custom_vjp:
        f.defvjp(_scaled_fwd, _scaled_bwd)
    else:
        f.defjvp(lambda c, primals, tangents: (c * np.sin(primals[0]), c * np.cos(primals[0]) * tangents[0]))
    # the next call works: d/dx 3 sin(x) = 3 cos(x)
    np.testing.assert_allclose(adcore.grad(f)(0.5, 3.0), 3.0 * np.cos(0.5), rtol=1e-12)


def _chain(x):
    return np.sum(x[1:] * x[:-1])


CHAIN_HESSIAN = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (lambda **kw: adcore.jacobian_sparsity(np.sin, **kw)(np.ones(3)), np.eye(3)),
        (lambda **kw: adcore.hessian_sparsity(_chain, **kw)(np.ones(3)), CHAIN_HESSIAN),
        (lambda **kw: adcore.prepare_jacobian(np.sin, np.ones(3), **kw)(np.ones(3)), np.cos(1.0) * np.eye(3)),
        (lambda **kw: adcore.prepare_hessian(_chain, np.ones(3), **kw)(np.ones(3)), CHAIN_HESSIAN),
    ],
    ids=["jacobian_sparsity", "hessian_sparsity", "prepare_jacobian", "prepare_hessian"],
)
def test_a_sparse_entry_points_misspelled_keyword_says_did_you_mean(entry, expected):
    with pytest.raises(AdcoreError, match=r"has no keyword 'argnum': did you mean 'argnums'") as caught:
        entry(argnum=0)
    assert isinstance(caught.value, TypeError)
    # the next call works, with the keyword spelled right
    out = entry(argnums=0)
    dense = out.toarray() if hasattr(out, "toarray") else np.asarray(out)
    np.testing.assert_allclose(dense.astype(float), expected, rtol=1e-12)  # patterns: bool
