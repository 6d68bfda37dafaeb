"""The import order (docs/architecture.md): pyproject.toml's import-linter contracts hold, and can fail."""

from __future__ import annotations

import json
import re
import textwrap
import tomllib
from pathlib import Path

import pytest
from importlinter import configuration
from importlinter.application.use_cases import lint_imports

ROOT = Path(__file__).resolve().parents[1]
configuration.configure()  # import-linter's adapters (file system, grimp), as `lint-imports` sets them


def _lint(config: Path, capsys: pytest.CaptureFixture) -> tuple[bool, str]:
    """Whether every contract of `config` holds, and import-linter's report (`lint-imports`, in-process)."""
    capsys.readouterr()
    kept = lint_imports(config_filename=str(config), cache_dir=None, no_logo=True)
    return kept, capsys.readouterr().out


def _contract(contract_id: str) -> dict:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["id"] == contract_id)


def test_adcore_imports_run_one_way_and_plugins_stay_below_the_api(capsys):
    kept, report = _lint(ROOT / "pyproject.toml", capsys)
    assert kept, report


def _package(root: Path, name: str, modules: dict[str, str]) -> None:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module, source in modules.items():
        (package / f"{module}.py").write_text(textwrap.dedent(source))


def _config(root: Path, packages: list[str], contract: dict) -> Path:
    """A pyproject.toml in `root` with one contract (its values, strings, lists and booleans, as JSON is TOML)."""
    lines = [
        "[tool.importlinter]",
        f"root_packages = {json.dumps(packages)}",
        "",
        "[[tool.importlinter.contracts]]",
    ]
    lines += [f"{key} = {json.dumps(value)}" for key, value in contract.items()]
    config = root / "pyproject.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


@pytest.mark.parametrize(
    ("module", "upward"),
    [
        ("core", "import toycore.spec\n"),  # the tracing core imports nothing of adcore but errors
        ("ops", "def lookup():\n    from toycore.registry import Registry\n"),  # lazy imports count
        ("registry", "from toycore.api import grad\n"),
    ],
    ids=["core-spec", "ops-registry-in-a-function", "registry-api"],
)
def test_the_layers_contract_fails_on_an_upward_import(tmp_path, monkeypatch, capsys, module, upward):
    # adcore's own layer list, over a toy package with one module per layer and one import upward
    contract = {**_contract("layers"), "containers": ["toycore"], "exhaustive": False}
    names = {n.strip() for layer in contract["layers"] for n in layer.replace("|", ":").split(":")}
    _package(tmp_path, "toycore", {name: "" for name in names} | {"errors": "", module: upward})
    monkeypatch.syspath_prepend(str(tmp_path))
    kept, report = _lint(_config(tmp_path, ["toycore"], contract), capsys)
    assert not kept
    assert "BROKEN" in report and f"toycore.{module} -> " in report, report


def test_the_layers_contract_keeps_downward_imports(tmp_path, monkeypatch, capsys):
    contract = {**_contract("layers"), "containers": ["toycore"], "exhaustive": False}
    names = {n.strip() for layer in contract["layers"] for n in layer.replace("|", ":").split(":")}
    downward = {
        "api": "import toycore.registry\n",
        "spec": "from toycore import core\n",
        "core": "import toycore.errors\n",
    }
    _package(tmp_path, "toycore", {name: "" for name in names} | downward)
    monkeypatch.syspath_prepend(str(tmp_path))
    kept, report = _lint(_config(tmp_path, ["toycore"], contract), capsys)
    assert kept, report


def test_the_plugins_contract_fails_on_a_plugin_importing_the_api(tmp_path, monkeypatch, capsys):
    contract = {**_contract("plugins"), "source_modules": ["toyplugin"]}
    _package(
        tmp_path,
        "toyplugin",
        {"backend": "from adcore.tree import flatten\n", "trace": "import adcore.core\n"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    kept, report = _lint(_config(tmp_path, ["toyplugin", "adcore"], contract), capsys)
    assert not kept
    assert "toyplugin.backend -> adcore.tree" in report, report
    assert "toyplugin.trace" not in report  # adcore.core is a layer a plugin may use


def test_the_architecture_page_lists_the_contracts_layers():
    # docs/architecture.md's table, bottom up, is the contract's list, top down
    page = (ROOT / "docs" / "architecture.md").read_text()
    rows = re.findall(r"^\| \d \| (.+?) \|", page, re.M)
    documented = [{name.rstrip("/") for name in re.findall(r"`([\w/]+)`", row)} for row in rows]
    layers = [
        {n.strip() for n in layer.replace("|", ":").split(":")} for layer in _contract("layers")["layers"]
    ]
    assert documented == layers[::-1]


def test_the_plugins_contract_forbids_every_module_above_layer_4():
    # a module added to layer 5 or 6 (api's and conformance's) is out of the plugins' reach too
    top_two = _contract("layers")["layers"][:2]
    above = {f"adcore.{n.strip()}" for layer in top_two for n in layer.replace("|", ":").split(":")}
    assert set(_contract("plugins")["forbidden_modules"]) == above


FIRST_PARTY = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]


def import_cycles(packages: list[str]) -> list[list[str]]:
    """The import cycles among the modules of `packages`: strongly connected components of more than
    one module in grimp's graph (imports inside functions count), each sorted, found by Tarjan's
    algorithm without recursion."""
    import grimp

    graph = grimp.build_graph(*packages, cache_dir=None)
    imports = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for start in sorted(imports):
        if start in index:
            continue
        work = [(start, iter(imports[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(imports[target])))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_adcore_and_the_first_party_plugins_have_no_import_cycle():
    assert import_cycles(FIRST_PARTY) == []


def test_the_cycle_count_finds_a_planted_cycle(tmp_path, monkeypatch):
    # a -> b -> c -> a (c's import inside a function), and d -> a outside it
    _package(
        tmp_path,
        "toycycle",
        {
            "a": "import toycycle.b\n",
            "b": "from toycycle import c\n",
            "c": "def later():\n    import toycycle.a\n",
            "d": "import toycycle.a\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles(["toycycle"]) == [["toycycle.a", "toycycle.b", "toycycle.c"]]


def test_a_package_importing_its_own_modules_is_no_cycle_but_a_module_importing_its_package_is(
    tmp_path, monkeypatch
):
    # Python runs a package's __init__ before any module in it, an import grimp does not draw: an
    # __init__ that imports its modules is no cycle, a module that takes a name the __init__ defines is
    _package(
        tmp_path,
        "toyinit",
        {"__init__": "from toyinit import a, b\n", "a": "from toyinit import b\n", "b": "X = 1\n"},
    )
    _package(
        tmp_path,
        "toyback",
        {
            "__init__": "from toyback.a import f\n\nLIMIT = 1\n",
            "a": "def f():\n    from toyback import LIMIT\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles(["toyinit"]) == []
    assert import_cycles(["toyback"]) == [["toyback", "toyback.a"]]
