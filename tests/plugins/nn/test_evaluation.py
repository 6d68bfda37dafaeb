"""adcore_nn.evaluation: which derivative is running the code now, as modules need to know it
(backward hooks fire only through a VJP; dropout and running statistics need f evaluated once)."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn import evaluation

import adcore
import adcore.numpy as anp

X = np.array([0.3, -0.7, 1.1])


def asked(backend=None, **options):
    """What evaluation says inside f, differentiated by `backend` (None: a plain call)."""
    seen = []

    def f(x):
        seen.append(
            (
                evaluation.backend_without_vjp(x),
                evaluation.repeats_f(),
                evaluation.differentiated(x),
                evaluation.batched(x),
            )
        )
        return anp.sum(anp.sin(x))

    if backend is None:
        f(X)
    else:
        g = adcore.grad(f, backend=backend, **options)(X)
        assert np.allclose(g, np.cos(X), atol=1e-6)  # the question changes nothing
    assert seen
    return seen


def test_a_plain_call_is_not_differentiated():
    assert asked() == [(None, None, False, False)]


def test_reverse_runs_a_vjp_and_evaluates_f_once():
    assert asked("reverse") == [(None, None, True, False)]


@pytest.mark.parametrize("backend", ["forward", "symbolic", "sparsity"])
def test_backends_that_differentiate_without_a_vjp_are_named(backend):
    if backend == "sparsity":  # patterns, not derivatives: asked through its own function
        seen = []

        def f(x):
            seen.append(evaluation.backend_without_vjp(x))
            return anp.sin(x)

        adcore.jacobian(f, backend="sparsity")(X)
        assert seen == ["sparsity"]
        return
    assert all(s[:2] == (backend, None) for s in asked(backend))


def test_finite_differences_evaluate_f_again():
    seen = asked("numeric")
    assert len(seen) > 1  # f at the point and at the perturbed points
    assert all(s == ("numeric", "numeric", False, False) for s in seen)


def test_forward_in_several_chunks_evaluates_f_once_per_chunk():
    seen = asked("forward", chunk_size=1)
    assert len(seen) == 3 and all(s[:2] == ("forward", "forward") for s in seen)


def test_second_derivatives_the_inner_derivative_decides():
    seen = []

    def f(x):
        seen.append(evaluation.backend_without_vjp(x))
        return anp.sum(anp.sin(x) * x)

    adcore.hessian(f)(X)  # forward over reverse: the inner reverse sweep runs the VJP
    assert seen == [None]
    seen.clear()
    adcore.hessian(f, outer="reverse", inner="forward")(X)  # the inner derivative has no VJP
    assert seen and set(seen) == {"forward"}


def test_vmap_batches_without_differentiating():
    seen = []

    def f(x):
        seen.append((evaluation.batched(x), evaluation.differentiated(x), evaluation.backend_without_vjp(x)))
        return anp.sum(anp.sin(x))

    adcore.vmap(f)(np.stack([X, X]))
    assert seen == [(True, False, None)]
    seen.clear()
    adcore.vmap(adcore.grad(f))(np.stack([X, X]))
    assert seen == [(True, True, None)]
    seen.clear()
    adcore.grad(lambda x: anp.sum(adcore.vmap(f)(x)))(np.stack([X, X]))
    assert seen == [(True, True, None)]


def test_a_variant_is_labelled_as_adcore_backends_names_it():
    source = adcore.get_backend("source")
    assert evaluation.backend_label(source.for_options({"mode": "forward"})) == "source/forward"
    assert evaluation.backend_label(source.for_options({"mode": "reverse"})) == "source/reverse"
    assert evaluation.backend_label(adcore.get_backend("reverse")) == "reverse"


def test_a_vmap_inside_a_derivative_is_told_from_one_outside():
    seen = []

    def f(x):
        seen.append(evaluation.batched_inside_derivative(x))
        return anp.sum(anp.sin(x))

    xs = np.stack([X, X])
    adcore.vmap(adcore.grad(f))(xs)  # the derivative inside the vmap: per-example gradients
    adcore.grad(lambda x: anp.sum(adcore.vmap(f)(x)))(xs)  # the vmap inside the derivative
    adcore.vmap(f)(xs)  # no derivative
    assert seen == [False, True, False]
