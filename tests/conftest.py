"""Shared fixtures: throwaway plugins, a clean plugin environment for each test that asks, and the docs blocks' server."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from code_blocks import block_server

from adcore import plugins
from adcore.registry import Registry

PLUGIN_SWITCHES = ("ADCORE_DISABLE_PLUGIN_AUTOLOAD", "ADCORE_PLUGINS", "ADCORE_BLOCK_PLUGINS", "ADCORE_DEBUG")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The collected items (23,000) and the modules live until the run ends: freeze them out of the
    garbage collector's passes, and collect the youngest objects every 10,000 allocations instead
    of 700. At Python's defaults the collector took 44 s of the two xdist workers' 475 s of CPU;
    on tests/ops, sympy_rules and batching (12,400 items, one process) 5.0 s, and 3.6 s so."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


@pytest.fixture
def clean_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No plugin switches set; the registry is rebuilt before and after the test."""
    for name in PLUGIN_SWITCHES:
        monkeypatch.delenv(name, raising=False)
    plugins.reset()
    yield
    monkeypatch.undo()
    plugins.reset()


@pytest.fixture
def register_plugin(clean_plugins: None) -> Iterator[Callable[[Any, str], Registry]]:
    """register_plugin(obj, name) adds a throwaway plugin and returns the rebuilt registry;
    every plugin added this way is removed when the test ends."""
    names: list[str] = []

    def register(obj: Any, name: str) -> Registry:
        plugins.register_plugin(obj, name)
        names.append(name)
        return plugins.get_registry()

    yield register
    for name in names:
        plugins.unregister_plugin(name)


@pytest.fixture(scope="module")
def server():
    """One block server for the module's code blocks (tests/code_blocks.py) (per xdist worker), closed after them."""
    started = block_server()
    yield started
    if started is not None:
        started.close()
