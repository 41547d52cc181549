"""Section 6.1: greedy decoding, beam search with the GNMT length penalty, translate()."""
import math

import pytest
import torch
import torch.nn.functional as F

from helpers import StandInModel, toy_config
from transformer import FastTransformer, Transformer
from transformer.decoding import (PAPER_SEARCH, Search, beam_search, build_source_batch, decode,
                                  greedy_decode, length_penalty, sequence_scores)
from transformer.translation import translate

PAD, BOS, EOS = 0, 1, 2
V = 24
SMALL = dict(vocab_size=V, max_len=64)          # the toy model over V ids


def random_sources(n, generator, min_len=1, max_len=10, vocab=V):
    """n token lists of random length, ids in [4, vocab)."""
    lengths = torch.randint(min_len, max_len + 1, (n,), generator=generator).tolist()
    return [torch.randint(4, vocab, (L,), generator=generator).tolist() for L in lengths]


class EosBiasedTransformer(FastTransformer):
    """Adds a constant to the EOS logit so that a random model stops at varied lengths."""

    eos_bias = 0.0

    def project(self, states):
        logits = super().project(states)
        logits[..., self.cfg.eos_id] += self.eos_bias
        return logits


def random_model(seed=0, eos_bias=0.0, **overrides):
    torch.manual_seed(seed)
    model = EosBiasedTransformer(toy_config(**{**SMALL, **overrides})).eval()
    model.eos_bias = eos_bias
    return model


pytestmark = pytest.mark.usefixtures("one_thread")


# ------------------------------------------------------------------ length penalty
def test_length_penalty_formula():
    assert length_penalty(1, 0.6) == pytest.approx(1.0)          # (5 + 1) / 6 = 1
    assert length_penalty(7, 0.0) == 1.0
    assert length_penalty(11, 1.0) == pytest.approx(16 / 6)
    assert length_penalty(25, 0.6) == pytest.approx(5.0 ** 0.6)


A, B, C = 4, 5, 6                               # the ordinary tokens of the tables below


def table(prefix, source):
    """A next-token distribution that is a fixed table of the prefix.

    After BOS: A 0.6, B 0.35 (EOS may not come first). After BOS A: EOS 0.5. After BOS B:
    C 0.9, then EOS 0.9. So "A" has log-prob -1.204 and "B C" -1.260: alpha = 0 prefers
    the shorter, alpha = 0.6 (-1.098 vs -1.060) and alpha = 2 the longer.
    """
    row = torch.full((8,), 1e-3)
    if prefix == [BOS]:
        row[EOS], row[A], row[B] = 0.04, 0.6, 0.35
    elif prefix == [BOS, A]:
        row[EOS], row[B:] = 0.5, 0.1
    elif prefix == [BOS, B]:
        row[C] = 0.9
    else:
        row[EOS] = 0.9
    return (row / row.sum()).log()


def test_alpha_changes_the_chosen_hypothesis():
    model, src = StandInModel(table, vocab=8), torch.tensor([[5, 6, EOS]])
    assert greedy_decode(model, src) == [[A]]
    assert beam_search(model, src, beam_size=2, alpha=0.0) == [[A]]
    assert beam_search(model, src, beam_size=2, alpha=0.6) == [[B, C]]
    assert beam_search(model, src, beam_size=2, alpha=2.0) == [[B, C]]


def test_no_output_is_empty():
    # a model that puts almost all its mass on EOS first still emits one real token
    model = random_model(seed=6, eos_bias=20.0)
    gen = torch.Generator().manual_seed(6)
    src = build_source_batch(random_sources(8, gen), PAD, EOS)
    greedy = greedy_decode(model, src)
    beams = beam_search(model, src, beam_size=4, alpha=0.6)
    assert all(len(h) == 1 for h in greedy) and all(len(h) == 1 for h in beams)
    assert all(EOS not in h for h in greedy + beams)


