"""transformer.fast.dropout.CheapDropout: nn.Dropout's behaviour with a cheaper mask on CPU."""
import math

import pytest
import torch

from transformer.fast.dropout import LEVELS, CheapDropout as Dropout, drop_mask, keep_bits


def test_eval_mode_and_p_zero_are_the_identity():
    x = torch.randn(5, 7)
    assert Dropout(0.1).eval()(x) is x
    assert Dropout(0.0).train()(x) is x


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_each_of_the_four_16_bit_lanes_drops_at_rate_p(p):
    # One 64-bit word serves four elements: each lane must be uniform on its own.
    torch.manual_seed(0)
    n = 400_000
    dropped = drop_mask((n, 4), p)                       # column j = lane j of each word
    p_rounded = round(p * LEVELS) / LEVELS
    sigma = math.sqrt(p_rounded * (1 - p_rounded) / n)
    rates = dropped.double().mean(0)
    assert (rates - p_rounded).abs().max() < 5 * sigma, rates
    # and the lanes are independent: two lanes of one word are both dropped at rate p^2
    both = torch.stack([(dropped[:, i] & dropped[:, j]).double().mean()
                        for i in range(4) for j in range(i + 1, 4)])
    sigma2 = math.sqrt(p_rounded ** 2 * (1 - p_rounded ** 2) / n)
    assert (both - p_rounded ** 2).abs().max() < 5 * sigma2, both


def test_kept_values_are_scaled_so_the_expectation_is_unchanged():
    torch.manual_seed(1)
    drop = Dropout(0.1).train()
    x = torch.ones(1000, 1000)
    y = drop(x)
    kept = y != 0
    scale = LEVELS / (LEVELS - round(0.1 * LEVELS))
    assert torch.equal(y[kept], torch.full_like(y[kept], scale))
    assert y.mean().item() == pytest.approx(1.0, abs=5 * math.sqrt(0.1 / 0.9 / 1e6))


def test_backward_passes_gradient_through_the_same_mask():
    torch.manual_seed(2)
    x = torch.randn(64, 33, dtype=torch.float64, requires_grad=True)
    y = Dropout(0.25).train()(x)
    upstream = torch.randn_like(y)
    y.backward(upstream)
    kept = y.detach() != 0
    scale = LEVELS / (LEVELS - round(0.25 * LEVELS))
    assert torch.allclose(x.grad, upstream * kept * scale)
    assert torch.allclose(y.detach(), x.detach() * kept * scale)


def test_same_seed_same_mask_and_bf16_input():
    x = torch.randn(8, 50, dtype=torch.bfloat16)
    torch.manual_seed(3)
    a = Dropout(0.1).train()(x)
    torch.manual_seed(3)
    b = Dropout(0.1).train()(x)
    assert a.dtype == torch.bfloat16 and torch.equal(a, b)
    assert 0 < int((a == 0).sum()) < a.numel() // 2


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_the_bitwise_layer_applies_exactly_drop_mask(dtype):
    # The layer zeroes values with an AND of integer bits (keep_bits), not with the bool
    # drop_mask; from the same random state both must drop the same values.
    p = 0.2
    torch.manual_seed(4)                  # a million draws: ~15 fall on the threshold itself
    dropped = drop_mask((1000, 1000), p)
    torch.manual_seed(4)
    assert torch.equal(keep_bits((1000, 1000), p), torch.where(dropped, 0, -1).to(torch.int16))
    torch.manual_seed(4)
    dropped = drop_mask((300, 77), p)
    x = torch.randn(300, 77, dtype=dtype)
    x[0, :] = float("nan")                                   # a dropped NaN becomes 0
    x = x.t().contiguous().t().requires_grad_()               # a non-contiguous layout
    torch.manual_seed(4)
    y = Dropout(p).train()(x)
    scale = LEVELS / (LEVELS - round(p * LEVELS))
    expected = x.detach().masked_fill(dropped, 0) * scale
    assert y.dtype == dtype and torch.equal(y.isnan(), expected.isnan())
    assert torch.equal(y.detach().nan_to_num(), expected.nan_to_num())
    assert (y.detach()[dropped] == 0).all() and not y.detach()[dropped].signbit().any()
    upstream = torch.randn_like(y)
    y.backward(upstream)
    assert torch.equal(x.grad, upstream.masked_fill(dropped, 0) * scale)


def test_compiled_cheap_dropout_draws_the_same_cheap_mask_as_eager():
    # under torch.compile on a CPU the layer keeps its 16-bit mask (one opaque operator),
    # so the same random state drops the same elements
    layer = Dropout(0.2)
    x = torch.randn(64, 48)
    torch.manual_seed(3)
    eager = layer(x)
    compiled = torch.compile(layer, dynamic=True)
    torch.manual_seed(3)
    assert torch.equal(compiled(x), eager)
