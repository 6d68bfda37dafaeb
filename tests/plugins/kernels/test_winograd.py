"""winograd F(4x4, 3x3) (`adcore_kernels._winograd`): its matrices, its tile transforms against the
reference over edge cases, its float32 error bound, and the reuse of the forward's input transform."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from adcore_kernels import _winograd, conv, reference
from adcore_kernels._geometry import plan_conv2d
from adcore_kernels._numba import PARALLEL_FROM, frozen

EPS32 = float(np.finfo(np.float32).eps)


@pytest.fixture(autouse=True)
def empty_memo():
    """Each test starts (and leaves) with nothing kept, so a hit is this test's own."""
    _winograd.MEMO.clear()
    yield
    _winograd.MEMO.clear()


def normal(rng, shape):
    return rng.standard_normal(shape)


def arrays(x_shape, n_out, padding, dtype=np.float64, seed=0, draw=normal):
    """x, w and a cotangent g of conv2d(x, w, padding=padding), each drawn by draw(rng, shape)."""
    rng = np.random.default_rng(seed)
    w_shape = (n_out, x_shape[1], 3, 3)
    out = reference.conv2d_output_size(x_shape[2:], (3, 3), 1, padding, 1)
    shapes = (x_shape, w_shape, (x_shape[0], n_out, *out))
    return [draw(rng, s).astype(dtype) for s in shapes]


def three(x, w, g, padding, algorithm="winograd"):
    """conv2d's forward, input gradient and weight gradient by `algorithm`."""
    return (
        conv.conv2d(x, w, 1, padding, 1, algorithm),
        conv.conv2d_input_grad(g, w, x.shape[2:], 1, padding, 1, algorithm),
        conv.conv2d_weight_grad(x, g, (3, 3), 1, padding, 1, algorithm),
    )


def references(x, w, g, padding):
    x, w, g = (a.astype(np.float64) for a in (x, w, g))
    return (
        reference.conv2d(x, w, 1, padding, 1),
        reference.conv2d_input_grad(g, w, x.shape[2:], 1, padding, 1),
        reference.conv2d_weight_grad(x, g, (3, 3), 1, padding, 1),
    )


def relative_error(got, expected) -> float:
    """max |got - expected| over max |expected| (an all-zero expected: the plain max)."""
    return float(np.abs(got - expected).max(initial=0) / max(np.abs(expected).max(initial=0), 1e-300))


# ----------------------------------------------------------------------------- the matrices
def test_the_matrices_compute_a_correlation_of_four_outputs():
    # F(4, 3) in 1-D: A^T [(G w) ⊙ (B^T d)] = the 4 outputs of correlating 6 inputs d with 3 taps w,
    # and the 2-D algorithm is the nesting of it, so these three matrices are the whole method
    rng = np.random.default_rng(1)
    for _ in range(20):
        d, w = rng.standard_normal(6), rng.standard_normal(3)
        expected = np.array([d[i : i + 3] @ w for i in range(4)])
        got = _winograd.A_T @ ((_winograd.G @ w) * (_winograd.B_T @ d))
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-13)
    assert _winograd.KRON_G.shape == (36, 9)
    np.testing.assert_array_equal(_winograd.KRON_G, np.kron(_winograd.G, _winograd.G))


def test_the_kernels_one_dimensional_transforms_are_the_matrices():
    # the numba kernels spell the matrices out (multiples by doublings, exact): each against its matrix
    rng = np.random.default_rng(2)
    for dtype in (np.float64, np.float32):
        d, m, e = (
            rng.standard_normal(6).astype(dtype),
            rng.standard_normal(6).astype(dtype),
            rng.standard_normal(4),
        )
        e = e.astype(dtype)
        tolerance = 1e-14 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(_winograd._b_t(*d), _winograd.B_T @ d, atol=tolerance)
        np.testing.assert_allclose(_winograd._a_t(*m), _winograd.A_T @ m, atol=tolerance)
        np.testing.assert_allclose(_winograd._a(*e), _winograd.A_T.T @ e, atol=tolerance)  # the adjoint


def test_tile_counts_round_up_to_whole_tiles():
    assert _winograd.tile_counts((1, 1)) == (1, 1)
    assert _winograd.tile_counts((4, 8)) == (1, 2)
    assert _winograd.tile_counts((5, 9)) == (2, 3)


