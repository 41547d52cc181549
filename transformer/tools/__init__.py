"""What is built around the model, not part of the paper's method.

* :mod:`.cli`: ``python -m transformer train | translate | evaluate | average | export |
  ablate | demo`` (and the ``transformer`` console script);
* :mod:`.export`: ONNX graphs, tokenizer and manifest for the browser (chapter 9);
* :mod:`.ablation`: Table 3's rows at CPU or GPU scale (chapter 11, ``ablate``);
* :mod:`.interop`: the model as ``torch.nn.Transformer`` (a check of the plain form);
* :mod:`.options`: the command line's options, generated from TrainConfig's fields;
* :mod:`.interrupts`: Ctrl-C held back while a command writes what it counts;
* :mod:`.host_memory`: the command line under jemalloc.
"""
