"""The docs site builds with no warning, and the code blocks of every docs page run as written.

Each ```python block runs alone in a fresh process, as a new user pasting it would (tests/code_blocks.py):
it imports and defines what it uses, and cannot leak state (registered plugins) into other blocks or
into pytest. A block with a title (```python title="pkg/mod.py"```) shows a file: it is written there
for the blocks after it, not run.
```bash blocks: the `adcore` commands run, `pip install` lines must name what exists here.
"""

from __future__ import annotations

import html
import inspect
import os
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest
from code_blocks import Block, block_server, run, run_alone, undefined_names
from code_blocks import blocks as file_blocks

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
# What a block's print calls must print (its `# comments` say so), by block (page:n, the page's n-th
# python block), a few per page.
PRINTED = {
    "index.md:1": [
        "[0.         1.38177329 0.07700375]",  # sin x + x cos x at 0, 1, 2
        "(3, 3)\n[[1.0, 0.0], [0.0, 1.0]]",
    ],
    "index.md:2": [
        "forward [-0.010974 -0.171783  0.009198]\nnumeric [-0.010974 -0.171783  0.009198]",
        "reverse [-0.010974 -0.171783  0.009198]\nsource [-0.010974 -0.171783  0.009198]\n"
        "sparsity [1. 1. 1.]\nsymbolic [-0.010974 -0.171783  0.009198]",
    ],
    "index.md:3": ["TracerConversionError"],
    "backends.md:1": [
        "forward (array(5.5), array(1.71633781))\nnumeric (array(5.5), array(1.71633781))\n"
        "reverse (array(5.5), array(1.71633781))\nsource (array(5.5), array(1.71633781))\n"
        "sparsity (array(1.), array(1.))\n"
        "symbolic (array(5.5), array(1.71633781))",  # sparsity: a dependency pattern
    ],
    "backends.md:2": ["(array([1., 1., 1.]),)\n"],
    "backends.md:3": ["(100, 3)\n5.5\n"],
    "backends.md:4": ["True\n"],
    "backends.md:5": ["(x2 + 1/x1, x1 - cos(x2))\n"],
    "backends.md:6": [
        "-0.25 -0.9589242746631385\nreverse reverse -0.9589242746631385\nsymbolic forward -0.9589242746631385",
        "reverse numeric -0.95892427",  # numeric's outer derivative, to about 1e-10
        "\n12.0\n",
    ],
    "backends.md:7": ["InvalidInputError"],
    "architecture.md:1": ["[1.  0.8]\n[1.  0.8]\n"],  # arcsinh' on reverse and forward
    "complex.md:1": ["(6-8j)\n"],  # grad |z|^2 = 2 conj(z)
    "complex.md:2": ["(1+1j)\n"],  # descent along the conjugate
    "complex.md:3": ["(-1.1312043837568135+2.4717266720048188j)\nNotHolomorphicError\n"],
    "complex.md:4": ["complex128\n"],
    "complex.md:5": ["(-0.5-11j) (7.5-15j)\n"],  # jvp and vjp of a non-holomorphic f
    "complex.md:7": ["complex128\nInvalidValueError\n"],  # svd: phase-free, then phase-dependent
    "complex.md:8": [
        "InvalidOutputError\nInvalidOutputError\nComplexValueError\nUnsupportedByBackendError\nSymbolicComplexError\n"
    ],
    "kernels.md:5": ["[1. 1. 1.] [-1.]\n0.95\n"],  # OneCycleLR over two param groups
    "custom-rules.md:1": ["[1. 1. 1.]\n[5. 5. 5.]\n"],  # the clipping rule, the body
    "custom-rules.md:2": ["1.0\n1.0\n"],  # log1pexp's rule
    "vmap.md:2": ["(8, 3, 2) (8, 2)\nTrue"],
    "vmap.md:5": ["VmapFallbackWarning"],
    "vmap.md:8": ["[0.5 1. ]"],  # a doc op's rule
    "vmap.md:9": ["True\n(3, 4, 4)"],
    "source.md:1": [
        "(array(0.92860417), array(1.47024732), array(1.54245301))\n" * 2
    ],  # the source backend, the tape
    "source.md:5": ["[0.16666667 0.5        1.         0.83333333 0.5       ]"],  # in-place writes
    "source.md:6": ["SourceTransformError the source transformation cannot take try/except"],
    "pytrees.md:1": ["(3, 4) float64 ()"],
    "pytrees.md:2": ["ndarray (5, 4) train"],
    # nn.md: a model-shaped gradient, names and keys, backends agree, functional_call, hooks (pytorch#598's case)
    # coming-from.md: grad by argnums, elementwise_grad, a custom_vjp, per-example gradients, a torch-style loop
    "coming-from.md:1": [
        "5.5\n(array(5.5), array(1.71633781))\n11.652071455223084\n(array(5.5), array(1.71633781))\n"
    ],
    "coming-from.md:2": ["[1.         0.41997434]\n1.0\n"],
    "coming-from.md:3": ["(4, 3, 2)\n[[1. 0.]\n [0. 1.]]\n"],
    "coming-from.md:4": ["Sequential (4, 3)\n"],
    "nn.md:1": ["Sequential (8, 4)\nndarray float32\n"],
    "nn.md:2": [
        "['scale', 'fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']\n"
        "['scale', 'calls', 'fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']\n"
    ],
    "nn.md:3": ["True\n[(8, 4), (8,), (3, 8), (3,)]\n"],
    "nn.md:4": ["forward True\nsymbolic True\nsource True\n"],
    "nn.md:5": ["['0.bias', '0.weight', '2.bias', '2.weight']\n"],
    "nn.md:6": ["True\nTrue\n"],
    "nn.md:7": ["2 True\n"],
    "nn.md:8": ["(array([3., 4.]), array([1., 2.]), array([1., 1.]))\n[6. 8.]\nUnsupportedByBackendError\n"],
    "nn.md:9": ["True"],
    "nn.md:10": ["True"],
    # data.md: batches, a split, collation, SerializedList, the same batches with 2 workers, a worker's error
    "data.md:1": ["3\n(4, 2) (4,) float32 int64\n(4, 2) (4,) float32 int64\n(2, 2) (2,) float32 int64\n"],
    "data.md:2": ["8 2\n"],
    "data.md:3": ["(4, 2, 2) [3 3 3 3] ['a', 'a', 'a', 'a']\n"],
    "data.md:4": ["1000 {'id': 7, 'text': 'item 7'}\n"],
    "data.md:5": ["True\n"],
    "data.md:6": ["KeyError 'no item 5'"],
    "symbolic.md:1": ["-0.11079377 -0.17937937]", "S0 (-exp(-x)*sin(x) + exp(-x)*cos(x),)"],
    "numeric.md:1": ["richardson 4.053427893898627\ncomplex 4.053427893898621"],
    "numeric.md:2": [
        "4.053427893898627 2.5716299171720296e-12\n4.497780053946161 4.053427894005876 1.5515073271629374e-09"
    ],
    "numeric.md:3": [
        "Estimate(derivative=array(20.), error=array(1.62652501e-11))"
    ],  # log'(0.05), steps below 0 skipped
    "numeric.md:6": ["36.462854262572534"],  # on a Dask cluster, the same bits as without it
    "distributed.md:1": ["True\n"],  # data-parallel training = one-process training, to 1e-12
    "numeric.md:7": ["0.5 0.0"],  # relu'(0): numeric's central difference, the convention
    "check-grads.md:2": [  # the report, as the page shows it
        "forward: jacobian, jvp, second by forward, second by reverse\n"
        "numeric: jacobian, second, numeric over numeric\n"
        "reverse: jacobian, vjp, second by forward, second by reverse\n"
        "source: jacobian, vjp, second by forward, second by reverse\n"
        "symbolic: jacobian, second by forward, second by reverse\n"
        "order 1 reference: symbolic = reverse = forward\n"
        "order 2 reference: symbolic = reverse = forward\n"
    ],
}


