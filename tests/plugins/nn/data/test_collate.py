"""adcore_nn.data.collate: torch's default_collate/default_convert rules with np.ndarray for Tensor."""

from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np
import pytest
from adcore_nn.data import default_collate, default_convert

from adcore.errors import InvalidInputError, InvalidValueError

Point = namedtuple("Point", "x y")


def test_arrays_stack_with_the_batch_dimension_first():
    items = [np.full((2, 3), i, dtype=np.float32) for i in range(4)]
    batch = default_collate(items)
    assert batch.shape == (4, 2, 3) and batch.dtype == np.float32
    assert batch[:, 0, 0].tolist() == [0, 1, 2, 3]
    assert not np.shares_memory(batch, items[0]), "a new array, as torch.stack makes"


def test_numbers_become_arrays():
    floats, ints, bools = (
        default_collate([1.5, 2.0]),
        default_collate([1, 2, 3]),
        default_collate([True, False]),
    )
    assert floats.dtype == np.float64 and floats.tolist() == [1.5, 2.0]
    assert ints.dtype == np.int64 and ints.tolist() == [1, 2, 3]
    assert bools.dtype == np.bool_ and bools.tolist() == [True, False]
    scalars = default_collate([np.float32(1), np.float32(2)])
    assert scalars.dtype == np.float32 and scalars.shape == (2,), "NumPy scalars keep their dtype"


def test_strings_stay_a_list():
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([np.str_("a"), np.str_("b")]) == ["a", "b"]


def test_dicts_tuples_namedtuples_and_lists():
    items = [{"image": np.ones(2) * i, "label": i, "meta": (i, "x")} for i in range(3)]
    batch = default_collate(items)
    assert list(batch) == ["image", "label", "meta"]
    assert batch["image"].shape == (3, 2) and batch["label"].tolist() == [0, 1, 2]
    assert isinstance(batch["meta"], list), "torch returns a list for tuples"
    assert batch["meta"][0].tolist() == [0, 1, 2] and batch["meta"][1] == ["x", "x", "x"]
    od = default_collate([OrderedDict(a=1), OrderedDict(a=2)])
    assert type(od) is OrderedDict and od["a"].tolist() == [1, 2]
    p = default_collate([Point(1.0, np.zeros(2)), Point(2.0, np.ones(2))])
    assert type(p) is Point and p.x.tolist() == [1.0, 2.0] and p.y.shape == (2, 2)
    lists = default_collate([[1, 2.0], [3, 4.0]])
    assert type(lists) is list and lists[0].tolist() == [1, 3] and lists[1].tolist() == [2.0, 4.0]


def test_shape_mismatch_names_the_item_and_key():
    items = [{"image": np.zeros((28, 28))}, {"image": np.zeros((28, 28))}, {"image": np.zeros((28, 27))}]
    with pytest.raises(InvalidValueError, match=r"item 2 .* shape \(28, 27\).*\['image'\].*\(28, 28\)"):
        default_collate(items)
    assert default_collate(items[:2])["image"].shape == (2, 28, 28), "the next call works"


def test_dtype_mismatch_is_refused_not_promoted():
    with pytest.raises(InvalidValueError, match=r"item 1 .*float64.*\[0\].*float32"):
        default_collate([(np.zeros(2, np.float32),), (np.zeros(2, np.float64),)])


def test_structure_mismatches_name_the_item():
    with pytest.raises(InvalidValueError, match=r"item 1 .*keys"):
        default_collate([{"a": 1}, {"b": 1}])
    with pytest.raises(InvalidValueError, match=r"item 2 .*length 1.*equal size"):
        default_collate([(1, 2), (3, 4), (5,)])
    with pytest.raises(InvalidInputError, match=r"item 1 .*float at \[1\].*int"):
        default_collate([(0, 1), (0, 1.5)])
    with pytest.raises(InvalidInputError, match=r"item 1 .*list .*ndarray"):
        default_collate([np.zeros(2), [0.0, 0.0]])


def test_unsupported_items_and_empty_batches_are_refused():
    with pytest.raises(InvalidInputError, match="found object"):
        default_collate([object(), object()])
    with pytest.raises(InvalidInputError, match="found ndarray"):
        default_collate([np.array([None]), np.array([None])])
    with pytest.raises(InvalidInputError, match="found NoneType"):
        default_collate([None, None])
    with pytest.raises(InvalidInputError, match="non-empty"):
        default_collate([])


def test_default_convert():
    a = np.zeros(3)
    assert default_convert(a) is a
    s = default_convert(np.float32(2))
    assert isinstance(s, np.ndarray) and s.shape == () and s.dtype == np.float32
    assert default_convert(3) == 3 and default_convert("s") == "s"
    converted = default_convert({"a": (np.int64(1), 2), "p": Point(np.float64(1), 2)})
    assert isinstance(converted["a"], list) and isinstance(converted["a"][0], np.ndarray)
    assert type(converted["p"]) is Point and isinstance(converted["p"].x, np.ndarray)


def test_torch_agrees_on_values_and_structure():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the hand-written checks above still run"
    )
    from torch.utils.data import default_collate as torch_collate

    items = [
        {
            "x": np.arange(6, dtype=np.float32).reshape(2, 3) + i,
            "y": i,
            "w": 0.5 * i,
            "t": (i, np.int32(i)),
            "s": "a",
        }
        for i in range(3)
    ]
    ours, theirs = default_collate(items), torch_collate(items)
    assert list(ours) == list(theirs)
    for key in ("x", "y", "w"):
        assert ours[key].dtype == theirs[key].numpy().dtype, key
        np.testing.assert_array_equal(ours[key], theirs[key].numpy())
    assert type(ours["t"]) is type(theirs["t"]) is list
    for a, b in zip(ours["t"], theirs["t"], strict=True):
        assert a.dtype == b.numpy().dtype
        np.testing.assert_array_equal(a, b.numpy())
    assert ours["s"] == theirs["s"]
    p_ours, p_theirs = default_collate([Point(1, 2.0)] * 2), torch_collate([Point(1, 2.0)] * 2)
    assert type(p_ours) is type(p_theirs) and p_ours.y.dtype == p_theirs.y.numpy().dtype
    assert isinstance(torch.as_tensor(ours["x"]), torch.Tensor)
