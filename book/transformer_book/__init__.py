"""The book's helpers, kept apart from the ``transformer`` library (which never imports
them): :mod:`.switches` (the quick build, ``pick``), :mod:`.site` (the plotly renderer of
the built site), :mod:`.viz` (the figures; it re-exports the other two), :mod:`.timing`
(the chapters' timing harness), :mod:`.runs` (the cached training run chapters 7-10
share) and :mod:`.results` (the committed result records and the tables made from them).

Installed with the library (``pip install -e .`` or ``pip install git+...``) from
``book/transformer_book``.
"""