def blocks(page: str) -> list[Block]:
    """The fenced blocks of docs/page."""
    return file_blocks(DOCS, page)


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


def runs_here(b: Block) -> bool:
    """A python block this test runs: not a file's text (titled), not excused by NOT_RUN."""
    excused = any(p == b.page and b.first_line.startswith(f) for p, f in NOT_RUN)
    return b.lang == "python" and not b.title and not excused


def python_blocks() -> list:
    """One param per python block run here, id page:n (the page's n-th python block)."""
    pages = [p for p in PAGES if p not in RUN_ELSEWHERE]
    return [pytest.param(b, id=b.id) for page in pages for b in blocks(page) if runs_here(b)]


@pytest.mark.parametrize("page", RUN_ELSEWHERE)
def test_pages_not_run_here_are_run_by_their_test(page):
    assert page in (ROOT / RUN_ELSEWHERE[page]).read_text(), (
        f"{RUN_ELSEWHERE[page]} does not name docs/{page}"
    )


@pytest.mark.parametrize("block", python_blocks())
def test_python_block_runs_alone_and_prints_what_it_says(block: Block, tmp_path, server):
    result = run_alone(block, blocks(block.page), tmp_path, server)
    assert result.returncode == 0, (
        f"docs/{block.page}'s block at line {block.line}, run alone in a fresh interpreter "
        f"(the script's line numbers are the page's):\n{result.stderr[-4000:]}"
    )
    for expected in PRINTED.get(block.id, []):
        assert expected in result.stdout, (
            f"docs/{block.page}:{block.line}: {expected!r} not printed:\n{result.stdout}"
        )


