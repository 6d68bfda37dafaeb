"""adcore.checkpoint: the same values and derivatives as the plain function on every backend,
a tape that keeps one node per checkpointed call, and a recompute that must reproduce the
forward pass (else a typed error, and the next call works)."""

from __future__ import annotations

import gc
import types

import numpy as np
import pytest
from adcore_reverse import Tensor
from adcore_reverse import tensor as tensor_module

import adcore
import adcore.numpy as anp
from adcore.checkpoint import Checkpointed, checkpoint

BLOCKS = 10


def block(W, h):
    return anp.tanh(W @ anp.tanh(W @ h))


checkpointed_block = checkpoint(block)


def chain(W, h, step):
    for _ in range(BLOCKS):
        h = step(W, h)
    return anp.sum(h**2)


def chain_of_own_weights(step):
    """sum(h_10 ** 2) with a weight matrix per block: loss(h, W_1, ..., W_10)."""

    def loss(h, *Ws):
        for W in Ws:
            h = step(W, h)
        return anp.sum(h**2)

    return loss


def data(n=6, batch=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal((n, batch))


def both(f, *args, **options):
    """grad of the plain chain and of the checkpointed one, w.r.t. every argument."""
    argnums = tuple(range(len(args)))
    plain = adcore.grad(lambda *a: f(*a, block), argnums=argnums, **options)(*args)
    ckpt = adcore.grad(lambda *a: f(*a, checkpointed_block), argnums=argnums, **options)(*args)
    return plain, ckpt


# --- the same numbers -------------------------------------------------------------------


def test_value_is_the_plain_functions():
    W, h = data()
    assert np.array_equal(checkpointed_block(W, h), block(W, h))
    assert np.array_equal(chain(W, h, checkpointed_block), chain(W, h, block))


def test_reverse_gradients_of_a_ten_block_chain_are_identical():
    W, h = data()
    (dW, dh), (dW_c, dh_c) = both(chain, W, h)
    assert np.array_equal(dh_c, dh)
    # W is shared by the ten blocks: checkpointing sums its cotangent per block first, then
    # across blocks, where the plain tape adds the twenty terms one by one; the same sum
    # in another association, so equal to rounding (and bit for bit with a W per block, below)
    np.testing.assert_allclose(dW_c, dW, rtol=1e-13, atol=1e-15)


def test_reverse_gradients_with_a_weight_per_block_are_identical_bit_for_bit():
    h = data()[1]
    Ws = [data(seed=k)[0] for k in range(1, BLOCKS + 1)]  # ten different 6x6 weights
    argnums = tuple(range(BLOCKS + 1))
    plain = adcore.grad(chain_of_own_weights(block), argnums=argnums)(h, *Ws)
    ckpt = adcore.grad(chain_of_own_weights(checkpointed_block), argnums=argnums)(h, *Ws)
    for a, b in zip(plain, ckpt):
        assert np.array_equal(a, b)


def test_forward_gradients_are_identical():
    # forward mode has no rule for the checkpointed op: it differentiates the body, op by op
    W, h = data()
    for a, b in zip(*both(chain, W, h, backend="forward")):
        assert np.array_equal(a, b)


def test_numeric_gradients_agree_with_the_plain_reverse_ones():
    W, h = data(4, 3)
    plain, _ = both(chain, W, h)
    _, ckpt = both(chain, W, h, backend="numeric")
    for a, b in zip(plain, ckpt):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-8)


def test_symbolic_gradient_of_a_small_chain_agrees_with_reverse():
    W, h = data(3, 2)

    def small(W, h, step):
        return anp.sum(step(W, step(W, h)) ** 2)

    plain, _ = both(small, W, h)
    symbolic_plain, symbolic_ckpt = both(small, W, h, backend="symbolic")
    for a, b, c in zip(plain, symbolic_ckpt, symbolic_plain):
        assert np.array_equal(b, c)
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("backend", ["reverse", "forward"])
def test_nested_checkpoints_give_identical_gradients(backend):
    inner = checkpoint(lambda W, h: anp.tanh(W @ h))

    @checkpoint
    def outer(W, h):
        return inner(W, inner(W, h))  # a checkpointed function calling a checkpointed function

    W, h = data()
    plain = adcore.grad(lambda h: anp.sum(block(W, block(W, h)) ** 2), backend=backend)(h)
    nested = adcore.grad(lambda h: anp.sum(outer(W, outer(W, h)) ** 2), backend=backend)(h)
    assert np.array_equal(nested, plain)


