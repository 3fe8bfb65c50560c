"""The rewards on real text: MAUVE influence through mauve_attribution, TWMD through compute_similarity."""
import numpy as np
import pytest

from jaxmetrics.data import load_shakespeare
from jaxmetrics.training import mauve_influence_rewards, twmd_rewards


def test_mauve_rewards_rank_off_distribution_generations_lowest(minilm):
    """A batch of 24 lines of the plays and 8 news-like lines against 120 lines of the plays: every
    news line gets a lower reward than every line of the plays (a mode the human text does not have)."""
    from jaxmetrics.mauve import mauve_attribution
    from jaxmetrics.mauve.pipeline.inputs import featurize_texts

    lines = load_shakespeare("train", limit=400, min_words=8)
    human, good = lines[:120], lines[200:224]
    topics = ("the stock market", "a football match", "a new smartphone", "the weather forecast", "a pasta recipe",
              "a software update", "an airline delay", "a tax refund")
    bad = [f"Breaking news today about {t}: read the full report on our website." for t in topics]
    feats = featurize_texts({"h": human, "g": good + bad}, model=minilm, progress=False).features
    rewards = mauve_influence_rewards(references=feats["h"], candidates=feats["g"], seed=3)
    assert rewards.shape == (32,) and np.all(np.isfinite(rewards))
    assert rewards[24:].max() < rewards[:24].min()
    att = mauve_attribution(references=feats["h"], candidates=feats["g"], seeds=(3,))
    np.testing.assert_allclose(rewards, 32 * np.asarray(att.q_influence), rtol=1e-6)
    with pytest.raises(ValueError, match="^seed:"):
        mauve_influence_rewards(references=feats["h"], candidates=feats["g"], seed=-1)

    # pooled: the model sample is [candidates; pool]; only the candidates get rewards, N times their influence
    batch, pool = feats["g"][20:], feats["g"][:20]          # 4 lines of the plays and the 8 news lines
    pooled = mauve_influence_rewards(references=feats["h"], candidates=batch, pool=pool, seed=3)
    att = mauve_attribution(references=feats["h"], candidates=np.concatenate([batch, pool]), seeds=(3,))
    np.testing.assert_allclose(pooled, 32 * np.asarray(att.q_influence)[:12], rtol=1e-6)
    assert pooled.shape == (12,) and pooled[4:].max() < pooled[:4].min()
    with pytest.raises(ValueError, match="^pool:"):
        mauve_influence_rewards(references=feats["h"], candidates=batch, pool=pool[:, :5], seed=3)


def test_twmd_rewards_are_compute_similarity_f1(minilm):
    from jaxmetrics.similarity import compute_similarity

    lines = load_shakespeare("heldout", limit=60, min_words=6)
    refs, cands = lines[:6], lines[:3] + lines[10:13]      # three exact continuations, three others
    r = twmd_rewards(references=refs, candidates=cands, model=minilm)
    want = compute_similarity(references=refs, candidates=cands, model=minilm, metric="twmd").f1
    np.testing.assert_allclose(r, np.asarray(want), rtol=1e-6)
    assert r[:3].min() > r[3:].max()
    with pytest.raises(ValueError, match="^references:"):
        twmd_rewards(references=refs[:2], candidates=cands, model=minilm)
