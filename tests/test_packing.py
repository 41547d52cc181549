"""Padding-free position-wise layers: same numbers as the padded layout, less work."""
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer import ModelConfig, Transformer
from transformer.loss import LabelSmoothingLoss
from transformer.packing import Packing
from transformer.trainer import SequenceLoss

CFG = ModelConfig(vocab_size=60, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                  n_decoder_layers=2, dropout=0.0)


def padded_batch(seed=0, batch=4, src_len=9, tgt_len=7, aligned=True):
    """src, tgt_in, tgt_out, right-padded. ``aligned``: tgt_in = <bos> y and tgt_out = y <eos>
    have the same pad positions, as the trainer's batches do; else tgt_out has one pad more."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, CFG.vocab_size, (batch, src_len), generator=g)
    tgt_in = torch.randint(4, CFG.vocab_size, (batch, tgt_len), generator=g)
    tgt_out = torch.randint(4, CFG.vocab_size, (batch, tgt_len), generator=g)
    for i in range(1, batch):                    # row 0 full length, the others shorter
        src[i, src_len - 2 * i:] = CFG.pad_id
        tgt_in[i, tgt_len - i:] = CFG.pad_id
        tgt_out[i, tgt_len - i - (0 if aligned else 1):] = CFG.pad_id
    return src, tgt_in, tgt_out


def test_pack_and_unpack_are_inverse_with_zeros_at_padding():
    keep = torch.tensor([[True, True, False], [True, False, False]])
    packing = Packing(keep)
    x = torch.arange(2 * 3 * 2, dtype=torch.float).view(2, 3, 2)
    rows = packing.pack(x)
    assert len(packing) == 3 and rows.tolist() == [[0, 1], [2, 3], [6, 7]]
    back = packing.unpack(rows)
    assert torch.equal(back[keep], x[keep]) and not back[~keep].any()


def test_packing_of_a_batch_without_padding_is_none():
    assert Packing.of(torch.tensor([[5, 6], [7, 8]]), pad_id=0) is None
    assert len(Packing.of(torch.tensor([[5, 6], [7, 0]]), pad_id=0)) == 3


def test_packing_rejects_a_mask_of_the_wrong_kind():
    with pytest.raises(ValueError, match="bool"):
        Packing(torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"\(batch, length\)"):
        Packing(torch.ones(2, 1, 3, dtype=torch.bool))


def loss_and_grads(model, batch):
    model.zero_grad(set_to_none=True)
    loss = SequenceLoss(model, LabelSmoothingLoss(0.1, pad_id=CFG.pad_id))(*batch)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_training_step_is_the_same_with_and_without_padding_skipped(norm, aligned):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(**{**CFG.to_dict(), "norm_position": norm})).train()
    batch = padded_batch(aligned=aligned)
    model.skip_padding = False
    loss_padded, grads_padded = loss_and_grads(model, batch)
    model.skip_padding = True
    loss_packed, grads_packed = loss_and_grads(model, batch)
    assert torch.allclose(loss_packed, loss_padded, rtol=1e-6)
    for name, g in grads_padded.items():
        assert torch.allclose(grads_packed[name], g, rtol=1e-4, atol=1e-6), name


def forward_flops(model, batch, skip_padding):
    model.skip_padding = skip_padding
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(*batch[:2])
    return counter.get_total_flops()


def test_skipping_padding_saves_the_padding_share_of_the_work():
    model = Transformer(CFG).eval()
    batch = padded_batch()
    padded, packed = forward_flops(model, batch, False), forward_flops(model, batch, True)
    src, tgt_in = batch[:2]
    real = (src != CFG.pad_id).float().mean() * 0.5 + (tgt_in != CFG.pad_id).float().mean() * 0.5
    assert packed < padded * (1 + real) / 2          # well below: most of the saving is made
    unpadded = padded_batch(batch=1)                 # one sentence: nothing to skip
    assert forward_flops(model, unpadded, True) == forward_flops(model, unpadded, False)


def test_decode_states_returns_the_rows_asked_for():
    model = Transformer(CFG).eval()
    src, tgt_in, tgt_out = padded_batch()
    src_mask = model.source_mask(src)
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        full = model.decode_states(tgt_in, memory, src_mask)
        assert not full[tgt_in == CFG.pad_id].any()                # zeros at padding
        for rows in (tgt_in != CFG.pad_id, tgt_out != CFG.pad_id,
                     torch.rand(tgt_in.shape) < 0.5):
            got = model.decode_states(tgt_in, memory, src_mask, rows=rows)
            assert torch.allclose(got, full[rows], atol=1e-6)


def test_padding_a_real_token_can_see_is_not_skipped():
    # Left-padded targets: under the causal mask real tokens see the pads before them, so
    # skipping those would change the output; the model keeps the padded layout instead.
    # Likewise a source mask that lets queries see padding (here: all True).
    model = Transformer(CFG).eval()
    src, tgt_in, _ = padded_batch()
    left_padded = torch.cat([torch.full((4, 2), CFG.pad_id), tgt_in[:, :5]], dim=1)
    see_all = torch.ones(4, 1, 1, src.size(1), dtype=torch.bool)
    outputs = []
    with torch.no_grad():
        for skip in (True, False):
            model.skip_padding = skip
            memory = model.encode(src, see_all)
            outputs.append((memory, model.decode_states(left_padded, memory, see_all)))
    (memory_a, states_a), (memory_b, states_b) = outputs
    assert torch.allclose(memory_a, memory_b, atol=1e-5)
    assert torch.allclose(states_a, states_b, atol=1e-5)
    assert Packing.of_right_padded(left_padded, CFG.pad_id) is None
    per_query = torch.ones(4, 1, src.size(1), src.size(1), dtype=torch.bool)
    assert Packing.of_mask(per_query, 4, src.size(1)) is None          # not (B, 1, 1, S)
