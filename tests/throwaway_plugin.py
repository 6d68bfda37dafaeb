"""A throwaway plugin for the conformance tests: ops, their rules and backends, registered by hand."""

from __future__ import annotations

import adcore


def throwaway_plugin(ops=(), vjps=None, jvps=None, backends=(), batch=None):
    """A throwaway plugin registering ops, their "vjp", "jvp" and "batch" rules, and backends."""
    vjps, jvps, batch = vjps or {}, jvps or {}, batch or {}

    class Plugin:
        @adcore.hookimpl
        def adcore_register_ops(self, register):
            for spec in ops:
                register(spec)

        @adcore.hookimpl
        def adcore_register_rules(self, register):
            for name, rule in vjps.items():
                register("vjp", name, rule)
            for name, rule in jvps.items():
                register("jvp", name, rule)
            for name, rule in batch.items():
                register("batch", name, rule)

        @adcore.hookimpl
        def adcore_register_backends(self, register):
            for backend in backends:
                register(backend)

    return Plugin()
