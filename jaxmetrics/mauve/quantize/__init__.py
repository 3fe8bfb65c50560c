"""MAUVE's quantization stage: vectors → bucket labels.

:mod:`.pca` (the PCA projection mauve-text fits), :mod:`.clustering` (the library's one k-means,
with its masked mode for the sweeps), :mod:`.quantizers` (the ``Quantizer`` interface, the k-means
quantizer and the registry), :mod:`.drmm` and :mod:`.lattice` (learned quantizers, Flax NNX).
"""
