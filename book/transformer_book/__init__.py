"""The book's helpers, kept apart from the ``transformer`` library (which never imports
them, nor do the benchmarks): :mod:`.switches` (the quick build, ``pick``), :mod:`.site`
(the plotly renderer of the built site), :mod:`.viz` (the figures; it re-exports the other
two), :mod:`.diagram` (the paper's Figures 1 and 2), :mod:`.answers` (the exercises'
glued answers), :mod:`.runs` (the run chapters 7-10 share and its metrics),
:mod:`.table3` (chapter 11's reading of Table 3), :mod:`.hardware` (Under the hood C's
training step, timed) and :mod:`.book_tables` (the tables only the book shows).

The measuring system they read (timing, the result records, the tables rendered from
them) is the package's: :mod:`transformer.measuring`; the run cache is
:mod:`transformer.training.cache`; the toy tasks of chapters 4 and 5 and the capstone's
run are the learner's subpackage's: :mod:`transformer.your_turn.toy` and
:mod:`transformer.your_turn.capstone_run`.

Installed with the library (``pip install -e .`` or ``pip install git+...``) from
``book/transformer_book``.
"""
