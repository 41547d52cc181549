import pytest

from transformer import ModelConfig, Transformer


def test_presets_match_table_3():
    base, big = ModelConfig.base(vocab_size=37000), ModelConfig.big(vocab_size=37000)
    assert (base.n_encoder_layers, base.d_model, base.d_ff, base.n_heads, base.d_k, base.d_v,
            base.dropout) == (6, 512, 2048, 8, 64, 64, 0.1)
    assert (big.n_encoder_layers, big.d_model, big.d_ff, big.n_heads, big.d_k, big.d_v,
            big.dropout) == (6, 1024, 4096, 16, 64, 64, 0.3)
    assert base.norm_position == "post" and base.positional == "sinusoidal"
    assert base.share_embeddings


def test_tiny_preset_is_wu_et_al_transformer_tiny_with_pre_norm():
    tiny = ModelConfig.tiny(vocab_size=8000)
    assert (tiny.n_encoder_layers, tiny.n_decoder_layers, tiny.d_model, tiny.d_ff,
            tiny.n_heads, tiny.d_k, tiny.dropout) == (4, 4, 128, 256, 4, 32, 0.3)
    assert tiny.norm_position == "pre" and tiny.share_embeddings
    assert tiny.extra["preset"] == "tiny"
    assert Transformer(tiny).num_parameters() == 2_349_568     # the README's figure
    # the README's recipe run was `--preset small` with these overrides: the same model
    as_run = ModelConfig.small(vocab_size=8000, d_model=128, d_ff=256, n_encoder_layers=4,
                               n_decoder_layers=4, dropout=0.3, norm_position="pre")
    assert {**tiny.to_dict(), "extra": {}} == {**as_run.to_dict(), "extra": {}}


@pytest.mark.parametrize("preset,paper", [("base", 65e6), ("big", 213e6)])
def test_parameter_counts_within_3_percent_of_paper(preset, paper):
    model = Transformer(ModelConfig.from_preset(preset, vocab_size=37000))
    n = model.num_parameters()
    assert abs(n - paper) / paper <= 0.03, f"{preset}: {n:,} parameters vs {paper:,.0f}"


def test_shared_embeddings_are_one_matrix():
    model = Transformer(ModelConfig.small(vocab_size=500))
    assert model.src_embed.weight is model.tgt_embed.weight is model.output_weight
    unshared = Transformer(ModelConfig.small(vocab_size=500, share_embeddings=False))
    assert unshared.src_embed.weight is not unshared.tgt_embed.weight
    assert unshared.num_parameters() - model.num_parameters() == 2 * 500 * 256


@pytest.mark.parametrize("overrides,field", [
    (dict(d_model=510, n_heads=8), "d_model"),
    (dict(d_model=0), "d_model"),
    (dict(d_ff=-1), "d_ff"),
    (dict(n_heads=0), "n_heads"),
    (dict(n_encoder_layers=0), "n_encoder_layers"),
    (dict(dropout=1.0), "dropout"),
    (dict(dropout=-0.1), "dropout"),
    (dict(attention_dropout=1.5), "attention_dropout"),
    (dict(norm_position="middle"), "norm_position"),
    (dict(positional="rotary"), "positional"),
    (dict(vocab_size=0), "vocab_size"),
    (dict(tgt_vocab_size=99), "share_embeddings"),
])
def test_invalid_values_name_the_field(overrides, field):
    with pytest.raises(ValueError, match=field):
        ModelConfig.base(**{"vocab_size": 100, **overrides})


def test_invalid_value_is_in_the_message():
    with pytest.raises(ValueError, match="0.5|510"):
        ModelConfig.base(vocab_size=100, d_model=510)


def test_unknown_preset_and_field():
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        ModelConfig.from_preset("huge")
    with pytest.raises(ValueError, match="d_modle"):
        ModelConfig.base(d_modle=3)


def test_round_trip_through_dict():
    cfg = ModelConfig.big(vocab_size=123, norm_position="pre", positional="learned")
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
