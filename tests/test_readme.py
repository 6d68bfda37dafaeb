"""The README's Python examples run as written, each alone in a fresh interpreter, and print what their
comments say; its Quickstart is the two commands CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from code_blocks import Block, blocks, run_alone, undefined_names

README = Path(__file__).resolve().parents[1] / "README.md"
PYTHON_BLOCKS = [b for b in blocks(README.parent, README.name) if b.lang == "python"]

# What each block's print calls must print, by block (README.md:n, the n-th python block).
PRINTED = {
    # the seed example's gradient, the jvp's value and tangent, its Hessian (d2f/dx1^2 = -1/x1^2, mixed = 1,
    # d2f/dx2^2 = sin(x2)), vmap of grad: 3 w**2 for each row
    "README.md:1": [
        "(array(5.5), array(1.71633781))",
        "11.652071455223084",
        "array(5.5)",
        "array(-0.25)",
        "array(-0.95892427)",
        "[[ 3. 12.]\n [27. 48.]]",
    ],
    # pytrees with has_aux, hvp of sum(v**4) at ones (12 v^2), a custom_jvp rule where the body overflows
    "README.md:2": ["['b', 'w'] (3,)", "[12. 12.]", "1.0 1.0"],
    # plain NumPy linear algebra: the GP NLML's gradient (torch: -0.1654, 0.4729, 1.5823), einsum
    "README.md:3": ["[-0.165432  0.472937  1.582275]", "\n1.0\n"],
    # numeric: Richardson to about 14 digits with its error estimate, the complex step exact
    "README.md:4": ["4.05342789389862", "4.053427893898621"],
    # symbolic: the seed's derivatives as expressions, and a loss over a million points
    "README.md:5": [
        "(x2 + 1/x1, x1 - cos(x2))",
        "(array(5.5), array(1.71633781))",
        "[-1.00000e-06 -9.99998e-07]",
    ],
    # complex (JAX's convention): grad |z|^2 = 2 conj(z), exp holomorphic, an fft filter's gradient
    "README.md:6": ["(6.000000000000001-8j)", "(0.5403023058681398+0.8414709848078965j)", "(64,)"],
    # a fit through scipy.stats, SciPy's ufuncs as written
    "README.md:7": ["(array(-1.6), array(2.3))", "0.1554202632022"],
    # a sparse Jacobian from 3 JVP directions, the stencil's pattern
    "README.md:8": ["csr_array (998, 1000) 2994", "[1 1 1 0 0]"],
    # the eager Tensor gradients
    "README.md:9": ["500.0 1000.0"],
    "README.md:10": ["(4, 3, 3, 3)"],
    # adcore_nn: a model trained from a DataLoader's batches, its gradient shaped like the model
    "README.md:11": ["Sequential (16, 3)"],
}


def test_every_printed_expectation_names_a_block():
    assert len(PYTHON_BLOCKS) >= 2
    assert not set(PRINTED) - {b.id for b in PYTHON_BLOCKS}, sorted(
        set(PRINTED) - {b.id for b in PYTHON_BLOCKS}
    )


def test_no_block_uses_a_name_it_does_not_define_or_import(tmp_path: Path):
    found = undefined_names(PYTHON_BLOCKS, tmp_path)
    assert not found, "a block pasted alone would raise NameError:\n" + "\n".join(found)


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in PYTHON_BLOCKS])
def test_readme_block_runs_alone_and_prints_the_commented_values(block: Block, tmp_path: Path, server):
    result = run_alone(block, PYTHON_BLOCKS, tmp_path, server)
    assert result.returncode == 0, (
        f"README.md's block at line {block.line}, run alone in a fresh interpreter "
        f"(the script's line numbers are the README's):\n{result.stderr[-4000:]}"
    )
    for expected in PRINTED.get(block.id, []):
        assert expected in result.stdout, (
            f"README.md:{block.line}: {expected!r} not printed:\n{result.stdout}"
        )


def quickstart_commands(readme: str) -> list[str]:
    """The commands of the README's Quickstart block after the clone, comments stripped."""
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S).group(1)
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    commands = [line for line in lines if line]
    assert commands[0].startswith("git clone"), "the Quickstart starts from the clone"
    return commands[1:]


def test_the_quickstart_is_two_commands_after_the_clone_and_ci_runs_both():
    commands = quickstart_commands(README.read_text())
    assert commands == ["pip install -r requirements-dev.txt && adcore conformance", "python -m pytest"]
    ci_lines = [line.strip() for line in (README.parent / ".ci" / "run").read_text().splitlines()]
    for command in commands:
        assert command in ci_lines, f".ci/run does not run the README's {command!r} as written"


def test_the_quickstart_clones_into_a_folder_that_cannot_shadow_a_package():
    """Python run from the folder above a clone named `adcore` imports the clone as a namespace
    package (no __init__.py), before the installed one: `module 'adcore' has no attribute 'grad'`."""
    section = README.read_text().split("## Quickstart", 1)[1]
    clone = re.search(r"git clone \S+(?: \S+)* (\S+) && cd (\S+)", section)
    assert clone is not None and clone.group(1) == clone.group(2), "the Quickstart clones, then cds into it"
    assert not clone.group(1).isidentifier(), f"{clone.group(1)!r} could be imported as a package"


def test_the_quickstart_parser_sees_a_third_command(tmp_path: Path):
    readme = "## Quickstart\n\n```bash\ngit clone x && cd x\na  # one\nb\nc\n```\n\n## Next\n"
    assert quickstart_commands(readme) == ["a", "b", "c"]
