"""The README's Python examples run as written and print what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples_run_and_print_the_commented_values():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)
    printed = out.getvalue()
    # the seed example's gradient, the eager Tensor gradients, the jvp's value and tangent
    for expected in ["(array(5.5), array(1.71633781))", "500.0 1000.0", "11.652071455223084", "array(5.5)"]:
        assert expected in printed, f"{expected!r} not in README output:\n{printed}"
    # the Hessian of the seed example: d2f/dx1^2 = -1/x1^2, mixed = 1, d2f/dx2^2 = sin(x2)
    assert "array(-0.25)" in printed and "array(-0.95892427)" in printed
    # pytrees with has_aux, hvp of sum(v**4) at ones (12 v^2), a custom_jvp rule where the body overflows
    assert "['b', 'w'] (3,)" in printed and "[12. 12.]" in printed and "1.0 1.0" in printed
    # plain NumPy linear algebra: the GP NLML's gradient (torch: -0.1654, 0.4729, 1.5823), einsum
    assert "[-0.165432  0.472937  1.582275]" in printed and "\n1.0\n" in printed
    # numeric: Richardson to about 14 digits with its error estimate, the complex step exact
    assert "4.05342789389862" in printed and "4.053427893898621" in printed
    # symbolic: the seed's derivatives as expressions, and a loss over a million points
    assert "(x2 + 1/x1, x1 - cos(x2))" in printed and "[-1.00000e-06 -9.99998e-07]" in printed
    # complex (JAX's convention): grad |z|^2 = 2 conj(z), exp holomorphic; a fit through scipy.stats
    assert "(6.000000000000001-8j)" in printed and "(0.5403023058681398+0.8414709848078965j)" in printed
    assert "(array(-1.6), array(2.3))" in printed and "0.1554202632022" in printed
    # vmap of grad: 3 w**2 for each row
    assert "[[ 3. 12.]\n [27. 48.]]" in printed
    # adcore_nn: a model trained from a DataLoader's batches, its gradient shaped like the model
    assert "Sequential (16, 3)" in printed


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


def test_the_quickstart_parser_sees_a_third_command(tmp_path: Path):
    readme = "## Quickstart\n\n```bash\ngit clone x && cd x\na  # one\nb\nc\n```\n\n## Next\n"
    assert quickstart_commands(readme) == ["a", "b", "c"]
