"""The docs site builds with no warning, and the code blocks of every docs page run as written.

Each page's ```python blocks run in order in one fresh process (a script in a temporary
directory, each block at its own line of the page, so a traceback's line is the page's), so
pages cannot leak state (registered plugins) into each other or into pytest. A block with a
title (```python title="pkg/mod.py"```) shows a file: it is written there first, not run.
```bash blocks: the `adcore` commands run, `pip install` lines must name what exists here.
"""

from __future__ import annotations

import html
import inspect
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import adcore
from adcore import hookspecs
from adcore.conformance.check_grads import check_grads

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
DISTRIBUTIONS = [
    ROOT / "pyproject.toml",
    *ROOT.glob("plugins/*/pyproject.toml"),
    *ROOT.glob("examples/*/pyproject.toml"),
]
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))

# Pages whose blocks another test runs: it follows the page literally (writes its files, installs, runs).
RUN_ELSEWHERE = {
    "writing-an-op-plugin.md": "tests/test_plugin_guide.py",
    "gradbench.md": "tests/benchmarks/gradbench/test_run.py",  # --quick; the 20-minute --compare is run by hand
}
# Blocks that cannot run, by page and first line, with the reason.
NOT_RUN = {
    ("check-grads.md", "adcore.check_grads(f, args, order=2,"): "a signature, not a call",
}
# What the pages' print calls must print (their `# comments` say so), a few per page.
PRINTED = {
    "index.md": [
        "[0.         1.38177329 0.07700375]",  # sin x + x cos x at 0, 1, 2
        "(3, 3)\n[[1.0, 0.0], [0.0, 1.0]]",
        "forward [-0.010974 -0.171783  0.009198]\nnumeric [-0.010974 -0.171783  0.009198]",
        "reverse [-0.010974 -0.171783  0.009198]\nsource [-0.010974 -0.171783  0.009198]\n"
        "sparsity [1. 1. 1.]\nsymbolic [-0.010974 -0.171783  0.009198]",
        "TracerConversionError",
    ],
    "backends.md": [
        "forward (array(5.5), array(1.71633781))\nnumeric (array(5.5), array(1.71633781))\n"
        "reverse (array(5.5), array(1.71633781))\nsource (array(5.5), array(1.71633781))\n"
        "sparsity (array(1.), array(1.))\n"
        "symbolic (array(5.5), array(1.71633781))",  # sparsity: a dependency pattern
        "(array([1., 1., 1.]),)\n(100, 3)\n5.5\nTrue\n(x2 + 1/x1, x1 - cos(x2))\n",
        "-0.25 -0.9589242746631385\nreverse reverse -0.9589242746631385\nsymbolic forward -0.9589242746631385",
        "reverse numeric -0.95892427",  # numeric's outer derivative, to about 1e-10
        "\n12.0\nInvalidInputError",
    ],
    "custom-rules.md": ["[1. 1. 1.]\n[5. 5. 5.]\n1.0\n1.0\n"],  # the clipping rule, the body; log1pexp's rule
    "vmap.md": [
        "(8, 3, 2) (8, 2)\nTrue",
        "VmapFallbackWarning",
        "[0.5 1. ]",
        "True\n(3, 4, 4)",
    ],  # a doc op's rule
    "source.md": [
        "(array(0.92860417), array(1.47024732), array(1.54245301))\n" * 2,  # the source backend, the tape
        "[0.16666667 0.5        1.         0.83333333 0.5       ]",  # in-place writes
        "SourceTransformError the source transformation cannot take try/except",
    ],
    "pytrees.md": ["(3, 4) float64 ()", "ndarray (5, 4) train"],
    "nn.md": [  # a model-shaped gradient, names and keys, backends agree, functional_call, hooks (pytorch#598's case)
        "Sequential (8, 4)\nndarray float32\n['scale', 'fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']\n"
        "['scale', 'calls', 'fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']\nTrue\n[(8, 4), (8,), (3, 8), (3,)]\n"
        "forward True\nsymbolic True\nsource True\n['0.bias', '0.weight', '2.bias', '2.weight']\nTrue\nTrue\n2 True\n",
        "(array([3., 4.]), array([1., 2.]), array([1., 1.]))\n[6. 8.]\nUnsupportedByBackendError\nTrue\nTrue",
    ],
    "data.md": [  # batches, a split, collation, SerializedList, the same batches with 2 workers, a worker's error
        "3\n(4, 2) (4,) float32 int64\n(4, 2) (4,) float32 int64\n(2, 2) (2,) float32 int64\n8 2\n",
        "(4, 2, 2) [3 3 3 3] ['a', 'a', 'a', 'a']\n1000 {'id': 7, 'text': 'item 7'}\nTrue\nKeyError 'no item 5'",
    ],
    "symbolic.md": ["-0.11079377 -0.17937937]", "S0 (-exp(-x)*sin(x) + exp(-x)*cos(x),)"],
    "numeric.md": [
        "richardson 4.053427893898627\ncomplex 4.053427893898621",
        "4.053427893898627 2.5716299171720296e-12\n4.497780053946161 4.053427894005876 1.5515073271629374e-09",
        "Estimate(derivative=array(20.), error=array(1.62652501e-11))",  # log'(0.05), steps below 0 skipped
        "36.462854262572534",  # on a Dask cluster, the same bits as without it
        "0.5 0.0",  # relu'(0): numeric's central difference, the convention
    ],
    "check-grads.md": [  # the report, as the page shows it
        "forward: jacobian, jvp, second by forward, second by reverse\n"
        "numeric: jacobian, second, numeric over numeric\n"
        "reverse: jacobian, vjp, second by forward, second by reverse\n"
        "source: jacobian, vjp, second by forward, second by reverse\n"
        "symbolic: jacobian, second by forward, second by reverse\n"
        "order 1 reference: symbolic = reverse = forward\n"
        "order 2 reference: symbolic = reverse = forward\n"
    ],
}


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # the line of the block's first line of code in the page
    lang: str
    title: str
    code: str

    @property
    def first_line(self) -> str:
        return self.code.lstrip("\n").partition("\n")[0]


FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)(?P<info>.*)$")


def blocks(page: str) -> list[Block]:
    """The fenced blocks of a page, indented ones (in a list item) dedented."""
    lines = (DOCS / page).read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        i += 1
        if not m:
            continue
        indent = len(m["indent"])
        start, close = i, re.compile(rf"^ {{{indent}}}```\s*$")
        while not close.match(lines[i]):
            i += 1
        title = re.search(r'title="([^"]+)"', m["info"])
        code = "\n".join(line[indent:] for line in lines[start:i]) + "\n"
        found.append(Block(page, start + 1, m["lang"], title[1] if title else "", code))
        i += 1
    return found


def run(cmd: list[str] | str, cwd: Path, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLBACKEND": "Agg", "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, **kw)


def test_every_fenced_block_has_a_language():
    unlabelled = [f"{b.page}:{b.line - 1}" for page in PAGES for b in blocks(page) if not b.lang]
    assert not unlabelled, f"fenced blocks without a language (python, bash, text, ...): {unlabelled}"


def test_mkdocs_build_strict_passes_and_renders_the_docstrings(tmp_path):
    # strict, with mkdocs.yml's validation: a page left out of the nav, a broken link or anchor fails it
    result = run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")], ROOT)
    assert result.returncode == 0 and "WARNING" not in result.stderr, result.stderr
    documented = {
        "api/adcore": [
            adcore.grad,
            adcore.hessian,
            adcore.hvp,
            adcore.custom_vjp,
            adcore.checkpoint,
            check_grads,
        ],
        "api/spec": [adcore.OpSpec, adcore.Domain],
        "api/extend": [adcore.unbroadcast],
        "api/hookspecs": [hookspecs.adcore_register_rules],
    }
    for page, objects in documented.items():
        text = html.unescape(re.sub(r"<[^>]+>", "", (tmp_path / "site" / page / "index.html").read_text()))
        text = re.sub(r"\s+", " ", text)
        for obj in objects:
            first_line = inspect.getdoc(obj).partition("\n")[0].replace("`", "")
            assert first_line in text, f"{obj.__qualname__}'s docstring is not on {page}: {first_line!r}"


