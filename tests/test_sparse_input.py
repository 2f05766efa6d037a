"""The networks' first layer computed from the nonzero entries (agents/players/sparse_input.py) equals the dense
layer: outputs, gradients, minibatches, every critic kind, and the fallbacks to the dense product."""

import numpy as np
import pytest
import torch

from agents.players.network import ActorCritic
from agents.players.sparse_input import MAX_DENSITY, MIN_ROWS, SparseRows, linear_in, weights_frozen


def sparse_batch(n, d, density, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.random((n, d)) < density) * rng.uniform(-2, 2, (n, d))
    return x.astype(np.float32)


@pytest.mark.parametrize("density", [0.0, 0.02, 0.1, 0.5, 1.0])
def test_sparse_rows_round_trip(density):
    x = sparse_batch(70, 45, density)
    rows = SparseRows.of(x)
    assert len(rows) == 70 and rows.width == 45
    assert np.array_equal(rows.counts.numpy(), (x != 0).sum(1))
    assert rows.cols.shape[1] == max(1, int((x != 0).sum(1).max()))
    assert np.array_equal(rows.dense().numpy(), x)
    j = torch.tensor([5, 0, 69, 5])
    assert np.array_equal(rows[j].dense().numpy(), x[[5, 0, 69, 5]])
    assert np.array_equal(rows[3:9].dense().numpy(), x[3:9])


def test_sparse_rows_density_limit_and_bad_input():
    x = sparse_batch(40, 20, 0.5)
    assert SparseRows.of(x, max_density=0.25) is None  # a row has more than 5 nonzero entries
    assert SparseRows.of(np.zeros((0, 8), np.float32)).dense().shape == (0, 8)
    with pytest.raises(ValueError, match="2-D float32"):
        SparseRows.of(x.astype(np.float64))
    with pytest.raises(ValueError, match="2-D float32"):
        SparseRows.of(x[0])


def test_linear_in_equals_the_dense_layer_with_gradients():
    torch.manual_seed(0)
    x = sparse_batch(300, 200, 0.08)
    dense_layer = torch.nn.Linear(200, 64)
    sparse_layer = torch.nn.Linear(200, 64)
    sparse_layer.load_state_dict(dense_layer.state_dict())
    g = torch.randn(300, 64)
    ref = dense_layer(torch.from_numpy(x))
    (ref * g).sum().backward()
    out = linear_in(sparse_layer, SparseRows.of(x))
    assert out.grad_fn is not None and "SparseLinear" in type(out.grad_fn).__name__
    (out * g).sum().backward()
    assert torch.allclose(out, ref, atol=1e-5)
    assert torch.allclose(sparse_layer.weight.grad, dense_layer.weight.grad, atol=1e-4)
    assert torch.allclose(sparse_layer.bias.grad, dense_layer.bias.grad, atol=1e-4)
    assert torch.equal(linear_in(sparse_layer, SparseRows.of(x)), out)  # deterministic


def test_linear_in_chooses_the_dense_product_where_the_sparse_one_does_not_pay():
    layer = torch.nn.Linear(100, 16)
    sparse = torch.from_numpy(sparse_batch(MIN_ROWS, 100, 0.05))
    assert "SparseLinear" in type(linear_in(layer, sparse).grad_fn).__name__  # dense CPU rows, converted
    few = sparse[: MIN_ROWS - 1]
    assert "Addmm" in type(linear_in(layer, few).grad_fn).__name__
    dense = torch.from_numpy(sparse_batch(MIN_ROWS, 100, min(1.0, 2 * MAX_DENSITY)))
    assert "Addmm" in type(linear_in(layer, dense).grad_fn).__name__
    needs_grad = sparse.clone().requires_grad_()
    assert "Addmm" in type(linear_in(layer, needs_grad).grad_fn).__name__
    for x in (few, dense, needs_grad, sparse):
        assert torch.allclose(linear_in(layer, x), layer(x), atol=1e-5)
    with pytest.raises(ValueError, match="100"):
        linear_in(layer, SparseRows.of(sparse_batch(4, 99, 0.1)))


def test_weights_are_read_at_every_pass_outside_a_frozen_block():
    layer = torch.nn.Linear(50, 8)
    x = torch.from_numpy(sparse_batch(64, 50, 0.1))
    opt = torch.optim.Adam(layer.parameters(), lr=0.1, fused=True)  # leaves the version counter as it was
    first = linear_in(layer, x)
    first.sum().backward()
    opt.step()
    again = linear_in(layer, x)
    assert torch.allclose(again, layer(x), atol=1e-5) and not torch.allclose(again, first)
    with weights_frozen():  # a rollout: transposed once, reused, forgotten at the end of the block
        a, b = linear_in(layer, x), linear_in(layer, x)
        assert torch.equal(a, b) and torch.allclose(a, layer(x), atol=1e-5)
    with torch.no_grad():
        layer.weight.mul_(2.0)
    assert torch.allclose(linear_in(layer, x), layer(x), atol=1e-5)


@pytest.mark.parametrize("critic", ["shared", "separate", "central"])
def test_actor_critic_on_sparse_rows_equals_dense(critic):
    torch.manual_seed(1)
    net = ActorCritic(120, 9, [32, 16], critic, state_size=150)
    obs, state = sparse_batch(80, 120, 0.1, 1), sparse_batch(80, 150, 0.1, 2)
    mask = torch.from_numpy(np.random.default_rng(3).random((80, 9)) < 0.6)
    mask[:, 0] = True
    dense_out = net(torch.from_numpy(obs).requires_grad_(), mask, torch.from_numpy(state).requires_grad_())
    sparse_out = net(SparseRows.of(obs), mask, SparseRows.of(state))
    for a, b in zip(dense_out, sparse_out):
        assert torch.allclose(a, b, atol=1e-5)
    assert torch.allclose(net.masked_logits(SparseRows.of(obs), mask), dense_out[0], atol=1e-5)
