"""examples/train_digits.py: the CNN reaches 95% test accuracy on sklearn's digits (its speed is the
example's own printout, not a test: timed assertions fail on a loaded machine)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("train_digits", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_digits_cnn_reaches_95_percent(tmp_path):
    out = tmp_path / "curves.png"
    history = _load_script().main(["--quiet", "--out", str(out)])
    assert history["test_accuracy"][-1] >= 0.95, history["test_accuracy"]
    first_epoch = history["loss"][: history["steps_per_epoch"]]
    assert history["loss"][-1] < first_epoch[0] / 5  # it learned, not guessed
    from PIL import Image

    with Image.open(out) as png:
        assert png.format == "PNG" and png.size[0] > 500