def test_hessian_through_a_checkpointed_function_equals_the_plain_one():
    x = np.array([0.3, -1.2, 0.8])

    def f(x):
        return anp.sum(anp.sin(x) * anp.tanh(x))

    for options in ({}, {"backend": "reverse"}, {"inner": "forward", "outer": "reverse"}):
        assert np.array_equal(adcore.hessian(checkpoint(f), **options)(x), adcore.hessian(f, **options)(x))


def test_jacobian_vjp_hvp_and_eager_second_order_equal_the_plain_ones():
    def f(x):
        return anp.sin(x) * anp.tanh(x)

    ckpt, x = checkpoint(f), np.array([0.3, -1.2, 0.8])
    # a non-scalar output: one sweep per output element, each recomputing f
    assert np.array_equal(adcore.jacobian(ckpt)(x), adcore.jacobian(f)(x))
    _, vjp_fn = adcore.vjp(ckpt, x)
    assert np.array_equal(vjp_fn(np.ones(3))[0], vjp_fn(np.ones(3))[0])  # the pullback runs twice
    assert np.array_equal(vjp_fn(np.ones(3))[0], adcore.vjp(f, x)[1](np.ones(3))[0])
    v = np.array([1.0, -2.0, 0.5])
    assert np.array_equal(
        adcore.hvp(lambda x: anp.sum(ckpt(x)))(x, v), adcore.hvp(lambda x: anp.sum(f(x)))(x, v)
    )
    second = []
    for g in (f, ckpt):  # backward(create_graph=True): the rule runs on Tensors and is recorded
        xt = Tensor(x, requires_grad=True)
        anp.sum(g(xt)).backward(create_graph=True)
        first, xt.grad = xt.grad, None
        anp.sum(first).backward()
        second.append(xt.grad)
    assert np.array_equal(second[1], second[0])


def test_two_checkpointed_functions_of_the_same_inputs_get_their_own_cotangents():
    # add's VJP hands the same g object to both terms, whose nodes keep the same inputs (x's
    # value, the float a); a is not differentiated, so neither question is a node's last:
    # only the function tells the two apart
    sin, tanh = checkpoint(lambda x, a: anp.sin(x) * a), checkpoint(lambda x, a: anp.tanh(x) * a)
    x, a = np.array([0.3, -1.2, 0.8]), 2.0
    got = adcore.grad(lambda x: anp.sum(sin(x, a) + tanh(x, a)))(x)
    assert np.array_equal(got, adcore.grad(lambda x: anp.sum(anp.sin(x) * a + anp.tanh(x) * a))(x))


def test_float32_stays_float32_and_identical():
    W, h = (a.astype(np.float32) for a in data())
    (dW, dh), (dW_c, dh_c) = both(chain, W, h)
    assert dh_c.dtype == dW_c.dtype == np.float32
    assert np.array_equal(dh_c, dh)
    np.testing.assert_allclose(dW_c, dW, rtol=1e-5, atol=1e-6)  # W shared: summed in another order


def test_argnums_pick_the_arguments():
    W, h = data()
    loss = adcore.grad(lambda W, h: chain(W, h, checkpointed_block), argnums=1)
    assert np.array_equal(loss(W, h), adcore.grad(lambda W, h: chain(W, h, block), argnums=1)(W, h))
    dh, dW = adcore.grad(lambda W, h: chain(W, h, checkpointed_block), argnums=(1, 0))(W, h)
    plain_dh, plain_dW = adcore.grad(lambda W, h: chain(W, h, block), argnums=(1, 0))(W, h)
    assert np.array_equal(dh, plain_dh) and dW.shape == W.shape


def test_decorator_and_call_forms():
    @checkpoint
    def decorated(W, h):
        return anp.tanh(W @ anp.tanh(W @ h))

    @checkpoint(static_argnums=1)
    def power(x, n):
        return x**n

    assert isinstance(decorated, Checkpointed) and decorated.__name__ == "decorated"
    W, h = data()
    assert np.array_equal(
        adcore.grad(lambda h: anp.sum(decorated(W, h)))(h), adcore.grad(lambda h: anp.sum(block(W, h)))(h)
    )
    # d/dx sum(x**3) = 3 x**2; the static 3 is passed through as it is
    assert np.array_equal(adcore.grad(lambda x: anp.sum(power(x, 3)))(np.arange(3.0)), [0.0, 3.0, 12.0])


