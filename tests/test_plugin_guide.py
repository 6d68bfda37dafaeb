"""docs/writing-an-op-plugin.md, followed literally: its files written, its commands run in a
fresh virtual environment, their output compared with the page's.

The page's blocks, in order: a block with a title (```python title="adcore-myops/..."```) is
a file, written at that path under a temporary directory; an untitled ```bash block is
commands, each line run as written by the shell in the plugin's directory (the one holding
its pyproject.toml); an untitled ```python block is a script, run by the environment's
python from another directory (so the plugin is imported as installed, not from its
source); a ```text block right after one of those is what it prints on stdout.

The environment is a venv with `--system-site-packages` and a .pth file adding this
environment's site directories (for tests run from a venv), so adcore and its first-party
plugins are the development install's, and `pip install -e .` installs the plugin into the
venv alone. The venv is made without pip: pip, adcore and pytest get console scripts there
that run them on the venv's python, as installing them into it would. pip's build isolation
takes setuptools from the index, or from the local wheels where pip's configuration has them
(find-links), as on these machines: there the test needs no network.

Outputs are compared line by line with trailing spaces dropped, and with one thing ignored:
the duration at the end of a summary line (`... in 0.9 s`, `16 passed in 2.78s`). Anything
else that differs (a plugin's counts of ops and rules as the catalogue grows) fails, naming
the command that rewrites the page's outputs: REGENERATE below.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import os
import re
import site
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "writing-an-op-plugin.md"
EXAMPLE = ROOT / "examples" / "adcore-special" / "adcore_special"
REGENERATE = "ADCORE_REGENERATE_GUIDE=1 python -m pytest tests/test_plugin_guide.py"
PUBLIC = {
    "adcore",
    "adcore.spec",
    "adcore.extend",
    "adcore.extend.sympy_functions",
    "adcore.numpy",
    "adcore.hookspecs",
}
SCRIPTS = ("pip", "adcore", "pytest")  # the commands the page runs, as the venv would have them
TIMING = re.compile(r" in \d+(\.\d+)? ?s$")
BLOCK = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', re.M | re.S)


@dataclass(frozen=True)
class Block:
    lang: str
    title: str
    code: str
    start: int  # offsets of the code in the page, to rewrite an output in place
    end: int


def blocks(text: str) -> list[Block]:
    return [Block(m[1], m[2] or "", m[3], m.start(3), m.end(3)) for m in BLOCK.finditer(text)]


def files(page: list[Block]) -> dict[str, str]:
    return {b.title: b.code for b in page if b.title}


def steps(page: list[Block]) -> list[tuple[Block, Block | None]]:
    """Each untitled bash or python block, with the text block that shows its output (or None)."""
    runs = [i for i, b in enumerate(page) if not b.title and b.lang in ("bash", "python")]
    return [
        (page[i], page[i + 1] if i + 1 < len(page) and page[i + 1].lang == "text" else None) for i in runs
    ]


def normalized(output: str) -> list[str]:
    return [TIMING.sub(" in <time>", line.rstrip()) for line in output.strip("\n").splitlines()]


# --- the page itself --------------------------------------------------------------------------


def test_the_guide_shows_a_whole_plugin_and_the_commands_that_install_and_check_it():
    page = blocks(GUIDE.read_text())
    shown = files(page)
    assert {"adcore-myops/pyproject.toml", "adcore-myops/adcore_myops/plugin.py"} <= set(shown)
    commands = [line for b, _ in steps(page) if b.lang == "bash" for line in b.code.splitlines()]
    assert commands[0] == "pip install -e ."
    assert "adcore plugins" in commands
    assert any(c.startswith("adcore conformance --op ") for c in commands)
    assert any(re.match(r"pytest .*--adcore-conformance=myops", c) for c in commands)


def test_everything_the_guide_imports_from_adcore_comes_from_a_public_module():
    modules = set()
    for title, code in files(blocks(GUIDE.read_text())).items():
        if title.endswith(".py"):
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.ImportFrom) and node.module.split(".")[0] == "adcore":
                    modules.add(node.module)
                elif isinstance(node, ast.Import):
                    modules.update(a.name for a in node.names if a.name.split(".")[0] == "adcore")
    assert modules and modules <= PUBLIC, modules - PUBLIC


def test_the_example_plugin_follows_the_guide():
    """examples/adcore-special has the guide's modules, and imports the helpers the guide does
    from adcore.extend instead of keeping copies."""
    guide = {Path(t).name for t in files(blocks(GUIDE.read_text())) if t.endswith(".py")}
    example = {p.name for p in EXAMPLE.glob("*.py")}
    assert guide <= example, guide - example
    rules, functions = (EXAMPLE / "sympy_rules.py").read_text(), (EXAMPLE / "sympy_functions.py").read_text()
    assert "from adcore.extend import LazyModule, each" in rules
    assert "from adcore.extend.sympy_functions import OpCall" in functions
    for copy in ("importlib", "def each", "class _", "Domain("):
        assert copy not in rules + functions + (EXAMPLE / "ops.py").read_text(), copy


# --- followed literally ------------------------------------------------------------------------


def venv_with_scripts(path: Path) -> Path:
    """A venv seeing this environment's packages, with console scripts for SCRIPTS; its bin dir."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(path)], check=True
    )
    # this environment's site directories, .pth files included (editable installs), also where the
    # tests run in a venv of their own, whose packages --system-site-packages would not show
    (site_packages,) = path.glob("lib/python*/site-packages")
    dirs = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    (site_packages / "this_environment.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs) + "\n"
    )
    bin_dir = path / "bin"
    for name in SCRIPTS:
        (script,) = entry_points(group="console_scripts", name=name)
        module, func = script.value.split(":")
        target = bin_dir / name
        target.write_text(
            f"#!{bin_dir / 'python'}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n"
        )
        target.chmod(0o755)
    return bin_dir


