"""examples/compare_optimizers.py runs, writes its PNG, and every optimizer lowers the loss."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "compare_optimizers.py"


def load_example():
    spec = importlib.util.spec_from_file_location("compare_optimizers", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compare_optimizers_writes_the_png_and_every_optimizer_descends(tmp_path, capsys):
    out = tmp_path / "curves.png"
    losses = load_example().main(["--steps", "100", "--out", str(out)])
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and out.stat().st_size > 10_000
    assert sorted(losses) == sorted(
        ["sgd", "momentum", "nesterov", "rprop", "rmsprop", "adagrad", "adadelta", "adam", "adamax"]
    )
    for name, curve in losses.items():
        assert len(curve) == 101 and curve[-1] < curve[0] / 2, name
    assert f"wrote {out}" in capsys.readouterr().out