# ----------------------------------------------------------------------------- against the reference
# (x shape, O, padding): partial last tiles in either direction, outputs smaller than one tile,
# padding 0, wider than the kernel (the input gradient then crops: a negative offset), per-axis padding,
# an input narrower than the tile's 4 columns, planes not a multiple of the transforms' chunk of 8
GEOMETRIES = [
    ((2, 3, 9, 8), 4, 1),
    ((1, 1, 3, 3), 1, 0),  # a 1x1 output: one tile, 15 of its 16 outputs off the edge
    ((1, 2, 4, 4), 3, 0),
    ((2, 3, 7, 5), 2, 3),
    ((1, 2, 5, 6), 3, 4),
    ((1, 1, 10, 3), 2, 5),
    ((1, 2, 1, 1), 2, 1),
    ((1, 1, 2, 9), 1, 1),
    ((3, 3, 13, 17), 3, 2),
    ((1, 3, 12, 16), 2, 0),  # whole tiles exactly
    ((1, 2, 11, 7), 3, (0, 2)),
    ((1, 2, 6, 9), 2, (3, 1)),
    ((3, 5, 8, 8), 7, 1),  # 15 and 21 planes: the chunks end mid-way
]


@pytest.mark.parametrize("x_shape, n_out, padding", GEOMETRIES)
def test_forward_and_both_gradients_match_the_reference_in_float64(x_shape, n_out, padding):
    x, w, g = arrays(x_shape, n_out, padding)
    for got, expected, what in zip(three(x, w, g, padding), references(x, w, g, padding), ("y", "gx", "gw")):
        assert got.dtype == np.float64 and got.shape == expected.shape, what
        assert relative_error(got, expected) < 1e-13, what


def test_large_arrays_run_the_parallel_transforms_with_the_serial_ones_results_bit_for_bit():
    # from PARALLEL_FROM elements on, the transforms run across numba's threads, each chunk of planes
    # with its own scratch: the same arithmetic, so exactly the serial variant's numbers
    x, w, g = arrays((3, 11, 33, 34), 11, 2, dtype=np.float32, seed=4)  # odd sizes, 33 planes
    assert x.size >= PARALLEL_FROM and g.size >= PARALLEL_FROM
    geometry, _ = plan_conv2d(x.shape, w.shape, 1, 2, 1, "winograd")
    tiles = _winograd.tile_counts(geometry.out)
    v = [
        t(frozen(x), *tiles, 2, 2)
        for t in (_winograd._input_transform.serial, _winograd._input_transform.parallel)
    ]
    np.testing.assert_array_equal(v[0], v[1])
    gm = [
        t(frozen(g), *tiles)
        for t in (_winograd._cotangent_transform.serial, _winograd._cotangent_transform.parallel)
    ]
    np.testing.assert_array_equal(gm[0], gm[1])
    m = frozen(np.matmul(_winograd._kernel_transform(w), v[0]))
    y = [
        t(m, 3, *geometry.out, *tiles)
        for t in (_winograd._output_transform.serial, _winograd._output_transform.parallel)
    ]
    np.testing.assert_array_equal(y[0], y[1])
    for got, expected in zip(three(x, w, g, 2), references(x, w, g, 2)):
        assert relative_error(got, expected) < 1e-5


def test_an_empty_batch_and_a_view():
    x, w, g = arrays((0, 2, 6, 6), 3, 1)
    assert [a.shape for a in three(x, w, g, 1)] == [(0, 3, 6, 6), (0, 2, 6, 6), (3, 2, 3, 3)]
    x, w, g = arrays((2, 3, 9, 10), 2, 1)
    view = np.asfortranarray(x)[:, :, ::-1][:, :, ::-1]  # not C-contiguous
    np.testing.assert_allclose(three(view, w, g, 1)[0], reference.conv2d(x, w, 1, 1, 1), atol=1e-12)


# ----------------------------------------------------------------------------- float32 error
# F(4x4, 3x3)'s transforms have entries up to 8 and 1/24, so in float32 it rounds ~15x more than
# F(2x2, 3x3) or im2col (measured, C=64, N(0,1): 38 eps against 2 and 3). Each output is a sum of K
# products (K = C*9 for the forward, O*9 for the input gradient, N*H'*W' for the weight gradient); its
# error, relative to the largest |output|, grows like sqrt(K) from a floor the transforms set:
#     error <= eps32 * (64 + 4 * sqrt(K)).
# Worst measured (5 seeds each, N=2, 16x16, O=8, C = 1..256; N(0,1), 1e4 * N(0,1), magnitudes mixed
# over 10^-3..10^3, uniform [0, 1)): the forward 36 eps at K=9 (bound 76), 75 eps at K=2304 (bound
# 256); the input gradient 39 eps at K=72; the weight gradient 36 eps at K=512.
DISTRIBUTIONS = {
    "normal": normal,
    "large": lambda rng, s: 1e4 * rng.standard_normal(s),
    "mixed magnitudes": lambda rng, s: rng.standard_normal(s) * 10.0 ** rng.integers(-3, 4, s),
    "positive": lambda rng, s: rng.uniform(0, 1, s),  # no cancellation
}