def test_pytree_arguments():
    rng = np.random.default_rng(1)
    params = {"W": rng.standard_normal((4, 4)), "b": rng.standard_normal((4, 1))}
    h = rng.standard_normal((4, 3))

    def layer(p, h):
        return anp.tanh(p["W"] @ h + p["b"])

    def loss(p, h, step):
        return anp.sum(step(p, step(p, h)))

    plain = adcore.grad(lambda p, h: loss(p, h, layer), argnums=(0, 1))(params, h)
    ckpt = adcore.grad(lambda p, h: loss(p, h, checkpoint(layer)), argnums=(0, 1))(params, h)
    assert np.array_equal(ckpt[1], plain[1])
    assert set(ckpt[0]) == {"W", "b"} and all(np.array_equal(ckpt[0][k], plain[0][k]) for k in params)


# --- what the tape keeps ----------------------------------------------------------------


def _nodes(root: Tensor) -> list[str]:
    """The ops of the graph that reaches `root`, one entry per node."""
    seen, stack, ops = set(), [root], []
    while stack:
        t = stack.pop()
        if id(t) in seen or t._op is None:
            continue
        seen.add(id(t))
        ops.append(t._op.name)
        stack += [a for a in t._args if isinstance(a, Tensor)]
    return ops


def test_the_forward_pass_records_one_node_per_checkpointed_call():
    W, h = data()
    Wt = Tensor(W, requires_grad=True)
    assert len(_nodes(chain(Wt, h, block))) == 4 * BLOCKS + 2  # matmul, tanh twice a block; **2, sum
    ckpt_ops = _nodes(chain(Wt, h, checkpointed_block))
    assert len(ckpt_ops) == BLOCKS + 2
    assert ckpt_ops.count(checkpointed_block.op.name) == BLOCKS


def test_the_functional_forward_pass_makes_one_tensor_per_checkpointed_call():
    W, h = data()
    made = []
    for step in (block, checkpointed_block):
        before = next(tensor_module._numbers)  # every Tensor takes the next number
        adcore.vjp(lambda W, h, step=step: chain(W, h, step), W, h)
        made.append(next(tensor_module._numbers) - before - 1)
    # the two leaves W and h, then per block 4 ops (plain) or 1 (checkpointed), then **2 and sum
    assert made == [2 + 4 * BLOCKS + 2, 2 + BLOCKS + 2]


def test_eager_backward_through_checkpoints_equals_the_plain_one():
    W, h = data()
    grads = []
    for step in (block, checkpointed_block):
        Wt, ht = Tensor(W, requires_grad=True), Tensor(h, requires_grad=True)
        chain(Wt, ht, step).backward()
        grads.append((Wt.grad, ht.grad))
    assert np.array_equal(grads[1][1], grads[0][1])
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-13, atol=1e-15)