def page_script(page: str, tmp_path: Path) -> str:
    """The page's python blocks as one script, each at its own line; titled blocks written as files."""
    lines: list[str] = []
    for b in blocks(page):
        if b.lang != "python" or any(p == page and b.first_line.startswith(f) for p, f in NOT_RUN):
            continue
        if b.title:
            (tmp_path / b.title).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / b.title).write_text(b.code)
            continue
        lines += [""] * (b.line - 1 - len(lines))
        lines += b.code.splitlines()
    return "\n".join(lines) + "\n"


def python_pages() -> list[str]:
    return [p for p in PAGES if p not in RUN_ELSEWHERE and any(b.lang == "python" for b in blocks(p))]


@pytest.mark.parametrize("page", RUN_ELSEWHERE)
def test_pages_not_run_here_are_run_by_their_test(page):
    assert page in (ROOT / RUN_ELSEWHERE[page]).read_text(), (
        f"{RUN_ELSEWHERE[page]} does not name docs/{page}"
    )


@pytest.mark.parametrize("page", python_pages())
def test_python_blocks_run_and_print_what_they_say(page, tmp_path):
    script = tmp_path / f"docs_{Path(page).stem.replace('-', '_')}.py"
    script.write_text(page_script(page, tmp_path))
    result = run([sys.executable, script.name], tmp_path)
    assert result.returncode == 0, (
        f"docs/{page} (the script's line numbers are the page's):\n{result.stderr[-4000:]}"
    )
    for expected in PRINTED.get(page, []):
        assert expected in result.stdout, f"docs/{page}: {expected!r} not printed:\n{result.stdout}"


def test_not_run_blocks_exist():
    # an entry of NOT_RUN whose block was edited away would excuse nothing: keep the list honest
    for page, first in NOT_RUN:
        assert any(b.first_line.startswith(first) for b in blocks(page)), (page, first)


def narrowed(command: str) -> str:
    """A whole-suite `adcore conformance` on one op (the whole suite is the README's main command,
    which CI runs), random programs capped at 2: the same flags, in seconds instead of minutes."""
    if command.startswith("adcore conformance") and not re.search(r"--(op|case)\b", command):
        command += " --op sin"
    return re.sub(r"--fuzz \d+", "--fuzz 2", command)


def check_pip_install(line: str) -> None:
    """Each path, requirements file or distribution a `pip install` line names exists here, with its extras."""
    words = shlex.split(line, comments=True)[2:]
    for i, word in enumerate(words):
        if word.startswith("-") or (i and words[i - 1] == "-r"):
            if word == "-r":
                assert (ROOT / words[i + 1]).is_file(), f"{line}: no {words[i + 1]} in the repository"
            continue
        target, _, extras = word.partition("[")
        extras = set(filter(None, re.split(r"[,\]\s]+", extras)))
        pyprojects = [p for p in [ROOT / target / "pyproject.toml"] if p.is_file()] or [
            p for p in DISTRIBUTIONS if tomllib.loads(p.read_text())["project"]["name"] == target
        ]
        assert pyprojects, f"{line}: {target!r} is neither a directory nor a distribution of this repository"
        offered = tomllib.loads(pyprojects[0].read_text())["project"].get("optional-dependencies", {})
        assert extras <= set(offered), f"{line}: {target} has no extra {extras - set(offered)}"


def bash_commands() -> list:
    """One param per command line of the pages' ```bash blocks, id page:line."""
    found = []
    for page in PAGES:
        for b in blocks(page) if page not in RUN_ELSEWHERE else []:
            for offset, line in enumerate(b.code.splitlines() if b.lang == "bash" else []):
                if command := line.partition("  #")[0].strip():
                    found.append(pytest.param(command, id=f"{page}:{b.line + offset}"))
    return found


@pytest.mark.parametrize("command", bash_commands())
def test_bash_commands_run(command, tmp_path):
    if command.startswith("pip install"):
        check_pip_install(command)
        return
    assert command.startswith("adcore "), (
        f"only adcore and pip install commands are checked here: {command!r}"
    )
    (tmp_path / "docs").mkdir()  # for `adcore rules --markdown > docs/ops.md`
    result = run(narrowed(command), tmp_path, shell=True)
    assert result.returncode == 0, (
        f"{narrowed(command)!r} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    )


def test_toml_blocks_parse():
    for page in PAGES:
        for b in blocks(page):
            if b.lang == "toml":
                tomllib.loads(b.code)
