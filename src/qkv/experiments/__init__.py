"""The experiments of the chapters: small tasks, the models trained on them and
their deterministic ``train(seed)``.

Each module belongs to one chapter: :mod:`~qkv.experiments.toy` (*how attention
learns*), :mod:`~qkv.experiments.positions` (*positions*),
:mod:`~qkv.experiments.induction` (*decoders*), :mod:`~qkv.experiments.vision`
(*attention on images*) and :mod:`~qkv.experiments.translate` (*cross-attention*);
:mod:`~qkv.experiments.measure` times attention and measures its peak memory on
this machine (*cost of attention*). They build on the core modules of :mod:`qkv`
and never on :mod:`qkv.page`.
"""