def _arrays_held(root: object, shape: tuple) -> int:
    """How many distinct NumPy arrays of `shape` (counted by the array that owns the memory) are
    reachable from root through Python references: what a tape keeps alive, read from the objects
    themselves, so that neither the allocator nor other tests' caches move the count. Modules,
    classes and functions' globals are not followed (they are not the tape's)."""
    seen, owners, stack = set(), {}, [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            while isinstance(obj.base, np.ndarray):
                obj = obj.base
            if obj.shape == shape:
                owners[id(obj)] = obj
        elif isinstance(obj, types.FunctionType):
            stack.extend(cell.cell_contents for cell in obj.__closure__ or () if _filled(cell))
            stack.extend(obj.__defaults__ or ())
        elif not isinstance(obj, (type, types.ModuleType)):
            stack.extend(gc.get_referents(obj))
    return len(owners)


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:  # a closure variable not yet assigned
        return False
    return True


def _kept_by_the_tape(step, W, h) -> tuple[int, int]:
    """Arrays of h's shape that reverse mode's pullback (adcore.vjp) keeps after the forward pass,
    and after the pullback ran."""
    out, vjp_fn = adcore.vjp(lambda W, h: chain(W, h, step), W, h)
    after_forward = _arrays_held(vjp_fn, h.shape)
    vjp_fn(1.0)
    return after_forward, _arrays_held(vjp_fn, h.shape)


def test_the_tape_keeps_the_blocks_outputs_not_their_intermediates():
    W, h = data(64, 32)  # W is (64, 64), so only h and the blocks' arrays have h's shape
    (plain, _), (ckpt, ckpt_after) = (
        _kept_by_the_tape(block, W, h),
        _kept_by_the_tape(checkpointed_block, W, h),
    )
    # plain: four intermediates of h's shape per block (W @ h, tanh, W @ tanh, tanh);
    # checkpointed: each block's output, h itself and the copies vjp keeps of its arguments
    assert plain >= 4 * BLOCKS
    assert ckpt <= BLOCKS + 4
    # the pullback's recomputes and cotangents are let go (vjp's tape is retained for the next call)
    assert ckpt_after <= ckpt


# --- what could give a wrong number: refused ---------------------------------------------


def test_randomness_inside_is_refused_and_the_next_call_works():
    @checkpoint
    def noisy(x):
        return x * np.random.default_rng().standard_normal(x.shape)

    grad = adcore.grad(lambda x: anp.sum(noisy(x)))
    with pytest.raises(adcore.StateChangedError, match="'noisy'.*np.random"):
        grad(np.ones(3))
    steady = checkpoint(lambda x: anp.sin(x) * 2.0)
    assert np.array_equal(adcore.grad(lambda x: anp.sum(steady(x)))(np.zeros(2)), [2.0, 2.0])


def test_a_nan_output_recomputed_is_the_same_output():
    # log(-1) is nan in both passes: NaN != NaN, but it is the same output, not a change
    log = checkpoint(anp.log)
    x = np.array([-1.0, 2.0])
    with np.errstate(invalid="ignore"):
        got = adcore.grad(lambda x: anp.sum(log(x) * 0.5))(x)
    # d/dx 0.5 log x = 0.5 / x at 2; at -1 the value is nan, and so is its slope (docs/conventions.md)
    assert np.array_equal(got, [np.nan, 0.25], equal_nan=True)


def test_a_closed_over_array_changed_before_the_backward_pass_is_refused():
    c = np.ones(3)

    @checkpoint
    def scaled(x):
        return anp.sin(x) * c

    x = np.array([0.1, 0.2, 0.3])
    _, vjp_fn = adcore.vjp(scaled, x)
    c *= 2  # the recompute would see the new c and give twice the derivative
    with pytest.raises(adcore.StateChangedError, match="'scaled'.*in place"):
        vjp_fn(np.ones(3))
    c /= 2
    (g,) = vjp_fn(np.ones(3))
    assert np.array_equal(g, np.cos(x))  # d sin(x) / dx, the values as they were


def test_a_closure_over_a_differentiated_value_is_refused_on_every_backend():
    W, h = data()

    def loss(W, h):
        hidden = checkpoint(lambda h: anp.tanh(W @ h))  # W is traced, but not an argument
        return anp.sum(hidden(h))

    for backend in ("reverse", "forward"):
        with pytest.raises(
            adcore.UnsupportedFunctionError, match="'<lambda>'.*Pass that value as an argument"
        ):
            adcore.grad(loss, backend=backend)(W, h)
    # W constant, h differentiated: nothing is lost, and the same call now works
    expected = adcore.grad(lambda h: anp.sum(anp.tanh(W @ h)))(h)
    assert np.array_equal(adcore.grad(loss, argnums=1)(W, h), expected)


def test_a_write_into_an_argument_is_refused():
    # the body runs on the arrays the tape keeps (here tanh's output, which tanh's VJP reads):
    # h *= 2 there would change them under the backward pass
    @checkpoint
    def double(h):
        h *= 2.0
        return h

    x = np.array([0.3, -0.5])
    with pytest.raises(adcore.UnsupportedFunctionError, match="'double' writes into one of its arguments"):
        adcore.grad(lambda x: anp.sum(double(anp.tanh(x))))(x)
    twice = checkpoint(lambda h: h * 2.0)
    assert np.array_equal(adcore.grad(lambda x: anp.sum(twice(x)))(x), [2.0, 2.0])


def test_an_argument_returned_comes_back_as_a_writable_array():
    transpose = checkpoint(lambda x: x.T)
    y = transpose(np.ones((2, 3)))
    y[0, 0] = 5.0  # not a read-only view of the argument
    assert y.shape == (3, 2) and y[0, 0] == 5.0
    assert np.array_equal(adcore.grad(lambda x: anp.sum(transpose(x) * x))(np.ones(3)), [2.0, 2.0, 2.0])


def test_a_non_array_result_is_refused():
    @checkpoint
    def pair(x):
        return x, x

    with pytest.raises(adcore.InvalidOutputError, match="'pair' returned tuple"):
        adcore.grad(lambda x: anp.sum(pair(x)[0]))(np.ones(3))
