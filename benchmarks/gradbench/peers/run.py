"""Start one of GradBench's own Python tools, with adcore's comparison modules filling in the evals it lacks.

Usage: `python peers/run.py TOOL [the tool's own options]`, TOOL one of pytorch, jax, jax-jacfwd.

pytorch and jax run GradBench's `tools/<tool>/run.py` `main()` with sys.path starting
[GradBench's tool dir, peers/<tool>/], so GradBench's module for an eval wins where it exists and
ours (written for adcore's comparison) serves the rest. jax-jacfwd runs the jax tool's `main()`
with only peers/jax_jacfwd/ in front: forward-mode (`jax.jacfwd`) modules, so an eval it has no
module for fails at define rather than falling back to GradBench's reverse-mode jax code; it
reports itself as "jax-jacfwd".
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import TextIO

HERE = Path(__file__).resolve().parent
UPSTREAM_TOOLS = HERE.parent / "upstream" / "python" / "gradbench" / "gradbench" / "tools"

# tool name -> (GradBench tool whose main() runs, directories put first on sys.path, in order)
TOOLS: dict[str, tuple[str, list[Path]]] = {
    "pytorch": ("pytorch", [UPSTREAM_TOOLS / "pytorch", HERE / "pytorch"]),
    "jax": ("jax", [UPSTREAM_TOOLS / "jax", HERE / "jax"]),
    "jax-jacfwd": ("jax", [HERE / "jax_jacfwd"]),
}


def time_compiled_and_ready() -> None:
    """Make GradBench's timing wrappers time JAX's compiled function, to the end of its work.

    GradBench's jax modules time `function(input)`, which returns once the work is queued (JAX
    dispatches asynchronously on CPU too), and whose first call at a new input shape compiles
    (0.4-8 s here, longer than the runner's --min-seconds, so the minimum was often the compile).
    Here each input is run once untimed in `pre` (the compile, as GradBench's pytorch lse runs its
    graph once at import), and every timed call ends with `jax.block_until_ready`; outputs are unchanged.
    """
    import jax
    from gradbench import wrap

    def blocking(decorate):
        def decorator(**options):
            def wrap_function(function):
                def ready(input):
                    return jax.block_until_ready(function(input))

                def prepared_and_compiled(raw):
                    input = options["pre"](raw)
                    ready(input)
                    return input

                wrapped = decorate(**(options | {"pre": prepared_and_compiled}))(ready)
                wrapped.function = function
                return wrapped

            return wrap_function

        return decorator

    wrap.function = blocking(wrap.function)
    wrap.multiple_runs = blocking(wrap.multiple_runs)


class RenamingStdout:
    """A stdout that rewrites the start response's tool name (GradBench's main() hard-codes it)."""

    def __init__(self, stream: TextIO, upstream_name: str, name: str) -> None:
        self.stream = stream
        self.old = f'"tool": "{upstream_name}"'
        self.new = f'"tool": "{name}"'

    def write(self, text: str) -> int:
        return self.stream.write(text.replace(self.old, self.new))

    def flush(self) -> None:
        self.stream.flush()


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TOOLS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(TOOLS)}}} [tool options]")
    name = sys.argv[1]
    upstream_name, front = TOOLS[name]
    # sys.path[0] is peers/ itself; drop it, so peers/jax cannot shadow the jax package.
    sys.path[:1] = [str(path) for path in front]
    sys.argv = [sys.argv[0], *sys.argv[2:]]
    if upstream_name == "jax":
        time_compiled_and_ready()
    if name != upstream_name:
        sys.stdout = RenamingStdout(sys.stdout, upstream_name, name)
    importlib.import_module(f"gradbench.tools.{upstream_name}.run").main()


if __name__ == "__main__":
    main()
