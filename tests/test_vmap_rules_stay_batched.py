"""vmap(grad(f)) stays batched through every op's derivative rules (issue 34).

A rule that converts a batched value (bool() of a mask, np.asarray, a NumPy function with no op)
makes vmap run f once per example: right, but slow. For every op with a vjp rule, on reverse
and forward, and at each of its samples: f is the sum of the op's outputs times fixed weights,
of its differentiable inputs; `vmap(grad(f), fallback="error")` over BATCH examples (the same
sample drawn with other seeds) must not raise BatchedConversionError, except for the ops listed
below with their reason; and what it gives is the loop's. The reverse Jacobian pulls a batch of
cotangent rows back in one vmapped sweep (derivatives._vmapped_pullback), falling back to one
pullback per row where the sweep converts: the same allow-list idea for it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import adcore
from adcore import derivatives, ops
from adcore.conformance.tolerances import VMAP
from adcore.errors import AdcoreError, BatchedConversionError
from adcore.ops import ordering
from adcore.plugins import get_registry
from adcore.spec import OpSpec, Sample
from adcore.vmap import VmapFallbackWarning

BATCH = 3

# The ops whose derivative rules still convert a batched value, so vmap(grad) loops over the
# examples for them (correct, slower), each with its reason (per-example Python control flow, an
# index read off each example's values). None at these samples: the sort family's permutation
# is batched as a one-hot selection for rows up to ordering.ONE_HOT_ENTRIES (longer rows loop,
# test_sorts_of_long_rows_loop below)
STILL_LOOPING: dict[str, set[str]] = {"reverse": set(), "forward": set()}
# The ops whose reverse Jacobian (no vmap of its own) pulls back one cotangent row at a time:
ROW_BY_ROW = {
    # the adjoint ODE solve runs SciPy's solver (plain arrays) on each cotangent, its tolerance
    # scaled by float() of the cotangent's largest entry
    "odeint",
}


def _vjp_ops() -> list[OpSpec]:
    registry = get_registry()
    return [registry.ops[name] for name in sorted(registry.ops) if name in registry.rules["vjp"]]


def _draws(op: OpSpec, dtype: type = np.float64) -> Iterator[tuple[int, list[Sample], list[int]]]:
    """(sample index, that sample in BATCH draws, its inputs to differentiate) where the draws
    agree in shapes and params and some input is a float the rules differentiate alone."""
    if not op.samples:
        return
    draws = [op.samples(np.random.default_rng([0, j]), np.dtype(dtype)) for j in range(BATCH)]
    for k, first in enumerate(draws[0]):
        same = [d[k] for d in draws if len(d) > k]
        shapes = [np.shape(a) for a in first.args]
        if len(same) < BATCH or any(
            [np.shape(a) for a in s.args] != shapes or s.params.keys() != first.params.keys() for s in same
        ):
            continue
        weights = _weights(op, first)
        if all(w is None for w in weights):
            continue
        inputs = [
            i
            for i, x in enumerate(first.args)
            if op.is_differentiable(i)
            and np.asarray(x).dtype.kind in "fc"
            and _differentiable_alone(op, first, i, weights)
        ]
        if inputs:
            yield k, same, inputs


def _weights(op: OpSpec, sample: Sample) -> list:
    """A fixed random weight per float output (None for an integer or boolean one)."""
    out = op.impl(*sample.args, **sample.params)
    outs = out if isinstance(out, tuple) else (out,)
    rng = np.random.default_rng(1)
    return [rng.standard_normal(np.shape(o)) if np.asarray(o).dtype.kind in "fc" else None for o in outs]


def _outputs(op: OpSpec, sample: Sample, inputs: list[int], xs: tuple) -> list:
    args = list(sample.args)
    for i, x in zip(inputs, xs):
        args[i] = x
    out = op(*args, **sample.params)
    return [ops.real(o) if np.iscomplexobj(o) else o for o in (out if isinstance(out, tuple) else (out,))]


def _loss(op: OpSpec, sample: Sample, inputs: list[int], weights: list) -> Callable[..., Any]:
    """The op's outputs (real parts) times the weights, summed: a scalar of the inputs."""

    def loss(*xs: Any) -> Any:
        outs = _outputs(op, sample, inputs, xs)
        return sum(ops.sum(o * w) for o, w in zip(outs, weights) if w is not None)

    return loss