# ------------------------------------------------------------- exactness checks
def test_beam_one_is_exactly_greedy():
    model = random_model(seed=1)
    gen = torch.Generator().manual_seed(1)
    n_compared, lengths = 0, set()
    for trial in range(12):
        seqs = random_sources(9, gen, max_len=12)
        src = build_source_batch(seqs, PAD, EOS)
        extra = [0, 3, 10][trial % 3]
        greedy = greedy_decode(model, src, max_extra=extra)
        for alpha in (0.0, 0.6):
            assert beam_search(model, src, beam_size=1, alpha=alpha, max_extra=extra) == greedy
        n_compared += len(greedy)
        lengths.update(len(h) for h in greedy)
    assert n_compared == 108 and len(lengths) > 5      # varied outputs, not all empty


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_cached_equals_uncached(norm):
    model = random_model(seed=2, norm_position=norm).double()
    gen = torch.Generator().manual_seed(2)
    src = build_source_batch(random_sources(10, gen), PAD, EOS)
    greedy = greedy_decode(model, src, max_extra=8)
    assert greedy == greedy_decode(model, src, max_extra=8, use_cache=False)
    beam = beam_search(model, src, beam_size=4, max_extra=8)
    assert beam == beam_search(model, src, beam_size=4, max_extra=8, use_cache=False)
    assert any(len(h) > 0 for h in greedy) and beam != greedy


class NoEosTransformer(FastTransformer):
    def project(self, states):
        logits = super().project(states)
        logits[..., self.cfg.eos_id] = -1e4
        return logits


@pytest.mark.parametrize("use_cache", [True, False])
def test_max_length_is_source_length_plus_max_extra(use_cache):
    torch.manual_seed(3)
    model = NoEosTransformer(toy_config(**{**SMALL, "max_len": 20}))
    src = build_source_batch([[5], [5, 6, 7, 8], [9] * 12], PAD, EOS)   # 2, 5, 13 tokens
    # cfg.max_len = 20 caps the output at 19 tokens (BOS + 19 + the closing EOS = 21 > 20
    # is avoided: the forced EOS is position 20 of the decoder input, index 19).
    expected = [2 + 4, 5 + 4, min(13 + 4, 19)]
    assert [len(h) for h in greedy_decode(model, src, 4, use_cache)] == expected
    assert [len(h) for h in beam_search(model, src, 3, 0.6, 4, use_cache)] == expected
    assert [len(h) for h in greedy_decode(model, src, 0, use_cache)] == [2, 5, 13]
    assert [len(h) for h in greedy_decode(model, src, 50, use_cache)] == [19, 19, 19]


def test_greedy_output_is_the_argmax_chain_and_stops_at_eos():
    model = random_model(seed=4, eos_bias=2.0)
    gen = torch.Generator().manual_seed(4)
    src = build_source_batch(random_sources(16, gen), PAD, EOS)
    max_extra = 6
    hyps = greedy_decode(model, src, max_extra=max_extra)
    n_src = (src != PAD).sum(1).tolist()
    stopped_at_eos = 0
    for b, hyp in enumerate(hyps):
        assert EOS not in hyp and PAD not in hyp and BOS not in hyp
        tgt_in = torch.tensor([[BOS] + hyp])
        with torch.no_grad():
            logits = model(src[b:b + 1, :n_src[b]], tgt_in)[0]
        logits[:, [PAD, BOS]] = float("-inf")
        logits[0, EOS] = float("-inf")             # the first token is never EOS
        chain = logits.argmax(-1).tolist()
        assert chain[:len(hyp)] == hyp
        if len(hyp) < n_src[b] + max_extra:
            assert chain[len(hyp)] == EOS          # stopped exactly where EOS was chosen
            stopped_at_eos += 1
    assert stopped_at_eos >= 3


def test_bound_stopping_never_loses_to_count_stopping():
    model = random_model(seed=5).double()
    gen = torch.Generator().manual_seed(5)
    src = build_source_batch(random_sources(12, gen), PAD, EOS)
    alpha = 0.6

    def normalised(hyps):
        return sequence_scores(model, src, hyps) / torch.tensor(
            [length_penalty(len(h) + 1, alpha) for h in hyps], dtype=torch.float64)

    count = beam_search(model, src, beam_size=3, alpha=alpha, max_extra=8, stopping="count")
    bound = beam_search(model, src, beam_size=3, alpha=alpha, max_extra=8, stopping="bound")
    assert bool((normalised(bound) >= normalised(count) - 1e-9).all())


