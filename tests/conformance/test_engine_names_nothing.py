"""The conformance engine names no backend and no op: what a backend can do is data on its class,
an op's kinks and kink distances are data on its OpSpec, the fuzzer's catalogue is read off the
ops' samples. So a third-party backend or op is checked exactly as a first-party one."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import adcore
from adcore.plugins import get_registry

CONFORMANCE = Path(adcore.__file__).parent / "conformance"


def _quoted_names(path: Path, names: set[str]) -> list[str]:
    """Every string literal of the file that is one of `names`, or holds one quoted ("reverse"
    inside an f-string or a docstring), as 'line: literal'."""
    quoted = re.compile(r"([\"'])(?:" + "|".join(map(re.escape, sorted(names))) + r")\1")
    found = []
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type != tokenize.STRING:
            continue
        body = token.string.lstrip("rbfuRBFU")
        if body.strip("'\"") in names or quoted.search(body[1:-1]):
            found.append(f"{token.start[0]}: {token.string[:80]}")
    return found


def test_no_module_of_the_conformance_engine_names_a_backend_or_an_op():
    registry = get_registry()
    names = (
        set(registry.backends) | set(registry.ops) | {a for op in registry.ops.values() for a in op.aliases}
    )
    modules = sorted(CONFORMANCE.glob("*.py"))
    assert {p.name for p in modules} >= {"engine.py", "checks.py", "reference.py", "calls.py", "fuzz.py"}
    found = {p.name: hits for p in modules if (hits := _quoted_names(p, names))}
    assert found == {}


def test_the_grep_sees_a_name_as_a_literal_or_quoted_inside_one(tmp_path):
    source = tmp_path / "planted.py"
    source.write_text(
        'OUTER = "forward"\n'
        "NOTE = 'forwarding is fine'\n"
        "CALL = f'adcore.jacobian(f, backend=\"forward\")'\n"
    )
    assert [hit.split(":")[0] for hit in _quoted_names(source, {"forward"})] == ["1", "3"]
