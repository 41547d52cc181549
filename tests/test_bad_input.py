"""Bad input gets a clear error that names the problem."""
import pytest
import torch

from transformer import FastTransformer, ModelConfig, Transformer

MODEL = Transformer(ModelConfig.small(vocab_size=30, max_len=16)).eval()
FAST = FastTransformer(MODEL.cfg).eval()
SRC, TGT = torch.randint(4, 30, (2, 5)), torch.randint(4, 30, (2, 4))


@pytest.mark.parametrize("src,tgt,error,message", [
    (SRC[0], TGT, ValueError, r"src must have shape \(batch, length\), got shape \(5,\)"),
    (SRC, TGT[None], ValueError, r"tgt_in must have shape \(batch, length\)"),
    (SRC.float(), TGT, TypeError, "src must hold integer token ids.*float32"),
    (SRC.tolist(), TGT, TypeError, "src must be a torch.Tensor"),
    (SRC, TGT[:1], ValueError, "different batch sizes: 2 and 1"),
    (torch.full((2, 5), 30), TGT, ValueError, r"src holds token id 30, outside the vocabulary \[0, 30\)"),
    (SRC, torch.full((2, 4), -1), ValueError, "tgt_in holds token id -1"),
    (torch.randint(4, 30, (2, 17)), TGT, ValueError, "src has length 17.*cfg.max_len=16"),
])
def test_bad_batches_raise_clear_errors(src, tgt, error, message):
    for model in (MODEL, FAST):
        with pytest.raises(error, match=message):
            model(src, tgt)


def test_decoding_past_the_positional_table():
    from transformer import KVCache
    src_mask = FAST.source_mask(SRC)
    memory = FAST.encode(SRC, src_mask)
    cache = KVCache()
    cache.length = 16
    with pytest.raises(ValueError, match="positional table"):
        FAST.decode(TGT[:, :1], memory, src_mask, cache)
    with pytest.raises(ValueError, match=r"tgt_in reaches position 17.*cfg.max_len=16"):
        MODEL(SRC, torch.randint(4, 30, (2, 17)))


def test_memory_of_the_wrong_shape():
    with pytest.raises(ValueError, match="memory must have shape"):
        FAST.decode(TGT, torch.randn(3, 5, 256), None)


def test_a_source_of_only_padding():
    src = SRC.clone()
    src[1] = 0
    for model in (MODEL, FAST):
        with pytest.raises(ValueError, match="src row 1 holds only padding"):
            model(src, TGT)
