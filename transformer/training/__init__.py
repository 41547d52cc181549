"""Section 5, training: everything that turns a corpus into a trained model.

* :mod:`.config`: :class:`TrainConfig`, the settings of a run with their help and roles;
  :mod:`.recipes`, the named runs (``python -m transformer train --recipe NAME``);
  :mod:`.command`, a run's settings as the ``train`` command that reproduces them;
* :mod:`.prepare`: the corpus splits, the BPE vocabulary and the batch iterators (5.1);
* :mod:`.loop`: :class:`Trainer`, the update loop (5.1-5.4);
* :mod:`.precision`: which precision a run trains in on this hardware (bf16/fp16/fp32);
* :mod:`.adam`: the paper's Adam (5.3); :mod:`.optimizers` picks it or Muon (:mod:`.muon`, not the paper's);
* :mod:`.run_folder`: a run on disk (settings, metrics, checkpoints, resume);
* :mod:`.distributed`: several GPUs under ``torchrun``.
* :mod:`.cache`: a finished run of a configuration, trained once and reused (the book's
  chapters and build, the benchmarks that need the book's model).

Nothing is imported here: ``transformer.training.config`` loads without torch, so the
command line's ``--help`` is quick. ``from transformer import Trainer, TrainConfig``.
"""