# ------------------------------------------------------------ a model that learned
def train_copy_model(steps=300, batch=64):
    torch.manual_seed(0)
    # wider and shallower than the toy: it learns to copy in 300 steps
    cfg = toy_config(vocab_size=20, d_model=64, layers=1, max_len=64, dropout=0.0)
    model = Transformer(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.98))
    gen = torch.Generator().manual_seed(10)
    for _ in range(steps):
        seqs = random_sources(batch, gen, min_len=3, max_len=8, vocab=20)
        src = build_source_batch(seqs, PAD, EOS)
        tgt = build_source_batch([[BOS] + s for s in seqs], PAD, EOS)
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@pytest.fixture(scope="module")
def copy_model():
    return train_copy_model()


def test_trained_copy_model_is_reproduced_by_greedy_and_beam(copy_model):
    gen = torch.Generator().manual_seed(123)              # held-out random sequences
    seqs = random_sources(100, gen, min_len=3, max_len=8, vocab=20)
    src = build_source_batch(seqs, PAD, EOS)
    greedy = greedy_decode(copy_model, src, max_extra=5)
    beam = beam_search(copy_model, src, beam_size=4, alpha=0.0, max_extra=5)
    beam_lp = beam_search(copy_model, src, beam_size=4, alpha=0.6, max_extra=5)
    for hyps in (greedy, beam, beam_lp):
        assert sum(h == s for h, s in zip(hyps, seqs)) >= 90
    # The "count" rule may stop a sentence before its best hypothesis ends (fairseq's rule:
    # k finished hypotheses, however poor); the "bound" rule stops only when nothing live
    # can win: on average it finds hypotheses at least as probable as greedy's.
    bound = beam_search(copy_model, src, beam_size=4, alpha=0.0, max_extra=5, stopping="bound")
    greedy_score = sequence_scores(copy_model, src, greedy)
    bound_score = sequence_scores(copy_model, src, bound)
    assert bound_score.mean() >= greedy_score.mean() - 1e-6
    beam_score = sequence_scores(copy_model, src, beam).mean()
    assert math.isfinite(float(beam_score)) and float(beam_score) > -1.0


class WordTokenizer:
    """A fake tokenizer: word 'w{i}' <-> id i."""

    def encode_batch(self, texts):
        return [[int(w[1:]) for w in t.split()] for t in texts]

    def decode_batch(self, ids):
        return [" ".join(f"w{i}" for i in seq) for seq in ids]


def test_translate_restores_order_and_batches(copy_model):
    gen = torch.Generator().manual_seed(7)
    seqs = random_sources(23, gen, min_len=3, max_len=8, vocab=20)
    sentences = [" ".join(f"w{i}" for i in s) for s in seqs]
    was_training = copy_model.training
    copy_model.train()
    try:
        out = translate(copy_model, WordTokenizer(), sentences, beam_size=4, batch_size=5)
        assert copy_model.training                       # mode restored
    finally:
        copy_model.train(was_training)
    assert sum(o == s for o, s in zip(out, sentences)) >= 20
    greedy = translate(copy_model, WordTokenizer(), sentences, beam_size=1, max_tokens=30)
    assert greedy == translate(copy_model, WordTokenizer(), sentences[::-1], beam_size=1)[::-1]
    assert translate(copy_model, WordTokenizer(), []) == []
    # the search as one value: a keyword changes it for one call, as generate(config, **kw)
    assert translate(copy_model, WordTokenizer(), sentences, Search(beam_size=1)) == greedy
    assert translate(copy_model, WordTokenizer(), sentences, batch_size=5) == out


