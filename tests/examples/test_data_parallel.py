"""examples/data_parallel.py on a 2-worker LocalCluster: the data-parallel gradient and the parameters
after several Adam steps equal one-process training on the whole batch to rounding (float64), with
uneven shards and labels chunked apart from x; BatchNorm and Dropout in training mode are refused."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import adcore_nn as nn
import numpy as np
import pytest

import adcore
from adcore.errors import InvalidValueError

pytest.importorskip("distributed")
import dask.array as da  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402

EXAMPLE = Path(__file__).parents[2] / "examples" / "data_parallel.py"
ROWS = (37, 11, 24, 8)  # uneven shards: a mean of per-shard means would be wrong
STEPS = 4


def load_example():
    # not put in sys.modules: cloudpickle sends its functions to the workers by value
    spec = importlib.util.spec_from_file_location("data_parallel", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example():
    return load_example()


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def data(example):
    return example.make_data(seed=1, n=sum(ROWS))


def shards(example, client, data, x_chunks=(ROWS, -1), y_chunks=(ROWS,)):
    x, y = data
    return example.shards_on_workers(
        client, da.from_array(x, chunks=x_chunks), da.from_array(y, chunks=y_chunks)
    )


def one_process_gradient(example, model, x, y) -> tuple[float, dict]:
    loss, grads = adcore.value_and_grad(example.mean_loss)(model, x, y)
    return float(loss), dict(grads.named_parameters())


def assert_equal_to_rounding(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for name, w in want.items():
        assert got[name].dtype == np.float64 and got[name].shape == w.shape, name
        scale = np.max(np.abs(w))
        assert scale > 1e-3, f"{name}: nearly zero, the comparison would prove nothing"
        np.testing.assert_allclose(got[name], w, rtol=1e-12, atol=1e-13 * scale, err_msg=name)


def test_the_gradient_is_the_whole_batchs_mean_loss_gradient_with_uneven_shards(example, client, data):
    model = example.make_model(seed=0)
    loss, grads = example.data_parallel_gradient(client, model, shards(example, client, data))
    want_loss, want = one_process_gradient(example, model, *data)
    assert loss == pytest.approx(want_loss, rel=1e-13)
    assert_equal_to_rounding(grads, want)
    # uneven shards weigh: the mean of the shards' mean-loss gradients is another (wrong) answer
    x, y = data
    bounds = np.cumsum((0, *ROWS))
    per_shard = [one_process_gradient(example, model, x[a:b], y[a:b])[1] for a, b in zip(bounds, bounds[1:])]
    naive = adcore.tree.map(lambda *g: sum(g) / len(g), *per_shard)
    assert max(np.max(np.abs(naive[k] - want[k])) for k in want) > 1e-3


def test_labels_chunked_apart_from_x_are_paired_with_their_rows(example, client, data):
    model = example.make_model(seed=0)
    # x split across its columns too, y in other blocks: each shard still holds whole rows and their labels
    split = shards(example, client, data, x_chunks=(ROWS, 2), y_chunks=((40, 40),))
    assert len(split) == len(ROWS)
    assert_equal_to_rounding(
        example.data_parallel_gradient(client, model, split)[1],
        one_process_gradient(example, model, *data)[1],
    )


def test_the_parameters_after_k_steps_equal_one_process_training(example, client, data):
    model, alone = example.make_model(seed=0), example.make_model(seed=0)
    start = model.state_dict()
    x, y = data
    losses = example.train(
        client, model, da.from_array(x, chunks=(ROWS, -1)), da.from_array(y, chunks=(ROWS,)), STEPS
    )
    want_losses = example.train_in_one_process(alone, x, y, STEPS)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-12)
    assert losses[-1] < losses[0]  # it trained: each step saw the parameters the last one made
    got, want = model.state_dict(), alone.state_dict()
    for name in want:
        assert np.max(np.abs(want[name] - start[name])) > 1e-3, f"{name} did not move"
    assert_equal_to_rounding(got, want)


def test_rows_of_x_without_labels_are_refused(example, client, data):
    x, y = data
    with pytest.raises(InvalidValueError, match="x has 80 rows but y has 79"):
        example.shards_on_workers(client, da.from_array(x, chunks=40), da.from_array(y[:-1], chunks=40))


def test_shards_without_an_example_are_refused_and_the_next_call_works(example, client, data):
    x, y = data
    model = example.make_model(seed=0)
    empty = example.shards_on_workers(client, da.from_array(x[:0], chunks=4), da.from_array(y[:0], chunks=4))
    with pytest.raises(InvalidValueError, match="no example"):
        example.data_parallel_gradient(client, model, empty)
    assert_equal_to_rounding(
        example.data_parallel_gradient(client, model, shards(example, client, data))[1],
        one_process_gradient(example, model, *data)[1],
    )


@pytest.mark.parametrize(
    ("layer", "name"),
    [(lambda: nn.BatchNorm1d(16), "BatchNorm1d"), (lambda: nn.Dropout(0.5), "Dropout")],
    ids=["batchnorm", "dropout"],
)
def test_a_layer_that_mixes_examples_or_draws_randomly_in_training_mode_is_refused(
    example, client, data, layer, name
):
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), layer(), nn.Tanh(), nn.Linear(16, 3)).double()
    split = shards(example, client, data)
    with pytest.raises(InvalidValueError, match=rf"layer '1' \({name}\) in training mode .*\.eval\(\)"):
        example.data_parallel_gradient(client, model, split)
    # in eval mode the layer is per example (running statistics; no dropout): exact, and the next call works
    model[1].eval()
    assert_equal_to_rounding(
        example.data_parallel_gradient(client, model, split)[1],
        one_process_gradient(example, model, *data)[1],
    )


def test_dropout_with_p_0_trains_in_training_mode(example, client, data):
    nn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.0), nn.Tanh(), nn.Linear(16, 3)).double()
    assert model[1].training
    assert_equal_to_rounding(
        example.data_parallel_gradient(client, model, shards(example, client, data))[1],
        one_process_gradient(example, model, *data)[1],
    )


def test_the_script_trains_on_a_given_scheduler_and_matches_one_process(client, capsys):
    result = load_example().main(["--scheduler", client.scheduler.address, "--steps", "2"])
    printed = capsys.readouterr().out
    assert "step 2  mean loss" in printed and "largest difference" in printed
    for got, want in zip(result["model"].parameters(), result["alone"].parameters(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_loading_the_example_imports_no_dask():
    # Dask is imported by the functions that use it: the one-process parts need none of it
    code = (
        "import importlib.util, sys; "
        f"spec = importlib.util.spec_from_file_location('data_parallel', {str(EXAMPLE)!r}); "
        "spec.loader.exec_module(importlib.util.module_from_spec(spec)); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[]\n"
