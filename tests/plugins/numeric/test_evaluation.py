"""Where the points are evaluated: one by one, as one batch (vectorized=True), or on an
executor (a process pool, a Dask cluster on loopback). Only the evaluations move; the
differences are taken by the same code, so every path gives bit-identical results."""

from __future__ import annotations

from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
from adcore_numeric import points

import adcore
from adcore import InvalidInputError, InvalidOutputError

METHODS = ["central", "forward", "backward", "richardson", "complex"]
X = np.random.default_rng(1).uniform(0.5, 1.5, 12)
Y = np.random.default_rng(2).uniform(-1.0, 1.0, (3, 4))


def rosenbrock(x):
    """Takes one point, or a batch of them on a leading axis."""
    return np.sum(100.0 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (1 - x[..., :-1]) ** 2, axis=-1)


def mixed(x, y):
    """R^12 x R^(3x4) -> R^(3,2): a Jacobian with matrix shapes; batches on either argument."""
    return np.tanh(y[..., :, :2] * x[..., :3, None]) + np.exp(x[..., 4:7, None] * y[..., :, 2:])


def both_ways(method, argnums=(0, 1), **options):
    f = adcore.differentiate(mixed, backend="numeric", method=method, argnums=argnums, return_error=True)
    g = adcore.differentiate(
        mixed, backend="numeric", method=method, argnums=argnums, return_error=True, **options
    )
    return f(X, Y), g(X, Y)


def assert_identical(a, b):
    (ja, ea), (jb, eb) = a, b
    for one, other in zip(ja + ea, jb + eb):
        assert one.shape == other.shape
        np.testing.assert_array_equal(one, other)


@pytest.mark.parametrize("method", METHODS)
def test_vectorized_is_bit_identical_to_serial(method):
    assert_identical(*both_ways(method, vectorized=True))


@pytest.mark.parametrize("method", ["central", "richardson"])
def test_vectorized_makes_one_call_per_round(method):
    calls = []

    def f(x):
        calls.append(x.shape)
        return rosenbrock(x)

    adcore.grad(f, backend="numeric", method=method, vectorized=True)(X)
    rounds = 1 if method == "central" else len(calls)
    assert calls[0] == ((2 if method == "central" else 6) * X.size, X.size)
    assert len(calls) == rounds
    if method == "richardson":
        assert len(calls) <= 15 - 3 + 1  # the first three steps in one call, then one call per step


def test_vectorized_jvp_equals_serial():
    tangents = (np.ones_like(X), np.full_like(Y, 0.5))
    serial = adcore.jvp(mixed, (X, Y), tangents, backend="numeric", method="richardson")
    batched = adcore.jvp(mixed, (X, Y), tangents, backend="numeric", method="richardson", vectorized=True)
    np.testing.assert_array_equal(serial[1], batched[1])
    forward = adcore.jvp(mixed, (X, Y), tangents, backend="forward")
    np.testing.assert_allclose(serial[1], forward[1], rtol=1e-11)


def test_vectorized_with_a_function_that_does_not_batch_is_a_clear_error():
    with pytest.raises(InvalidOutputError, match=r"batch of 24 points.*returned shape \(\)"):
        adcore.grad(lambda x: np.sum(x**2), backend="numeric", vectorized=True)(X)
    assert adcore.grad(rosenbrock, backend="numeric", vectorized=True)(X).shape == X.shape  # next call works


@pytest.mark.parametrize("method", METHODS)
def test_a_thread_pool_is_bit_identical_to_serial(method):
    with ThreadPoolExecutor(2) as pool:
        assert_identical(*both_ways(method, executor=pool))


class CountingExecutor(Executor):
    """Runs each task at once, counting them."""

    def __init__(self) -> None:
        self.tasks = 0

    def submit(self, fn, /, *args, **kwargs):
        self.tasks += 1
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(fn, *args, **kwargs)


def test_points_go_to_the_executor_in_a_bounded_number_of_tasks():
    counting = CountingExecutor()
    x = np.linspace(0.1, 1.0, 300)
    g = adcore.grad(rosenbrock, backend="numeric", executor=counting)(x)
    assert counting.tasks == points.EXECUTOR_TASKS
    np.testing.assert_array_equal(g, adcore.grad(rosenbrock, backend="numeric")(x))


def _plain_exception_pickling() -> None:
    """In a pool's child, exceptions pickle as Python pickles them. distributed, once another test's
    Dask cluster imported it into this process, installs tblib's pickling for every exception class
    process-wide (distributed.utils); under pytest that recursed in the forked children while they
    sent an error back, killing them (BrokenProcessPool) instead of returning it."""
    import copyreg

    for cls, reducer in list(copyreg.dispatch_table.items()):
        tblib = getattr(reducer, "__module__", "").startswith("tblib")
        if tblib and isinstance(cls, type) and issubclass(cls, BaseException):
            del copyreg.dispatch_table[cls]


@pytest.fixture(scope="module")
def process_pool():
    with ProcessPoolExecutor(2, initializer=_plain_exception_pickling) as pool:
        yield pool


@pytest.mark.parametrize("method", ["central", "richardson", "complex"])
def test_a_process_pool_is_bit_identical_to_serial(method, process_pool):
    assert_identical(*both_ways(method, executor=process_pool))
    serial = adcore.grad(rosenbrock, backend="numeric", method=method)(X)
    pooled = adcore.grad(rosenbrock, backend="numeric", method=method, executor=process_pool)(X)
    np.testing.assert_array_equal(serial, pooled)


def test_a_process_pool_cannot_take_a_lambda_and_says_what_to_do(process_pool):
    with pytest.raises(InvalidInputError, match="could not send f to its workers.*module level.*Dask"):
        adcore.grad(lambda x: np.sum(x**2), backend="numeric", executor=process_pool)(X)
    assert adcore.grad(rosenbrock, backend="numeric", executor=process_pool)(X).shape == X.shape


def test_errors_raised_in_a_worker_come_back_as_they_are(process_pool):
    with pytest.raises(InvalidOutputError, match=r"f returned nan at argument 0"):
        adcore.grad(_log_sum, backend="numeric", executor=process_pool)(np.array([1.0, 1e-7]))


def _log_sum(x):
    return np.sum(np.log(x))


# --- Dask ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dask_executor():
    distributed = pytest.importorskip(
        "dask.distributed", reason="Dask is optional: pip install 'adcore-numeric[distributed]' to test it"
    )
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client.get_executor()
    client.close()
    cluster.close()


@pytest.mark.parametrize("method", ["central", "richardson", "complex"])
def test_a_dask_cluster_on_loopback_is_bit_identical_to_serial(method, dask_executor):
    # a lambda: Dask sends functions with cloudpickle, so closures travel too
    f = lambda x, y: mixed(x, y) * 2.0  # noqa: E731
    serial = adcore.jacobian(f, argnums=(0, 1), backend="numeric", method=method, return_error=True)(X, Y)
    remote = adcore.jacobian(
        f, argnums=(0, 1), backend="numeric", method=method, return_error=True, executor=dask_executor
    )(X, Y)
    assert_identical(serial, remote)


def test_the_options_are_checked():
    with pytest.raises(InvalidInputError, match="executor must be a concurrent.futures.Executor"):
        adcore.grad(rosenbrock, backend="numeric", executor=4)(X)
    with pytest.raises(InvalidInputError, match="choose one"):
        with ThreadPoolExecutor(1) as pool:
            adcore.grad(rosenbrock, backend="numeric", executor=pool, vectorized=True)(X)