def test_a_search_is_one_checked_value_that_decode_runs_and_json_carries(copy_model):
    """Search carries the settings from the caller to the decoder: checked when made,
    changed by name, written and read back as the export's manifest holds it; decode runs
    greedy for a beam of 1 and beam search otherwise, with every setting it holds."""
    assert PAPER_SEARCH == Search() and Search.from_dict(PAPER_SEARCH.to_dict()) == PAPER_SEARCH
    assert PAPER_SEARCH.to_dict()["min_output_tokens"] == 1
    wide = PAPER_SEARCH.replace(beam_size=3, alpha=0.0, max_extra=2, stopping="bound")
    assert Search.from_dict(wide.to_dict()) == wide and PAPER_SEARCH.beam_size == 4
    for bad in ({"beam_size": 0}, {"alpha": float("nan")}, {"max_extra": -1},
                {"stopping": "never"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            PAPER_SEARCH.replace(**bad)
    with pytest.raises(TypeError, match="beam is not a search setting"):
        PAPER_SEARCH.replace(beam=2)
    with pytest.raises(ValueError, match="min_output_tokens"):
        Search.from_dict({**PAPER_SEARCH.to_dict(), "min_output_tokens": 0})
    gen = torch.Generator().manual_seed(3)
    src = build_source_batch(random_sources(6, gen, min_len=2, max_len=7, vocab=20), PAD, EOS)
    assert decode(copy_model, src, Search(beam_size=1, max_extra=2)) == \
        greedy_decode(copy_model, src, max_extra=2)
    assert decode(copy_model, src, wide) == \
        beam_search(copy_model, src, beam_size=3, alpha=0.0, max_extra=2, stopping="bound")
    with pytest.raises(TypeError, match="search must be"):
        translate(copy_model, WordTokenizer(), ["w5"], 4)     # a setting goes by its name


# ---------------------------------------------------------------- bad input
def test_bad_arguments_raise_clear_errors():
    model = random_model()
    src = build_source_batch([[5, 6]], PAD, EOS)
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(model, src, beam_size=0)
    with pytest.raises(ValueError, match="alpha"):
        beam_search(model, src, alpha=-0.1)
    with pytest.raises(ValueError, match="stopping"):
        beam_search(model, src, stopping="never")
    with pytest.raises(ValueError, match="max_extra"):
        greedy_decode(model, src, max_extra=-1)
    with pytest.raises(ValueError, match="only padding"):
        greedy_decode(model, torch.tensor([[5, EOS], [PAD, PAD]]))
    with pytest.raises(ValueError, match="shape"):
        beam_search(model, torch.tensor([5, EOS]))
    with pytest.raises(ValueError, match="beam_size"):
        translate(model, WordTokenizer(), ["w5"], beam_size=0)
    with pytest.raises(ValueError, match="alpha"):
        translate(model, WordTokenizer(), ["w5"], alpha=-1)
    with pytest.raises(TypeError, match="list of strings"):
        translate(model, WordTokenizer(), "w5 w6")
    assert greedy_decode(model, torch.zeros(0, 3, dtype=torch.long)) == []
    assert beam_search(model, torch.zeros(0, 3, dtype=torch.long)) == []


def test_build_source_batch_appends_eos_and_pads():
    src = build_source_batch([[5, 6, 7], [], [8]], PAD, EOS)
    assert src.tolist() == [[5, 6, 7, EOS], [EOS, PAD, PAD, PAD], [8, EOS, PAD, PAD]]
    assert build_source_batch([[5, 6, 7, 8]], PAD, EOS, max_len=3).tolist() == [[5, 6, EOS]]


def random_table(seed):
    """A stand-in model whose next-token distribution is a random function of the prefix
    (seeded by it): tokens 3 and 4 and EOS, small enough to list every output."""
    def scores(prefix, source):
        logits = torch.full((8,), -30.0)
        gen = torch.Generator().manual_seed(hash((seed, *prefix)) % 2**31)
        logits[[EOS, 3, 4]] = 2.0 * torch.randn(3, generator=gen)
        return logits.log_softmax(-1)
    return StandInModel(scores, vocab=8)


def brute_force_best(model, src, alpha, max_tokens):
    """The output maximising log P(Y) / lp(|Y|), over every output of 1..max_tokens tokens."""
    import itertools
    best = None
    for n in range(1, max_tokens + 1):
        for out in itertools.product((3, 4), repeat=n):
            prefix, logp = [BOS], 0.0
            for token in (*out, EOS):
                logits = model.scores(prefix, src[0].tolist())
                logp += float(logits.double().log_softmax(-1)[token])
                prefix.append(token)
            score = logp / length_penalty(n + 1, alpha)
            if best is None or score > best[0]:
                best = (score, list(out))
    return best[1]


def test_beam_search_chooses_per_the_length_penalty_for_every_alpha():
    # Cases where alpha changes the answer: a beam wide enough to keep every hypothesis
    # must pick, for each alpha, the output a brute-force search of log P / lp picks.
    alphas, src, max_extra = (0.0, 0.3, 0.6, 1.0, 1.5), torch.tensor([[3, EOS]]), 1
    cases = 0
    for seed in range(150):
        model = random_table(seed)
        best = {a: brute_force_best(model, src, a, max_tokens=2 + max_extra) for a in alphas}
        if len({tuple(b) for b in best.values()}) == 1:
            continue                                    # alpha does not matter here
        cases += 1
        for alpha in alphas:
            assert beam_search(model, src, beam_size=32, alpha=alpha, max_extra=max_extra,
                               stopping="bound") == [best[alpha]], (seed, alpha)
    assert cases >= 10


def test_doubt_names_unknown_input_and_loops_and_passes_sound_sentences():
    from transformer.doubt import doubt
    unk = 3
    assert "unknown" in doubt([900, unk], unk, "Ein Hund.")              # half unknown
    assert doubt([900, 5, 6, unk], unk, "Ein Hund läuft.") is None         # a quarter
    assert "Hund" in doubt([5, 6], unk, "Ein Hund, der Hund Hund Hund Hund.")
    assert "über den Kreis" in doubt([5, 6], unk, "Die Wette über den Kreis über den Kreis.")
    assert "P" in doubt([5, 6], unk, "Ein Ca-Koll P P P")
    for sound in ("Ein kleiner Junge in einer roten Jacke klettert eine Felswand hinauf.",
                  "Ein Mann und eine Frau und ein Kind gehen.", "", "Nein, nein."):
        assert doubt([5, 6], unk, sound) is None, sound


class CountingTokenizer:
    """A stand-in tokenizer: sentence ``"n"`` is ``n`` ids (the source lengths are exact)."""

    def encode_batch(self, sentences):
        return [[5 + k % 10 for k in range(int(s))] for s in sentences]

    def decode_batch(self, outputs):
        return [" ".join(map(str, out)) for out in outputs]


@pytest.mark.parametrize("tokens, too_long", [(7, False), (8, True), (9, True)])
def test_a_source_too_long_with_its_eos_is_flagged_and_truncated(tokens, too_long):
    """The encoder reads the source and its EOS: ``max_len`` ids of text plus the EOS do
    not fit ``max_len`` positions, so a sentence of exactly ``max_len`` tokens is one too
    long (warned of, and what is translated is its first ``max_len - 1``); one of
    ``max_len - 1`` fits whole, without a warning."""
    import warnings
    from transformer.translation import translations
    torch.manual_seed(0)
    model = Transformer(toy_config(vocab_size=16, max_len=8)).eval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = list(translations(model, CountingTokenizer(), [str(tokens)], beam_size=1,
                                 max_extra=1))
    warned = [str(w.message) for w in caught if "max_len" in str(w.message)]
    assert bool(warned) == too_long, warned
    assert len(done[0].source) == min(tokens, 8 - 1)


def test_length_sorted_batches_translate_as_each_sentence_alone():
    """translate() decodes in batches of similar length (sorted by tokenized length) and
    hands the translations back in the input order: the same translations, and so the same
    BLEU, as decoding each sentence alone, unbatched and unsorted."""
    from transformer.evaluate import score
    model = random_model(seed=3, eos_bias=1.0)
    gen = torch.Generator().manual_seed(11)
    sources = random_sources(17, gen, max_len=12)
    assert len(set(map(len, sources))) > 5                     # sources of varied lengths
    sentences = [" ".join(f"w{i}" for i in s) for s in sources]
    references = sentences[::-1]
    for beam in (1, 4):
        batched = translate(model, WordTokenizer(), sentences, beam_size=beam, batch_size=6,
                            max_extra=8)
        alone = [translate(model, WordTokenizer(), [s], beam_size=beam, max_extra=8)[0]
                 for s in sentences]
        assert batched == alone
        assert len({len(t.split()) for t in batched}) >= 3     # outputs of varied lengths
        assert score(batched, references) == score(alone, references)
