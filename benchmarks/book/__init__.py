"""The book and its page: the build, the book's model, the model in the reader's browser
(``python -m benchmarks.book.NAME --help``)."""
