"""Which plugins may load, and in which order: the entry points found, the switches that allow or
block them, the naming convention that says who owns a first-party name, and the fixed load order
that decides every clash (adcore.plugins loads them in it, in stages)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ESSENTIAL = "core"
ESSENTIAL_DIST = "adcore"
# The naming convention that makes first-party plugins data, not a list to keep up to date: the
# plugin named N is the entry point N of the distribution adcore-N (plugins/<N>/ and
# examples/adcore-<N>/ are shipped so), and that distribution owns N wherever it is installed.
OWNER_PREFIX = "adcore-"


def names(variable: str) -> set[str]:
    return {n.strip() for n in os.environ.get(variable, "").split(",") if n.strip()}


def is_wanted(name: str) -> bool:
    allow, block = names("ADCORE_PLUGINS"), names("ADCORE_BLOCK_PLUGINS")
    if name in block:
        return False
    if os.environ.get("ADCORE_DISABLE_PLUGIN_AUTOLOAD") == "1" or allow:
        return name in allow
    return True


@dataclass
class Candidate:
    """A plugin that may load: its name, where it comes from, and how to get the plugin object."""

    name: str
    version: str
    dist: str
    get: Callable[[], Any]


def owners(found: list[Any]) -> dict[str, str]:
    """Who owns which plugin name: the core, and each entry point N of a distribution adcore-N."""
    owners = {ESSENTIAL: ESSENTIAL_DIST}
    for ep in found:
        dist = dist_of(ep)
        if dist == normalize(OWNER_PREFIX + ep.name):
            owners.setdefault(ep.name, dist)
    return owners


def dist_of(ep: Any) -> str:
    return normalize(getattr(ep.dist, "name", None) or "")  # (metadata may lack a Name)


def candidates(
    found: list[Any],
    owners: dict[str, str],
    refused: list[tuple[Candidate, str]],
    essential: Any,
    by_hand: dict[str, Any],
) -> list[Candidate]:
    """Every plugin to load, in load order; the refused ones go to `refused`, with the reason.

    The order decides every clash (the later plugin is the one refused), so it is fixed: the core,
    the first-party plugins (those in `owners`) by name, the other entry points by name, then the
    plugins registered by hand in the order they were.
    """
    wanted = []
    # (Entry points are not told apart by isinstance: with the importlib_metadata backport
    # imported, as Dask does, entry_points() may hand out the backport's EntryPoint class.)
    for ep in found:
        if not is_wanted(ep.name):
            continue
        dist = dist_of(ep)
        candidate = Candidate(ep.name, getattr(ep.dist, "version", None) or "", dist, ep.load)
        owner = owners.get(ep.name, dist)
        if owner != dist:  # refused by name, before its module is imported
            reason = (
                f"the distribution {dist} has an entry point {ep.name!r}, a plugin name that belongs to "
                f"the distribution {owner} (adcore-<name> owns <name>, as every first-party plugin "
                f"does). Uninstall it: pip uninstall {dist}"
            )
            refused.append((candidate, reason))
            continue
        wanted.append(candidate)
    wanted.sort(key=lambda c: (c.name not in owners, c.name, c.dist))
    wanted.insert(0, Candidate(ESSENTIAL, version(ESSENTIAL_DIST), ESSENTIAL_DIST, lambda: essential))
    wanted += [
        Candidate(name, "", "", functools.partial(lambda obj: obj, obj))
        for name, obj in by_hand.items()
        if name not in names("ADCORE_BLOCK_PLUGINS")
    ]
    kept: dict[str, Candidate] = {}
    for candidate in wanted:
        first = kept.get(candidate.name)
        if first is None:
            kept[candidate.name] = candidate
        elif first.dist != candidate.dist:  # (the same distribution seen twice on sys.path is one)
            where = f"the distribution {first.dist}" if first.dist else "registered by hand"
            fix = f"pip uninstall {candidate.dist}" if candidate.dist else "register it under another name"
            refused.append(
                (candidate, f"a plugin of the same name ({where}) loads first. Rename or remove one: {fix}")
            )
    return list(kept.values())


def normalize(dist: str) -> str:
    """A distribution's name as pip compares them (PEP 503): adcore_reverse is adcore-reverse."""
    return re.sub(r"[-_.]+", "-", dist).lower()


def version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return ""