def test_no_block_uses_a_name_it_does_not_define_or_import(tmp_path):
    # the fresh process proves it for the code a block runs; this, for the code it only defines
    found = undefined_names([param.values[0] for param in python_blocks()], tmp_path)
    assert not found, "a block pasted alone would raise NameError:\n" + "\n".join(found)


def test_every_printed_expectation_names_a_block_run_here():
    # an expectation whose block was moved, merged or excused would check nothing: keep PRINTED honest
    ids = {param.id for param in python_blocks()}
    assert not set(PRINTED) - ids, f"PRINTED names blocks not run here: {sorted(set(PRINTED) - ids)}"


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


def page_block(code: str, line: int = 7) -> Block:
    """A python block of a made-up page, its code starting at the page's given line."""
    return Block("made-up.md", line, "python", "", code, number=1)


PROBE = """\
import atexit
import os
import sys

atexit.register(print, "at exit")  # the interpreter's own exit runs it
main = sys.modules["__main__"]
print(main is sys.modules[__name__], sorted((k, type(v).__name__) for k, v in vars(main).items()))
print(__file__, __spec__, __cached__, sys.argv, sys.orig_argv, sys.path, os.getcwd(), sys.stdout.isatty())
print(undefined_name)
"""


def test_the_block_server_runs_a_block_as_a_fresh_interpreter_does(server, tmp_path):
    if server is None:
        pytest.skip("no block server off Linux: blocks run in a cold interpreter")
    block = page_block(PROBE)
    cold, forked = run_alone(block, [], tmp_path), run_alone(block, [], tmp_path, server)
    assert (forked.returncode, forked.stdout, forked.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    # the name it does not define fails it, at the page's line (the block's 9th)
    assert forked.returncode == 1 and "at exit" in forked.stdout, forked
    assert f'block_made_up_1.py", line {block.line + 8}, in <module>\n' in forked.stderr, forked.stderr
    assert forked.stderr.endswith("NameError: name 'undefined_name' is not defined\n"), forked.stderr
    for code, status, stderr in [
        ("raise SystemExit(3)\n", 3, ""),
        ("import sys\nsys.exit('no')\n", 1, "no\n"),
    ]:
        result = run_alone(page_block(code), [], tmp_path, server)
        assert (result.returncode, result.stdout, result.stderr) == (status, "", stderr)


def test_a_block_run_by_the_server_leaves_nothing_for_the_next(server, tmp_path):
    if server is None:
        pytest.skip("no block server off Linux: blocks run in a cold interpreter")
    leaks = page_block(
        "import numpy as np\nimport adcore\nfrom adcore.plugins import register_plugin\n\n"
        "np.leaked = adcore.leaked = 1\nregister_plugin(object(), 'leaked_plugin')\n"
        "print(adcore.check_grads.__name__, adcore.grad(np.sin)(0.0))\n"
    )
    assert run_alone(leaks, [], tmp_path, server).stdout == "check_grads 1.0\n"
    looks = page_block(
        "import os\nimport sys\n\nimport numpy as np\nimport adcore\nimport adcore.plugins\n\n"
        "print(hasattr(np, 'leaked'), hasattr(adcore, 'leaked'), adcore.plugins._by_hand)\n"
        "print(adcore.plugins._registry, 'adcore.conformance' in sys.modules, 'numpy' in sys.modules)\n"
        "print(os.getppid(), os.environ['PYTEST_CURRENT_TEST'])\n"
    )
    # the server had imported numpy and adcore, and built no registry: nothing else a block can see
    # forked from the server, with this test's environment
    test = os.environ["PYTEST_CURRENT_TEST"]
    expected = f"False False {{}}\nNone False True\n{server.process.pid} {test}\n"
    assert run_alone(looks, [], tmp_path, server).stdout == expected


def test_the_block_server_forks_the_blocks_and_exits_when_closed(tmp_path):
    if sys.platform != "linux":
        pytest.skip("no block server off Linux: blocks run in a cold interpreter")
    server = block_server()
    result = run_alone(page_block("import os\n\nprint(os.getpid(), os.getppid())\n"), [], tmp_path, server)
    pid, parent = map(int, result.stdout.split())
    server.close()
    assert parent == server.process.pid and server.process.returncode == 0
    with pytest.raises(ProcessLookupError):  # the block's process was reaped, not left behind
        os.kill(pid, 0)
