"""to_dot: the recorded graph under a Tensor as Graphviz source (nodes carry their op names)."""

from __future__ import annotations

from adcore_reverse.tensor import Tensor


def to_dot(root: Tensor) -> str:
    """Graphviz DOT source of the graph that produced `root`: one box per op, one ellipse per leaf."""
    lines = ["digraph adcore {", "  rankdir=LR;"]
    seen = {root._seq}
    stack = [root]
    while stack:
        t = stack.pop()
        shape = "x".join(map(str, t.shape)) or "scalar"
        if t._op is None:
            label = f"leaf {shape}" + (" (requires_grad)" if t.requires_grad else "")
            lines.append(f'  t{t._seq} [shape=ellipse, label="{label}"];')
        else:
            lines.append(f'  t{t._seq} [shape=box, label="{t._op.name}\\n{shape}"];')
        for a in t._args or ():
            if isinstance(a, Tensor) and a._trace is t._trace:
                lines.append(f"  t{a._seq} -> t{t._seq};")
                if a._seq not in seen:
                    seen.add(a._seq)
                    stack.append(a)
    lines.append("}")
    return "\n".join(lines) + "\n"
