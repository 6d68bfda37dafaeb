"""adcore.api over pytrees: structures in and out on every backend, has_aux, hvp and pytree hessians."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore import tree
from adcore.core import Tracer

BACKENDS = ["reverse", "forward", "numeric", "symbolic"]
RTOL = {"reverse": 1e-12, "forward": 1e-12, "numeric": 1e-6, "symbolic": 1e-12}

Point = namedtuple("Point", "x y")
RNG = np.random.default_rng(16)


def assert_trees_close(actual, expected, rtol, atol=0.0):
    """Same structure, leaves equal within rtol."""
    a_leaves, a_def = tree.flatten(actual)
    e_leaves, e_def = tree.flatten(expected)
    assert a_def == e_def, f"{a_def} != {e_def}"
    for a, e in zip(a_leaves, e_leaves):
        assert np.shape(a) == np.shape(e)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


# --- an MLP whose parameters are a pytree equals the flat-argument MLP ------------------------------

SIZES = [(3, 4), (4, 2)]
INPUTS = RNG.standard_normal((5, 3))
PARAMS = {
    "layers": [
        {"w": RNG.standard_normal(shape) * 0.5, "b": RNG.standard_normal(shape[1]) * 0.1} for shape in SIZES
    ],
    "scale": 1.5,
}


def mlp_loss(params, x):
    h = x
    for layer in params["layers"]:
        h = anp.tanh(h @ layer["w"] + layer["b"])
    return params["scale"] * anp.mean(h**2)


def flat_mlp_loss(w0, b0, w1, b1, scale, x):
    return mlp_loss({"layers": [{"w": w0, "b": b0}, {"w": w1, "b": b1}], "scale": scale}, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp_grads_over_a_parameter_tree_equal_the_flat_grads(backend):
    g = adcore.grad(mlp_loss, backend=backend)(PARAMS, INPUTS)
    assert isinstance(g, dict) and isinstance(g["layers"], list) and g["scale"].shape == ()
    flat = [
        PARAMS["layers"][0]["w"],
        PARAMS["layers"][0]["b"],
        PARAMS["layers"][1]["w"],
        PARAMS["layers"][1]["b"],
    ]
    flat_g = adcore.grad(flat_mlp_loss, argnums=(0, 1, 2, 3, 4), backend=backend)(*flat, 1.5, INPUTS)
    expected = {
        "layers": [{"w": flat_g[0], "b": flat_g[1]}, {"w": flat_g[2], "b": flat_g[3]}],
        "scale": flat_g[4],
    }
    assert_trees_close(g, expected, rtol=1e-12)  # the same backend on the same numbers
    # and against the reverse backend's gradient, across backends: d loss / d scale = loss / scale
    reference = adcore.grad(mlp_loss)(PARAMS, INPUTS)
    assert_trees_close(g, reference, rtol=RTOL[backend], atol=1e-9)
    np.testing.assert_allclose(g["scale"], mlp_loss(PARAMS, INPUTS) / 1.5, rtol=RTOL[backend])


@pytest.mark.parametrize("backend", BACKENDS)
def test_namedtuple_tuple_and_none_leaves(backend):
    p = Point(x=np.array([1.0, 2.0]), y=(np.array(3.0), None))

    def f(p):  # d/dx = 2 x y, d/dy = sum(x^2)
        return anp.sum(p.x**2) * p.y[0]

    g = adcore.grad(f, backend=backend)(p)
    assert isinstance(g, Point) and isinstance(g.y, tuple) and g.y[1] is None
    np.testing.assert_allclose(g.x, [6.0, 12.0], rtol=RTOL[backend])
    np.testing.assert_allclose(g.y[0], 5.0, rtol=RTOL[backend])


@pytest.mark.parametrize("backend", BACKENDS)
def test_jacobian_dict_in_dict_out_nests_output_of_input(backend):
    x, y = np.array([1.0, 2.0, 3.0]), np.array([[0.5, -1.0]])

    def f(p):
        return {"double": 2 * p["x"], "total": anp.sum(p["x"]) * anp.sum(p["y"])}

    jac = adcore.jacobian(f, backend=backend)({"x": x, "y": y})
    assert set(jac) == {"double", "total"} and set(jac["double"]) == {"x", "y"}
    assert jac["double"]["x"].shape == (3, 3) and jac["double"]["y"].shape == (3, 1, 2)
    assert jac["total"]["x"].shape == (3,) and jac["total"]["y"].shape == (1, 2)
    np.testing.assert_allclose(jac["double"]["x"], 2 * np.eye(3), rtol=RTOL[backend], atol=1e-10)
    np.testing.assert_allclose(jac["double"]["y"], 0.0, atol=1e-10)
    np.testing.assert_allclose(jac["total"]["x"], np.full(3, -0.5), rtol=RTOL[backend])  # sum(y)
    np.testing.assert_allclose(jac["total"]["y"], np.full((1, 2), 6.0), rtol=RTOL[backend])  # sum(x)


def test_a_tuple_argnums_nests_inside_the_output_structure_as_jax_does():
    def f(a, b):
        return [a * b, a + b]

    jac = adcore.jacobian(f, argnums=(0, 1))(np.array(2.0), np.array(3.0))
    # jax.jacobian(f, argnums=(0, 1)) gives [(d(ab)/da, d(ab)/db), (1, 1)]
    assert isinstance(jac, list) and all(isinstance(j, tuple) for j in jac)
    np.testing.assert_allclose(np.array(jac, dtype=float), [[3.0, 2.0], [1.0, 1.0]])


def test_value_and_grad_returns_the_structured_value_untouched():
    value, g = adcore.value_and_grad(lambda p: anp.sum(p["a"] * p["b"]))({"a": np.arange(3.0), "b": 2.0})
    assert value == 6.0 and g["b"] == 3.0  # sum(a * b), d/db = sum(a)
    np.testing.assert_array_equal(g["a"], [2.0, 2.0, 2.0])


def test_float32_leaves_keep_their_dtype():
    p = {"w": np.ones(3, np.float32), "s": np.float64(2.0)}
    g = adcore.grad(lambda p: anp.sum(p["w"]) * p["s"])(p)
    assert g["w"].dtype == np.float32 and g["s"].dtype == np.float64


# --- jvp and vjp over pytrees ---------------------------------------------------------------------


def _pair(p):
    """{"u": x * y, "v": sum(x)} of p = (x, {"y": y}): J is easy to write down."""
    x, y = p[0], p[1]["y"]
    return {"u": x * y, "v": anp.sum(x)}


P = (np.array([1.0, 2.0]), {"y": np.array([3.0, 5.0])})
T = (np.array([0.1, 0.2]), {"y": np.array([1.0, -1.0])})


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_with_pytree_primals_and_tangents(backend):
    out, tangent = adcore.jvp(_pair, (P,), (T,), backend=backend)
    np.testing.assert_allclose(out["u"], [3.0, 10.0])
    # d(x y) = dx y + x dy = [0.3 + 1, 1.0 - 2]; d sum(x) = 0.3
    np.testing.assert_allclose(tangent["u"], [1.3, -1.0], rtol=RTOL[backend])
    np.testing.assert_allclose(tangent["v"], 0.3, rtol=RTOL[backend])


@pytest.mark.parametrize("backend", ["reverse", "forward", "numeric", "symbolic"])
def test_vjp_with_pytree_primals_and_cotangents(backend):
    out, vjp_fn = adcore.vjp(lambda p, unused: _pair(p), P, np.array(2.0), backend=backend)
    assert set(out) == {"u", "v"}
    ct_p, ct_scalar = vjp_fn({"u": np.array([1.0, 1.0]), "v": np.array(10.0)})
    # x: y * 1 + 10, y: x * 1; the second primal is unused: zero
    np.testing.assert_allclose(ct_p[0], [13.0, 15.0], rtol=RTOL[backend])
    np.testing.assert_allclose(ct_p[1]["y"], [1.0, 2.0], rtol=RTOL[backend])
    assert isinstance(ct_p, tuple) and isinstance(ct_p[1], dict)
    np.testing.assert_allclose(ct_scalar, 0.0, atol=1e-9)


def test_a_tangent_or_cotangent_of_the_wrong_structure_is_a_named_error():
    with pytest.raises(adcore.InvalidInputError, match=r"tangent of argument 0 has structure"):
        adcore.jvp(_pair, (P,), ((T[0], T[1]["y"]),))
    with pytest.raises(adcore.InvalidInputError, match=r"argument 0\[1\]\['y'\] has shape \(3,\)"):
        adcore.jvp(_pair, (P,), ((T[0], {"y": np.ones(3)}),))
    _, vjp_fn = adcore.vjp(_pair, P)
    with pytest.raises(adcore.InvalidInputError, match=r"cotangent has structure"):
        vjp_fn({"u": np.ones(2)})
    with pytest.raises(adcore.InvalidValueError, match=r"f's output\['u'\] has shape \(2,\)"):
        vjp_fn({"u": np.ones(3), "v": np.array(1.0)})
    assert vjp_fn({"u": np.zeros(2), "v": np.array(1.0)})[0][0].tolist() == [1.0, 1.0]  # the next call works


# --- user classes ---------------------------------------------------------------------------------


class Affine:
    """A user class of two arrays, registered with adcore.tree.register."""

    def __init__(self, a, b):
        self.a, self.b = a, b


tree.register(Affine, lambda m: ((m.a, m.b), None, ("a", "b")), lambda _, children: Affine(*children))


@tree.register_dataclass
@dataclasses.dataclass
class Linear:
    w: np.ndarray
    b: np.ndarray


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_registered_class_and_a_dataclass_are_differentiated_as_trees(backend):
    x = np.array([1.0, -2.0])

    def f(model, layer):  # d/da = x, d/db = 1, d/dw = 3 (w x... summed), d/db = 1
        return anp.sum(model.a * x + model.b) + anp.sum(layer.w * x * 3.0 + layer.b)

    gm, gl = adcore.grad(f, argnums=(0, 1), backend=backend)(
        Affine(np.ones(2), np.zeros(2)), Linear(np.ones(2), np.zeros(2))
    )
    assert isinstance(gm, Affine) and isinstance(gl, Linear)
    np.testing.assert_allclose(gm.a, x, rtol=RTOL[backend])
    np.testing.assert_allclose(gm.b, [1.0, 1.0], rtol=RTOL[backend])
    np.testing.assert_allclose(gl.w, 3 * x, rtol=RTOL[backend])


# --- errors name leaf paths -------------------------------------------------------------------------


def test_an_integer_leaf_is_named_by_its_path_not_called_an_object_array():
    with pytest.raises(adcore.InvalidInputError) as info:
        adcore.grad(lambda p: anp.sum(p["w"]))({"w": np.array([1, 2])})
    assert "argument 0['w'] has dtype int64" in str(info.value)
    assert "object" not in str(info.value)  # the old "argument 0 has dtype object" is gone
    with pytest.raises(adcore.InvalidInputError, match=r"argument 1\['layers'\]\[0\]\['name'\] is str"):
        adcore.grad(lambda x, p: x, argnums=(0, 1))(1.0, {"layers": [{"name": "dense"}]})
    np.testing.assert_allclose(adcore.grad(lambda p: anp.sum(p["w"] ** 2))({"w": np.ones(2)})["w"], 2.0)


def test_an_argument_outside_argnums_may_be_anything():
    g = adcore.grad(lambda x, cfg: x * cfg["k"], argnums=0)(2.0, {"k": 3, "name": "anything"})
    assert g == 3.0


def test_grad_of_a_structured_output_is_a_non_scalar_error():
    with pytest.raises(adcore.NonScalarOutputError, match="has_aux=True"):
        adcore.grad(lambda x: {"loss": anp.sum(x)})(np.ones(2))
    assert adcore.grad(lambda x: anp.sum(x))(np.ones(2)).tolist() == [1.0, 1.0]


# --- has_aux --------------------------------------------------------------------------------------


def _loss_and_aux(x):
    """loss sum(x^2) with aux {"mean": mean(x), "tag": "ok"}: aux at x = [1, 2, 3] is exactly 2."""
    return anp.sum(x**2), {"mean": anp.mean(x), "tag": "ok"}


XA = np.array([1.0, 2.0, 3.0])


def _assert_concrete_aux(aux):
    assert aux["tag"] == "ok"
    assert not isinstance(aux["mean"], Tracer) and isinstance(aux["mean"], (np.ndarray, np.generic, float))
    assert float(aux["mean"]) == 2.0  # the aux at the primal, not at a probe point or a symbol


@pytest.mark.parametrize("backend", BACKENDS)
def test_has_aux_on_grad_value_and_grad_and_jacobian(backend):
    g, aux = adcore.grad(_loss_and_aux, has_aux=True, backend=backend)(XA)
    np.testing.assert_allclose(g, 2 * XA, rtol=RTOL[backend])
    _assert_concrete_aux(aux)
    (value, aux), g = adcore.value_and_grad(_loss_and_aux, has_aux=True, backend=backend)(XA)
    assert value == 14.0
    _assert_concrete_aux(aux)
    jac, aux = adcore.jacobian(
        lambda x: (x**2, {"mean": anp.mean(x), "tag": "ok"}), has_aux=True, backend=backend
    )(XA)
    np.testing.assert_allclose(jac, np.diag(2 * XA), rtol=RTOL[backend], atol=1e-9)
    _assert_concrete_aux(aux)


@pytest.mark.parametrize("backend", BACKENDS)
def test_has_aux_on_vjp(backend):
    out, vjp_fn, aux = adcore.vjp(_loss_and_aux, XA, has_aux=True, backend=backend)
    assert out == 14.0
    _assert_concrete_aux(aux)
    np.testing.assert_allclose(vjp_fn(np.array(1.0))[0], 2 * XA, rtol=RTOL[backend])


def test_has_aux_needs_a_pair_and_the_next_call_works():
    with pytest.raises(adcore.InvalidOutputError, match="pair"):
        adcore.grad(lambda x: anp.sum(x), has_aux=True)(XA)
    with pytest.raises(adcore.InvalidOutputError, match="length 3"):
        adcore.vjp(lambda x: (x, x, x), XA, has_aux=True)
    g, aux = adcore.grad(_loss_and_aux, has_aux=True)(XA)
    _assert_concrete_aux(aux)


def test_aux_of_a_nested_derivative_keeps_the_outer_tracers():
    # the inner aux sum(y^3) depends on x through the outer transformation, so the outer grad of it
    # is 3 x^2 (as in JAX, aux holds the outer level's tracers while that level is open)
    def outer(x):
        _, aux = adcore.grad(lambda y: (anp.sum(y**2), anp.sum(y**3)), has_aux=True)(x)
        return aux

    np.testing.assert_allclose(adcore.grad(outer)(XA), 3 * XA**2)
    np.testing.assert_allclose(adcore.grad(outer, backend="forward")(XA), 3 * XA**2)


# --- hvp and the pytree hessian ----------------------------------------------------------------------


def rosenbrock(x):
    return anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    """The analytic Hessian: tridiagonal, d2/dx_i^2 = 1200 x_i^2 - 400 x_{i+1} + 2 (+ 200 from the
    term before), d2/dx_i dx_{i+1} = -400 x_i."""
    n = len(x)
    diag = np.zeros(n)
    diag[:-1] += 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    diag[1:] += 200
    off = -400 * x[:-1]
    return np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)


X100 = RNG.uniform(-1.5, 1.5, 100)
V100 = RNG.standard_normal(100)


def test_hvp_on_rosenbrock_100_equals_the_hessian_times_v():
    expected = rosenbrock_hessian(X100) @ V100
    np.testing.assert_allclose(adcore.hvp(rosenbrock)(X100, V100), expected, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(adcore.hessian(rosenbrock)(X100) @ V100, expected, rtol=1e-10, atol=1e-9)
    import scipy.optimize

    np.testing.assert_allclose(scipy.optimize.rosen_hess_prod(X100, V100), expected, rtol=1e-12)


@pytest.mark.parametrize(
    ("inner", "outer"), [("reverse", "reverse"), ("forward", "forward"), ("symbolic", "forward")]
)
def test_hvp_with_other_backends(inner, outer):
    x, v = X100[:6], V100[:6]
    got = adcore.hvp(rosenbrock, inner=inner, outer=outer)(x, v)
    np.testing.assert_allclose(got, rosenbrock_hessian(x) @ v, rtol=1e-10)


def _tree_loss(p):
    """sum(w^2 * s) + s^3 / 3: H_ww = diag(2 s), H_ws = 2 w, H_ss = 2 s."""
    return anp.sum(p["w"] ** 2 * p["s"]) + p["s"] ** 3 / 3


TP = {"w": np.array([1.0, -2.0]), "s": np.array(3.0)}
TV = {"w": np.array([0.5, 1.0]), "s": np.array(2.0)}


def test_hvp_and_hessian_over_a_pytree():
    h = adcore.hessian(_tree_loss)(TP)
    assert set(h) == {"s", "w"} and set(h["w"]) == {"s", "w"}
    np.testing.assert_allclose(h["w"]["w"], np.diag([6.0, 6.0]))
    np.testing.assert_allclose(h["w"]["s"], [2.0, -4.0])  # shape w.shape + s.shape = (2,)
    np.testing.assert_allclose(h["s"]["w"], [2.0, -4.0])
    np.testing.assert_allclose(h["s"]["s"], 6.0)
    hv = adcore.hvp(_tree_loss)(TP, TV)
    # H v by blocks: w: 6 v_w + 2 w v_s = [3 + 4, 6 - 8]; s: 2 w . v_w + 6 v_s = (1 - 4) + 12
    assert set(hv) == {"s", "w"}
    np.testing.assert_allclose(hv["w"], [7.0, -2.0])
    np.testing.assert_allclose(hv["s"], 9.0)


def test_hvp_with_argnums():
    def f(a, x, b):
        return a * anp.sum(x**3) + b

    # d2/dx2 = 6 a x: H v = 6 a x v
    x, v = np.array([1.0, 2.0]), np.array([1.0, -1.0])
    np.testing.assert_allclose(adcore.hvp(f, argnums=1)(2.0, x, 5.0, v), 12 * x * v)
    # a tuple argnums: v is one direction per argument, the result one block row per argument
    ha, hx = adcore.hvp(f, argnums=(0, 1))(2.0, x, 5.0, (np.array(1.0), v))
    # d2f/da2 = 0, d2f/da dx = 3 x^2: (H v)_a = 3 x^2 . v, (H v)_x = 3 x^2 * 1 + 6 a x v
    np.testing.assert_allclose(ha, np.sum(3 * x**2 * v))
    np.testing.assert_allclose(hx, 3 * x**2 + 12 * x * v)


def test_hvp_errors_name_the_direction_and_the_next_call_works():
    with pytest.raises(adcore.InvalidInputError, match=r"tangent of argument 0 \(hvp's v\) has structure"):
        adcore.hvp(_tree_loss)(TP, {"w": TV["w"]})
    with pytest.raises(adcore.InvalidInputError, match=r"argument 0\['w'\] \(hvp's v\) has shape \(3,\)"):
        adcore.hvp(_tree_loss)(TP, {"w": np.ones(3), "s": np.array(1.0)})
    with pytest.raises(adcore.InvalidInputError, match="then v"):
        adcore.hvp(_tree_loss)(TP)
    with pytest.raises(adcore.InvalidInputError, match="tuple of 2 directions"):
        adcore.hvp(lambda a, b: a * b, argnums=(0, 1))(1.0, 2.0, 1.0)
    with pytest.raises(adcore.InvalidArgnumsError, match="twice"):
        adcore.hvp(lambda a: a**3, argnums=(0, 0))(1.0, (1.0, 1.0))
    np.testing.assert_allclose(adcore.hvp(_tree_loss)(TP, TV)["s"], 9.0)


def test_newton_cg_on_rosenbrock_converges_to_the_minimum():
    import scipy.optimize

    result = scipy.optimize.minimize(
        rosenbrock,
        np.full(100, -1.0),
        method="Newton-CG",
        jac=adcore.grad(rosenbrock),
        hessp=adcore.hvp(rosenbrock),
        options={"xtol": 1e-10},
    )
    assert result.success
    np.testing.assert_allclose(result.x, np.ones(100), atol=1e-6)  # the minimum is at ones, f = 0


# --- a process pool (numeric's executor) gets the flat function whole -------------------------------


def _dict_loss(p):  # module level: a process pool sends it by reference
    return {"u": p["a"] * p["b"], "v": anp.sum(p["a"] ** 2)}


def test_pytrees_through_a_process_pool_match_the_serial_numeric_jacobian():
    from concurrent.futures import ProcessPoolExecutor

    p = {"a": np.array([1.0, 2.0]), "b": np.array(3.0)}
    serial = adcore.jacobian(_dict_loss, backend="numeric")(p)
    with ProcessPoolExecutor(2) as pool:
        # every evaluation runs in a worker, so the output's structure is learnt by one plain call here
        pooled = adcore.jacobian(_dict_loss, backend="numeric", executor=pool)(p)
    assert_trees_close(pooled, serial, rtol=0.0)
    np.testing.assert_allclose(pooled["u"]["a"], 3.0 * np.eye(2), rtol=1e-6)  # d(a b)/da = b I
    np.testing.assert_allclose(pooled["v"]["a"], [2.0, 4.0], rtol=1e-6)  # d sum(a^2)/da = 2a


# --- backend features keep working over pytrees ------------------------------------------------------


def test_the_symbolic_cache_holds_for_pytree_arguments_across_calls_and_derivative_functions():
    symbolic = adcore.get_backend("symbolic")

    def f(p):
        return anp.sum(anp.sin(p["a"]) * p["b"])

    p = {"a": np.array([0.1, 0.2]), "b": np.array(2.0)}
    adcore.grad(f, backend="symbolic")(p)
    before = symbolic.derivations
    q = {"a": np.array([0.3, 0.4]), "b": np.array(3.0)}
    g = adcore.grad(f, backend="symbolic")(q)  # a new derivative function of the same f: a hit
    assert symbolic.derivations == before
    np.testing.assert_allclose(g["a"], 3.0 * np.cos(q["a"]), rtol=1e-15)  # d/da = b cos(a)
    np.testing.assert_allclose(g["b"], np.sum(np.sin(q["a"])), rtol=1e-15)


def test_numeric_error_estimates_come_back_in_the_derivatives_structure():
    jac, err = adcore.jacobian(_dict_loss, backend="numeric", return_error=True)(
        {"a": np.ones(2), "b": np.array(2.0)}
    )
    assert isinstance(jac, dict) and isinstance(err, dict) and set(err["u"]) == {"a", "b"}
    assert err["u"]["a"].shape == jac["u"]["a"].shape == (2, 2)
    assert np.all(
        np.abs(jac["v"]["a"] - 2.0) <= err["v"]["a"] + 1e-12
    )  # d sum(a^2)/da = 2a, within its bound


def test_an_output_whose_structure_changes_between_evaluations_is_refused():
    # numeric evaluates f at probe points around x: a dict whose keys depend on the point would
    # have its entries mixed up in the flat vector the backend differences
    def f(x):
        return {"big": x * 2} if x[0] > 1.0 else {"small": x * 2}

    with pytest.raises(adcore.InvalidOutputError, match="different structures"):
        adcore.jacobian(f, backend="numeric")(np.array([1.0 - 1e-9, 2.0, 3.0]))  # probes on both sides of 1
    jac = adcore.jacobian(f, backend="numeric")(np.array([0.5, 2.0, 3.0]))
    np.testing.assert_allclose(jac["small"], 2 * np.eye(3), rtol=1e-6)


def test_a_backend_error_about_a_flat_argument_gets_a_note_naming_the_leaf():
    # numeric probes log(b) across 0 at b[1] = 1e-7: its message names the flat argument it saw
    with pytest.raises(adcore.InvalidOutputError, match="nan at argument 1") as info:
        adcore.grad(lambda p: anp.sum(anp.log(p["b"])) + anp.sum(p["a"]), backend="numeric")(
            {"a": np.ones(2), "b": np.array([1.0, 1e-7])}
        )
    assert info.value.__notes__ == [
        "adcore flattened the pytree arguments for the backend: its argument 1 is argument 0['b']"
    ]
    g = adcore.grad(lambda p: anp.sum(anp.log(p["b"])), backend="numeric")({"b": np.array([1.0, 2.0])})
    np.testing.assert_allclose(g["b"], [1.0, 0.5], rtol=1e-6)  # the next call works: d log b = 1 / b


class _Scaled:
    """A callable equal to every other _Scaled (a value-based __eq__), computing k * sum(x^2)."""

    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return isinstance(other, _Scaled)

    def __hash__(self):
        return 0

    def __call__(self, p):
        return self.k * anp.sum(p["x"] ** 2)


@pytest.mark.parametrize("backend", ["reverse", "numeric"])
def test_two_equal_callables_are_two_functions(backend):
    p = {"x": np.array([1.0, 2.0])}
    first = _Scaled(1.0)
    np.testing.assert_allclose(adcore.grad(first, backend=backend)(p)["x"], [2.0, 4.0], rtol=1e-6)
    np.testing.assert_allclose(adcore.grad(_Scaled(3.0), backend=backend)(p)["x"], [6.0, 12.0], rtol=1e-6)