def _flat_outputs(op: OpSpec, sample: Sample, inputs: list[int], weights: list) -> Callable[..., Any]:
    """The op's float outputs (real parts) raveled into one vector, never a scalar."""

    def flat(*xs: Any) -> Any:
        outs = [ops.ravel(o) for o, w in zip(_outputs(op, sample, inputs, xs), weights) if w is not None]
        return ops.concatenate(*outs, np.zeros(1), axis=0) * 1.5

    return flat


def _differentiable_alone(op: OpSpec, sample: Sample, i: int, weights: list) -> bool:
    """Whether both backends differentiate by input i at this sample, unbatched (else the op
    refuses it, as betainc's a: nothing for vmap to batch)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            for backend in ("reverse", "forward"):
                adcore.grad(_loss(op, sample, [i], weights), backend=backend)(np.asarray(sample.args[i]))
    except AdcoreError:
        return False
    return True


def _stacked(same: list[Sample], inputs: list[int]) -> list[np.ndarray]:
    return [np.stack([np.asarray(s.args[i]) for s in same]) for i in inputs]


def _assert_loop_s(got: tuple, df: Callable, xs: list[np.ndarray], where: str) -> None:
    loop = [df(*(x[j] for x in xs)) for j in range(len(xs[0]))]
    tolerance = VMAP["float64"]
    for n, batched in enumerate(got):
        expected = np.stack([np.asarray(g[n]) for g in loop])
        np.testing.assert_allclose(
            np.asarray(batched), expected, rtol=tolerance.rtol, atol=tolerance.atol, err_msg=where
        )


def looping_ops(backend: str, dtype: type) -> dict[str, str]:
    """Per op whose vmap(grad) still converts a batched value at some sample: what it converts.
    Where vmap stays batched, its gradients must be the loop's."""
    looping = {}
    for op in _vjp_ops():
        if np.dtype(dtype).kind == "c" and not op.accepts_complex:
            continue
        for k, same, inputs in _draws(op, dtype):
            loss = _loss(op, same[0], inputs, _weights(op, same[0]))
            df = adcore.grad(loss, argnums=tuple(range(len(inputs))), backend=backend)
            xs = _stacked(same, inputs)
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                try:
                    got = adcore.vmap(df, fallback="error")(*xs)
                except BatchedConversionError as e:
                    looping[op.name] = f"sample {k}: {e.what}"
                    break
                except AdcoreError:
                    continue  # a refusal (a kink in some example): the loop's, not a conversion
                _assert_loop_s(got, df, xs, f"{op.name} sample {k} on {backend}")
    return looping


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_vmap_of_grad_loops_only_for_the_listed_ops(backend, dtype):
    looping = looping_ops(backend, dtype)
    ops_ = get_registry().ops
    listed = {n for n in STILL_LOOPING[backend] if np.dtype(dtype).kind != "c" or ops_[n].accepts_complex}
    assert set(looping) == listed, "\n".join(f"{n}: {w}" for n, w in sorted(looping.items()))


def test_reverse_jacobians_pull_back_row_by_row_only_for_the_listed_ops(monkeypatch):
    """adcore.jacobian on reverse pulls every cotangent row back in one vmapped sweep; the ops
    whose sweep converts (then one pullback per row, derivatives._vmapped_pullback's None)."""
    seen: list[str] = []
    vmap = derivatives.vmap

    def spying_vmap(f: Callable, **kwargs: Any) -> Callable:
        batched = vmap(f, **kwargs)

        def call(*args: Any) -> Any:
            seen.append("")
            try:
                return batched(*args)
            except BatchedConversionError as e:
                seen[-1] = e.what
                raise

        return call

    monkeypatch.setattr(derivatives, "vmap", spying_vmap)
    row_by_row, swept = {}, 0
    for op in _vjp_ops():
        for k, same, inputs in _draws(op):
            sample, weights = same[0], _weights(op, same[0])

            outputs = _flat_outputs(op, sample, inputs, weights)
            seen.clear()
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                try:
                    adcore.jacobian(outputs, argnums=tuple(range(len(inputs))), backend="reverse")(
                        *(np.asarray(sample.args[i]) for i in inputs)
                    )
                except AdcoreError:
                    continue
            if not seen:
                continue  # no pullback to run: an output that does not depend on the inputs (ceil's)
            swept += 1
            if any(seen):
                row_by_row[op.name] = f"sample {k}: {next(w for w in seen if w)}"
                break
    assert swept > 1000  # (the spy saw the sweeps: the ops' samples were reached)
    assert set(row_by_row) == ROW_BY_ROW, "\n".join(f"{n}: {w}" for n, w in sorted(row_by_row.items()))