def float32_bound(terms: int) -> float:
    return EPS32 * (64 + 4 * np.sqrt(terms))


@pytest.mark.parametrize("n_in", [1, 16, 128])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_float32_error_is_within_the_bound(n_in, distribution):
    n_out = 8
    for seed in range(2):
        x, w, g = arrays((2, n_in, 16, 16), n_out, 1, np.float32, seed, DISTRIBUTIONS[distribution])
        got, expected = three(x, w, g, 1), references(x, w, g, 1)
        terms = (n_in * 9, n_out * 9, 2 * 16 * 16)
        for what, a, b, k in zip(("forward", "input grad", "weight grad"), got, expected, terms):
            assert a.dtype == np.float32
            error = relative_error(a, b)
            assert error <= float32_bound(k), (
                f"{what}: {error / EPS32:.1f} eps > {float32_bound(k) / EPS32:.1f}"
            )


def test_float32_rounds_more_than_im2col_but_far_less_than_the_bound_allows_on_a_typical_layer():
    x, w, g = (a.astype(np.float32) for a in arrays((2, 64, 16, 16), 8, 1, seed=3))
    expected = references(x, w, g, 1)[0]
    winograd = relative_error(conv.conv2d(x, w, 1, 1, 1, "winograd"), expected)
    im2col = relative_error(conv.conv2d(x, w, 1, 1, 1, "im2col"), expected)
    assert im2col < winograd <= float32_bound(64 * 9)


# ----------------------------------------------------------------------------- reusing V
def count_transforms(monkeypatch) -> list:
    """A list that gets one entry per input transform computed from here on."""
    calls: list = []
    real = _winograd._input_transform

    def counted(*args):
        calls.append(args[0].shape)
        return real(*args)

    monkeypatch.setattr(_winograd, "_input_transform", counted)
    return calls


def test_the_weight_gradient_reuses_the_forwards_input_transform(monkeypatch):
    x, w, g = arrays((2, 3, 9, 8), 4, 1)
    calls = count_transforms(monkeypatch)
    y, gx, gw = three(x, w, g, 1)  # forward, the input gradient's forward of g, the weight gradient
    assert len(calls) == 2 and _winograd.MEMO.hits == 1
    for got, expected in zip((y, gx, gw), references(x, w, g, 1)):
        assert relative_error(got, expected) < 1e-13
    same_values = x.copy()  # another array with the same bytes: the same V, rightly
    conv.conv2d_weight_grad(same_values, g, (3, 3), 1, 1, 1, "winograd")
    assert len(calls) == 2 and _winograd.MEMO.hits == 2


def test_an_x_mutated_in_place_after_the_forward_gets_a_fresh_transform(monkeypatch):
    x, w, g = arrays((2, 3, 9, 8), 4, 1)
    conv.conv2d(x, w, 1, 1, 1, "winograd")
    calls = count_transforms(monkeypatch)
    x[1, 2, 4, 5] += 1.0  # one element, in the middle: not among the first ones compared
    gw = conv.conv2d_weight_grad(x, g, (3, 3), 1, 1, 1, "winograd")
    assert len(calls) == 1 and _winograd.MEMO.hits == 0
    assert relative_error(gw, reference.conv2d_weight_grad(x, g, (3, 3), 1, 1, 1)) < 1e-13
    x[0, 0, 0, 0] = -0.0 if x[0, 0, 0, 0] == 0 else 0.0  # a sign of zero is a change of bytes too
    conv.conv2d(x, w, 1, 1, 1, "winograd")
    x[0, 0, 0, 0] = -x[0, 0, 0, 0]
    conv.conv2d_weight_grad(x, g, (3, 3), 1, 1, 1, "winograd")
    assert _winograd.MEMO.hits == 0


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda x, p: (x[:, :, :, :-1].copy(), p), id="another-shape"),
        pytest.param(lambda x, p: (x.astype(np.float32), p), id="another-dtype"),
        pytest.param(lambda x, p: (x, 2), id="another-padding"),
        pytest.param(lambda x, p: (x * 1.0000001, p), id="other-values"),
    ],
)
def test_a_different_x_or_geometry_never_gets_a_kept_transform(change):
    x, w, g = arrays((2, 3, 9, 8), 4, 1)
    conv.conv2d(x, w, 1, 1, 1, "winograd")
    x2, padding = change(x, 1)
    g2 = arrays(x2.shape, 4, padding, seed=5)[2].astype(x2.dtype)
    gw = conv.conv2d_weight_grad(x2, g2, (3, 3), 1, padding, 1, "winograd")
    assert _winograd.MEMO.hits == 0
    expected = reference.conv2d_weight_grad(
        x2.astype(np.float64), g2.astype(np.float64), (3, 3), 1, padding, 1
    )
    assert relative_error(gw, expected) < (1e-13 if x2.dtype == np.float64 else 1e-5)