def clean_env(bin_dir: Path) -> dict[str, str]:
    """This process's environment with the venv first on PATH, less pytest's and adcore's switches."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ADCORE_")) and k != "PYTHONPATH"
    }
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(bin_dir.parent),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
    )
    return env


def run(command: list[str] | str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(
        command, cwd=cwd, env=env, shell=isinstance(command, str), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{command!r} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.slow
def test_following_the_guide_literally_installs_a_plugin_that_passes_conformance(tmp_path):
    text = GUIDE.read_text()
    page = blocks(text)
    for title, code in files(page).items():
        (tmp_path / title).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / title).write_text(code)
    (plugin_dir,) = {(tmp_path / t).parent for t in files(page) if t.endswith("pyproject.toml")}
    bin_dir = venv_with_scripts(tmp_path / "venv")
    env = clean_env(bin_dir)
    scripts = tmp_path / "scripts"
    scripts.mkdir()

    printed: dict[str, str] = {}  # what each step printed, by its code
    outputs: list[tuple[Block, str]] = []  # each shown output with what its step printed
    for number, (block, shown) in enumerate(steps(page)):
        if block.lang == "python":
            script = scripts / f"block{number}.py"
            script.write_text(block.code)
            stdout = run([str(bin_dir / "python"), str(script)], scripts, env).stdout
        else:
            lines = [line for line in block.code.splitlines() if line.strip() and not line.startswith("#")]
            stdout = "".join(run(line, plugin_dir, env).stdout for line in lines)
        printed[block.code.strip()] = stdout
        if shown is not None:
            outputs.append((shown, stdout))

    assert importlib.util.find_spec("adcore_myops") is None, "the guide's plugin leaked into this environment"
    plugins_table = printed["adcore plugins"]
    assert re.search(r"│ myops +│ 0\.1\.0 +│ ops, rules +│ 2 +│ 6 .*│ ok +│", plugins_table), plugins_table
    (conformance,) = [out for code, out in printed.items() if code.startswith("adcore conformance --op ")]
    assert conformance.rstrip().splitlines()[-1].startswith("PASSED: "), conformance

    stale = [(shown, out) for shown, out in outputs if normalized(shown.code) != normalized(out)]
    if stale and os.environ.get("ADCORE_REGENERATE_GUIDE") == "1":
        for shown, out in sorted(stale, key=lambda s: -s[0].start):
            text = (
                text[: shown.start]
                + "\n".join(line.rstrip() for line in out.strip("\n").splitlines())
                + "\n"
                + text[shown.end :]
            )
        GUIDE.write_text(text)
        stale = []
    diffs = [
        "\n".join(
            difflib.unified_diff(normalized(shown.code), normalized(out), "the page", "the run", lineterm="")
        )
        for shown, out in stale
    ]
    assert not diffs, (
        f"docs/writing-an-op-plugin.md shows other output than its commands print: run `{REGENERATE}`\n"
        + "\n".join(diffs)
    )
