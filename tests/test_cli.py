"""adcore.cli: `adcore example` checks every backend on the seeds' example; `adcore plugins` lists
plugins; `adcore rules` shows the rule tables; `adcore conformance` runs the suite."""

from __future__ import annotations

import io
import json
import math
import re

import pytest

import adcore
from adcore import cli
from adcore.plugins import PluginWarning


class BrokenBackend(adcore.Backend):
    name = "broken"

    def value_and_jacobian(self, f, args, argnums, *, scalar_output=False):
        raise RuntimeError("no derivatives today")


class BrokenPlugin:
    @adcore.hookimpl
    def adcore_register_backends(self, register):
        register(BrokenBackend())


def test_example_prints_each_backend_against_the_exact_gradient(capsys, clean_plugins):
    assert cli.main(["example"]) == 0
    out = capsys.readouterr().out
    # seed 001: df/dx1 = 1/x1 + x2 = 5.5, df/dx2 = x1 - cos(x2) at (2, 5)
    assert f"{2 - math.cos(5):.12f}" == "1.716337814537"
    for row in ("exact", "reverse", "symbolic"):
        assert re.search(rf"^. {row} +. 5\.500000000000 . 1\.716337814537 .", out, re.MULTILINE), row
    assert re.search(r"^. reverse .* ok ", out, re.MULTILINE)


def test_example_fails_when_a_backend_breaks_and_still_shows_the_others(register_plugin):
    register_plugin(BrokenPlugin(), "broken")
    out = io.StringIO()
    assert cli.example(out) == 1
    text = out.getvalue()
    assert "broken" in text and "RuntimeError: no derivatives today" in text
    assert re.search(r"^. reverse +. 5\.500000000000", text, re.MULTILINE)


def test_plugins_lists_hooks_and_registrations(capsys, clean_plugins):
    assert cli.main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    core = next(line for line in lines if line[2:].startswith("core "))
    reverse = next(line for line in lines if line[2:].startswith("reverse "))
    assert re.search(r" ops +. 53 ", core)  # the core catalogue: 53 ops
    assert re.search(r"backends, rules +. 0 +. 52 +. reverse ", reverse)


def test_plugins_json_names_failures(register_plugin, capsys):
    class Clashing:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            register(adcore.OpSpec("sin", lambda x: x))

    with pytest.warns(PluginWarning, match="clashing"):
        register_plugin(Clashing(), "clashing")
    assert cli.main(["plugins", "--json"]) == 0
    records = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert "'core'" in records["clashing"]["error"] and "'clashing'" in records["clashing"]["error"]
    assert records["clashing"]["ops"] == []