def test_the_memo_keeps_the_newest_transforms_within_its_bytes_and_them_read_only():
    memo = _winograd.InputTransforms(max_bytes=1_000)  # each entry below: 128 B of x + 288 B of V
    xs = [np.full((1, 1, 4, 4), float(i)) for i in range(3)]
    vs = [np.full((36, 1, 1), float(i)) for i in range(3)]
    for x, v in zip(xs, vs):
        memo.keep(x, ("key",), v)
    assert memo.find(xs[0], ("key",)) is None  # pushed out: three entries are 1248 B
    assert memo.find(xs[1], ("key",)) is vs[1] and memo.find(xs[2], ("key",)) is vs[2]
    assert memo.find(xs[2], ("other key",)) is None
    assert not vs[2].flags.writeable
    big = np.zeros((1, 1, 10, 10))
    memo.keep(big, ("key",), np.zeros((36, 1, 4)))  # 800 B + 1152 B > 1000 B: not kept, none pushed out
    assert memo.find(big, ("key",)) is None and memo.find(xs[2], ("key",)) is vs[2]
    assert (memo.hits, memo.misses) == (3, 3)


def test_a_lookup_compares_only_the_kept_copy_with_the_same_checksum(monkeypatch):
    """numeric's perturbed xs (one shape, one element changed far from the start) are each
    missed without comparing every kept copy."""
    memo = _winograd.InputTransforms()
    base = np.arange(4096.0).reshape(1, 1, 64, 64)
    xs = [base.copy() for _ in range(5)]
    for i, x in enumerate(xs):
        x[0, 0, 63, 63] += i + 1
        memo.keep(x, ("key",), np.full((36, 1, 1), float(i)))
    compared = []
    real = np.array_equal
    monkeypatch.setattr(_winograd.np, "array_equal", lambda a, b: compared.append(1) or real(a, b))
    assert memo.find(base, ("key",)) is None and compared == []
    assert memo.find(xs[2].copy(), ("key",))[0, 0, 0] == 2.0 and len(compared) == 1
    assert memo.find(xs[2], ("other key",)) is None and len(compared) == 1


def test_a_backward_sweep_through_two_layers_reuses_both_forwards_transforms(monkeypatch):
    x1, w1, _ = arrays((2, 3, 9, 8), 4, 1)
    w2 = arrays((2, 4, 9, 8), 4, 1, seed=3)[1]
    calls = count_transforms(monkeypatch)
    y1 = conv.conv2d(x1, w1, 1, 1, 1, "winograd")
    y2 = conv.conv2d(y1, w2, 1, 1, 1, "winograd")
    g2 = np.ones_like(y2)  # reverse order, as the sweep runs: layer 2's gradients, then layer 1's
    gw2 = conv.conv2d_weight_grad(y1, g2, (3, 3), 1, 1, 1, "winograd")
    g1 = conv.conv2d_input_grad(g2, w2, (9, 8), 1, 1, 1, "winograd")
    gw1 = conv.conv2d_weight_grad(x1, g1, (3, 3), 1, 1, 1, "winograd")
    assert len(calls) == 3 and _winograd.MEMO.hits == 2  # x1, y1 and g2's forward; no weight gradient's
    assert relative_error(gw2, reference.conv2d_weight_grad(y1, g2, (3, 3), 1, 1, 1)) < 1e-13
    assert relative_error(gw1, reference.conv2d_weight_grad(x1, g1, (3, 3), 1, 1, 1)) < 1e-13


def test_the_memo_under_threads_gives_each_thread_its_own_right_gradient():
    # threads running forward and weight gradient on different inputs at once: every weight gradient
    # is its own x's, whatever the others kept in between
    results, errors = {}, []

    def run(seed):
        try:
            x, w, g = arrays((1, 2, 8, 8), 2, 1, seed=seed)
            for _ in range(5):
                conv.conv2d(x, w, 1, 1, 1, "winograd")
                gw = conv.conv2d_weight_grad(x, g, (3, 3), 1, 1, 1, "winograd")
                results[seed] = relative_error(gw, reference.conv2d_weight_grad(x, g, (3, 3), 1, 1, 1))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(seed,)) for seed in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 6 and max(results.values()) < 1e-13
