"""Every corpus the project names, and how it gets onto a reader's machine.

``python -m transformer fetch multi30k-en-de tatoeba-en-de`` (or :func:`fetch`) puts each
corpus into the data root (:func:`data_dir`) as a folder of
``{train,valid,test}.{src,tgt}.gz`` (English source, German target), and the first use of
a corpus that is not there yet (a recipe, a chapter, ``evaluate``) fetches it the same way.

* **multi30k-en-de** comes from its public repository (Elliott et al., 2016). Its licence
  (non-commercial research and education) does not let the project ship it.
* **tatoeba-en-de** is shipped with the package (``tatoeba-en-de/`` beside this file, 3.6 MB):
  the project's own split of a 2018 Tatoeba export, CC BY 2.0 FR, which may be
  redistributed with its attribution (``NOTICE``). Its host now serves a newer export,
  so a download could not give back the split that the records were measured on; a copy
  shipped with the code can, and it works offline.
* **wmt14**, the paper's 4.5 million pairs, is not fetched as files: it is read through
  Hugging Face ``datasets`` (:func:`~.wmt14.wmt14_dataset`) and prepared once for training
  into a folder of the data root.

One file a job:

* :mod:`.registry`: the one table of corpora, :data:`CORPORA` (each a :class:`FileCorpus`
  or a :class:`HubCorpus`), which ``--corpus NAME`` resolves through;
* :mod:`.wmt14`: the reader of WMT14 from the hub;
* :mod:`.root`: the data root (:func:`data_dir`) and how a message names it;
* :mod:`.spec`: what ``--corpus`` names, parsed once (:class:`CorpusSpec`);
* :mod:`.fetching`: each file's text normalised and pinned by its SHA-256, and the fetch,
  all or nothing.

This module only gathers their public names.
"""
from .fetching import fetch, normalised_text, text_sha256, verify
from .registry import (CORPORA, FILES, SHIPPED, Corpus, FileCorpus, HubCorpus,
                       fetched_corpus, fetched_names)
from .root import data_dir, shown_root
from .spec import CorpusSpec, Part

__all__ = ["CORPORA", "FILES", "SHIPPED", "Corpus", "FileCorpus", "HubCorpus",
           "fetched_corpus", "fetched_names", "data_dir", "shown_root", "CorpusSpec", "Part",
           "fetch", "normalised_text", "text_sha256", "verify"]
