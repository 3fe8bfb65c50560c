"""Helpers shared by the state tests (split a corpus, pad it to one compiled shape)."""
from __future__ import annotations

import numpy as np


def random_splits(rng, n, parts):
    """A random permutation of ``range(n)`` cut into ``parts`` non-empty pieces."""
    perm = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, n), size=parts - 1, replace=False))
    return np.split(perm, cuts)


def padded(idx, size):
    """Indices padded with 0 to ``size`` and the mask of the real ones (one compiled shape)."""
    return np.concatenate([idx, np.zeros(size - idx.size, int)]), np.arange(size) < idx.size


def corpus(rng, n=24, vocab=9):
    """``n`` token lists of 0..11 tokens with large, sparse ids."""
    lens = rng.integers(0, 12, size=n)
    return [list(rng.integers(0, vocab, size=k) * 1000 + 7) for k in lens]


def pad_sequences(seqs, width=12):
    """Right-pad token lists to ``[n, width]`` int32 ids and their lengths."""
    ids = np.zeros((len(seqs), width), np.int32)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = s
    return ids, np.array([len(s) for s in seqs], np.int32)
