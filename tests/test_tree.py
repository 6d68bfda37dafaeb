"""adcore.tree: flatten/unflatten/map over nested containers, paths for messages, registration."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import numpy as np
import optree
import pytest

import adcore
from adcore import tree
from adcore.errors import InvalidInputError, InvalidValueError

Point = namedtuple("Point", "x y")


class Box:
    """A user class holding two arrays (registered below)."""

    def __init__(self, w, b):
        self.w, self.b = w, b


tree.register(Box, lambda box: ((box.w, box.b), None, ("w", "b")), lambda _, children: Box(*children))


class Pair:
    """A user class registered with the two-item flatten -> (children, aux) form: no child names."""

    def __init__(self, w, b):
        self.w, self.b = w, b


tree.register(Pair, lambda pair: ((pair.w, pair.b), "aux"), lambda _, children: Pair(*children))


@tree.register_dataclass
@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float


def test_flatten_orders_dict_keys_and_skips_none():
    params = {"scale": 2.0, "layers": [{"w": np.ones(2), "b": None}], "p": Point(1.0, (3.0,))}
    leaves, treedef = tree.flatten(params)
    # dict keys sorted (layers, p, scale), None has no leaf: the order optree and JAX use
    assert [np.asarray(x).tolist() for x in leaves] == [[1.0, 1.0], 1.0, 3.0, 2.0]
    assert tree.paths(treedef, "argument 0") == [
        "argument 0['layers'][0]['w']",
        "argument 0['p'].x",
        "argument 0['p'].y[0]",
        "argument 0['scale']",
    ]
    rebuilt = tree.unflatten(treedef, [10 * np.asarray(x) for x in leaves])
    assert rebuilt["layers"][0]["b"] is None
    assert isinstance(rebuilt["p"], Point) and rebuilt["p"].y[0] == 30.0
    assert rebuilt["scale"] == 20.0


def test_an_array_is_one_leaf():
    leaves, treedef = tree.flatten(np.arange(3.0))
    assert len(leaves) == 1 and tree.is_leaf(treedef)
    assert not tree.is_leaf(tree.structure([np.arange(3.0)]))
    assert not tree.is_leaf(tree.structure(None))  # no value: no leaf at all
    assert tree.leaves(None) == []


def test_map_over_several_trees():
    a = {"u": 1.0, "v": [2.0, 3.0]}
    b = {"u": 10.0, "v": [20.0, 30.0]}
    assert tree.map(lambda x, y: x + y, a, b) == {"u": 11.0, "v": [22.0, 33.0]}


def test_registered_class_and_dataclass_flatten_with_named_paths():
    leaves, treedef = tree.flatten({"box": Box(np.ones(2), 1.0), "layer": Layer(np.zeros(3), 4.0)})
    assert len(leaves) == 4
    assert tree.paths(treedef) == ["['box'].w", "['box'].b", "['layer'].w", "['layer'].b"]
    back = tree.unflatten(treedef, leaves)
    assert isinstance(back["box"], Box) and isinstance(back["layer"], Layer) and back["layer"].b == 4.0


def test_registrations_stay_in_adcores_namespace():
    # optree's default namespace (another library using optree) still sees Box as a leaf
    assert optree.tree_leaves(Box(1.0, 2.0), none_is_leaf=False)[0].__class__ is Box
    assert tree.leaves(Box(1.0, 2.0)) == [1.0, 2.0]


def test_register_dataclass_refuses_a_plain_class():
    with pytest.raises(InvalidInputError, match="not a dataclass"):
        tree.register_dataclass(int)
    assert tree.leaves(Layer(1.0, 2.0)) == [1.0, 2.0]  # the next call works


def test_check_leaves_names_the_path_of_a_string_leaf():
    params = {"layers": [{"w": np.ones(2)}, {"w": "oops"}]}
    leaves, treedef = tree.flatten(params)
    with pytest.raises(InvalidInputError, match=r"argument 0\['layers'\]\[1\]\['w'\] is str"):
        tree.check_leaves(leaves, treedef, "argument 0")
    good, treedef = tree.flatten({"w": np.ones(2), "n": 3})
    tree.check_leaves(good, treedef, "argument 0")  # numbers and arrays pass (dtype is api's check)


# --- the two-item form: flatten -> (children, aux), children named by position -------------------


def test_the_two_item_form_names_its_children_by_position():
    leaves, treedef = tree.flatten({"p": Pair(1.0, [2, np.ones(2)])})
    assert tree.paths(treedef, "argument 0") == [
        "argument 0['p'][<child 0>]",
        "argument 0['p'][<child 1>][0]",
        "argument 0['p'][<child 1>][1]",
    ]
    accessors = optree.treespec_accessors(treedef)
    assert accessors[1]({"p": Pair(1.0, [7, None])}) == 7  # a path reaches its leaf


@pytest.mark.parametrize("backend", ["reverse", "forward", "symbolic", "numeric"])
@pytest.mark.parametrize("w, b", [(2.0, 3.0), (np.float64(2.0), 3.0), (np.array(2.0), 3.0)])
def test_the_two_item_form_with_python_float_leaves_is_differentiated(backend, w, b):
    # d/dw w**2 b = 2 w b = 12, d/db = w**2 = 4
    grad = adcore.grad(lambda p: p.w**2 * p.b, backend=backend)(Pair(w, b))
    assert isinstance(grad, Pair)
    np.testing.assert_allclose([grad.w, grad.b], [12.0, 4.0], rtol=1e-7 if backend == "numeric" else 1e-15)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_an_int_leaf_of_the_two_item_form_is_a_typed_error_naming_its_position(backend):
    with pytest.raises(InvalidInputError, match=r"argument 0\[<child 1>\] has dtype int"):
        adcore.grad(lambda p: p.w**2 * p.b, backend=backend)(Pair(2.0, 3))
    grad = adcore.grad(lambda p: p.w**2 * p.b, backend=backend)(Pair(2.0, 3.0))  # the next call
    assert (grad.w, grad.b) == (12.0, 4.0)
    with pytest.raises(InvalidInputError, match=r"argument 0\[<child 0>\] is str"):
        adcore.grad(lambda p: p.b, backend=backend)(Pair("w", 3.0))


def test_map_over_trees_of_other_structures_is_a_typed_error():
    with pytest.raises(InvalidValueError, match=r"adcore.tree.map: the trees do not have one structure"):
        tree.map(lambda x, y: x + y, {"a": 1.0}, {"b": 2.0})
    with pytest.raises(ValueError, match="f's own"):  # an error of f itself is f's, untouched
        tree.map(lambda x: (_ for _ in ()).throw(ValueError("f's own")), {"a": 1.0})
