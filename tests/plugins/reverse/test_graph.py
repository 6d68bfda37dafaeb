"""to_dot: the recorded graph as Graphviz source, one box per op, one ellipse per leaf."""

from __future__ import annotations

import re

import numpy as np
from adcore_reverse import Tensor, to_dot

NODE = re.compile(r"^\s*(t\d+) \[shape=(box|ellipse), label=\"([^\"]*)\"\];$", re.M)
EDGE = re.compile(r"^\s*(t\d+) -> (t\d+);$", re.M)


def _parse(dot):
    nodes = {name: (shape, label) for name, shape, label in NODE.findall(dot)}
    edges = EDGE.findall(dot)
    return nodes, edges


def test_is_a_digraph():
    x = Tensor(1.0, requires_grad=True)
    dot = to_dot(np.sin(x))
    assert dot.startswith("digraph adcore {")
    assert dot.rstrip().endswith("}")
    assert dot.count("{") == dot.count("}") == 1


def test_small_graph_nodes_edges_and_op_names():
    # y = sin(x) · x + 1: leaf x; ops sin, multiply, add; edges x→sin, sin→mul, x→mul, mul→add
    x = Tensor(0.5, requires_grad=True)
    y = np.sin(x) * x + 1.0
    nodes, edges = _parse(to_dot(y))
    assert len(nodes) == 4
    assert len(edges) == 4
    assert sorted(label.split("\\n")[0] for shape, label in nodes.values() if shape == "box") == [
        "add",
        "multiply",
        "sin",
    ]
    leaves = [label for shape, label in nodes.values() if shape == "ellipse"]
    assert leaves == ["leaf scalar (requires_grad)"]
    # every edge joins declared nodes, and the root has no outgoing edge
    assert all(a in nodes and b in nodes for a, b in edges)
    root = next(name for name, (_, label) in nodes.items() if label.startswith("add"))
    assert all(a != root for a, _ in edges)


def test_each_node_is_declared_once_even_when_reached_twice():
    # y = a·b + a·c: a is an input of two ops
    a, b, c = (Tensor(v, requires_grad=True) for v in (1.0, 2.0, 3.0))
    dot = to_dot(a * b + a * c)
    nodes, edges = _parse(dot)
    declared = [name for name, _, _ in NODE.findall(dot)]
    assert len(declared) == len(set(declared)) == 6  # 3 leaves, 2 multiplies, 1 add
    assert len(edges) == 6


def test_labels_carry_shapes_and_constant_tensors_are_plain_leaves():
    x = Tensor(np.ones((2, 3)), requires_grad=True)
    w = Tensor(np.ones((3, 4)))
    nodes, edges = _parse(to_dot(x @ w))
    labels = sorted(label for _, label in nodes.values())
    assert labels == ["leaf 2x3 (requires_grad)", "leaf 3x4", "matmul\\n2x4"]
    assert len(edges) == 2


def test_plain_constants_are_not_nodes():
    x = Tensor(2.0, requires_grad=True)
    nodes, edges = _parse(to_dot(x * 3.0))
    assert len(nodes) == 2 and len(edges) == 1


def test_long_chain_does_not_recurse():
    x = Tensor(1.0, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y + 1.0
    nodes, edges = _parse(to_dot(y))
    assert len(nodes) == 20_001 and len(edges) == 20_000
