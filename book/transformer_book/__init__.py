"""The book's helpers, kept apart from the ``transformer`` library (which never imports
them): :mod:`.viz` (figures, the quick-build switch) and :mod:`.runs` (the cached training
run chapters 7-10 share).

Installed with the library (``pip install -e .`` or ``pip install git+...``) from
``book/transformer_book``.
"""
