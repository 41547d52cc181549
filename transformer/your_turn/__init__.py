"""Your turn: the learner writes each part of the Transformer, and these checks say, in
plain words, whether it is right and, if not, what differs and the likely mistake.

Each check runs the learner's code beside the package's own on random inputs and on the
cases that catch mistakes (padding, a single token, a batch of one, long inputs, both
kinds of mask, bfloat16), prints what it tried, and raises :class:`CheckFailed` with a
one-line diagnosis at the first difference. While the learner's code is the unwritten
skeleton (it raises ``NotImplementedError``), a check runs on the book's own solution and
says so.

=============================  =========  ==============================================
check                          chapter    the package's part it compares with
=============================  =========  ==============================================
:func:`check_attention`        3          ``attention.scaled_dot_product_attention``
:func:`check_multi_head`       4          ``attention.MultiHeadAttention``
:func:`check_positional`       5          ``positional.sinusoidal_encoding``
:func:`check_encoder_layer`    6          ``layers.EncoderLayer`` (with ``Residual``)
:func:`check_decoder_layer`    6          ``layers.DecoderLayer``
:func:`check_loss`             7          ``loss.label_smoothed_nll_loss``
:func:`check_schedule`         7          ``schedule.noam_lr``
:func:`check_beam_search`      8          ``decoding.beam_search`` (one sentence:
                                          :func:`~transformer.your_turn.search.beam_search_sentence`)
=============================  =========  ==============================================

The capstone assembles the parts into a model and trains it (:mod:`.capstone`); the
capstone page's run, its settings and its held-out test are :mod:`.capstone_run`. The toy
tasks it trains on, reverse, copy or sort a few letters, are :mod:`.toy`, which chapters 4
and 5 train the package's plain model on too.
"""
from .attention import check_attention
from .capstone import Parts, YourTransformer, assemble, check_parts, train_model
from .layers import check_decoder_layer, check_encoder_layer
from .loss import check_loss
from .multi_head import check_multi_head
from .positional import check_positional
from .report import CheckFailed, Report
from .schedule import check_schedule
from .search import beam_search_sentence, check_beam_search

__all__ = ["CheckFailed", "Parts", "Report", "YourTransformer", "assemble",
           "beam_search_sentence", "check_attention", "check_beam_search", "check_parts",
           "check_decoder_layer", "check_encoder_layer", "check_loss", "check_multi_head",
           "check_positional", "check_schedule", "train_model"]