# complex eigh and svd: each example's cotangent scale in the rules' phase and degeneracy checks
RNG = np.random.default_rng(34)
_Z = RNG.normal(size=(4, 3, 3)) + 1j * RNG.normal(size=(4, 3, 3))
HERMITIAN = _Z + np.conj(np.swapaxes(_Z, -1, -2))


def _eigh_phase_free(x: Any) -> Any:
    w, v = np.linalg.eigh(x)
    return ops.sum(ops.real(v * ops.conj(v)) * np.arange(3.0)) + ops.sum(w)


def _svd_phase_free(x: Any) -> Any:
    u, s, vh = np.linalg.svd(x)
    return (
        ops.sum(ops.real(u * ops.conj(u)) * np.arange(3.0))
        + ops.sum(s**2)
        + ops.sum(ops.real(vh * ops.conj(vh))[0])
    )


def _eigh_of_phase(x: Any) -> Any:
    return ops.sum(ops.real(np.linalg.eigh(x)[1]))  # depends on LAPACK's phase: refused


@pytest.mark.parametrize("f, xs", [(_eigh_phase_free, HERMITIAN), (_svd_phase_free, _Z)])
def test_vmap_of_grad_through_complex_eigh_and_svd_stays_batched(f, xs):
    df = adcore.grad(f)
    got = adcore.vmap(df, fallback="error")(xs)
    _assert_loop_s((got,), lambda x: (df(x),), [xs], f.__name__)


def test_vmap_of_grad_of_a_phase_dependent_loss_refuses_as_the_loop():
    df = adcore.grad(_eigh_of_phase)
    with pytest.raises(AdcoreError, match="phase"):
        df(HERMITIAN[0])
    with pytest.raises(AdcoreError, match="phase"):
        adcore.vmap(df, fallback="error")(HERMITIAN)


def test_vmap_of_hessian_of_std_stays_batched_and_refuses_as_the_loop():
    xs = np.random.default_rng(5).random((3, 4))
    h = adcore.hessian(lambda x: np.std(x))
    _assert_loop_s((adcore.vmap(h, fallback="error")(xs),), lambda x: (h(x),), [xs], "std")
    xs[1] = 1.0  # std = 0 in one example: no second derivative there
    with pytest.raises(AdcoreError, match="no second derivative"):
        h(xs[1])
    with pytest.raises(AdcoreError, match="no second derivative"):
        adcore.vmap(h, fallback="error")(xs)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_sorts_of_long_rows_loop_and_of_short_ones_stay_batched(backend):
    """The sort family's one-hot permutation costs n * n per row: rows past ONE_HOT_ENTRIES take
    the index (vmap loops, the loop's result); shorter ones are each example's, bit for bit, with
    ties, NaNs (last) and signed zeros."""
    df = adcore.grad(lambda x: np.sum(np.sort(x) * np.linspace(1.0, 2.0, len(x))), backend=backend)
    short = np.array(
        [[1.0, 1.0, np.nan, 0.0, -0.0, 2.0], [np.nan, np.nan, 1.0, 1.0, 1.0, 0.0], [0.0, -0.0, 0, -0.0, 5, 5]]
    )
    got, loop = adcore.vmap(df, fallback="error")(short), np.stack([df(x) for x in short])
    np.testing.assert_array_equal(got, loop)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(loop))
    long = np.random.default_rng(3).normal(size=(2, 300))
    assert 300**2 > ordering.ONE_HOT_ENTRIES
    with pytest.raises(BatchedConversionError):
        adcore.vmap(df, fallback="error")(long)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VmapFallbackWarning)
        np.testing.assert_array_equal(adcore.vmap(df)(long), np.stack([df(x) for x in long]))
