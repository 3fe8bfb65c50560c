"""Does the policy gradient with influence rewards estimate the gradient of MAUVE?

The training objective ``mauve_pg`` (:mod:`jaxmetrics.training`) rewards each sampled text with
its influence on MAUVE and follows the REINFORCE direction. This script checks that idea where
the exact gradient is known.

**The finite model.** A pool of ``N`` real sentences (MiniLM features: half human speeches of the
training plays, half the same kind of speeches degraded by repeating their first third, as greedy
decoding loops) and a categorical "model" over the pool, ``pi = softmax(theta)``. P is the
features of other human sentences. One k-means codebook (``k`` bins) is fitted once on
``[pool; P]``; ``A[i, j] = [bin(i) = j]``. The model's expected histogram is ``q(theta) = pi A``
and ``p`` is P's normalised bin counts, so

    F(theta) = MAUVE(p, q(theta))          (mauve_from_histograms, c = 5, m = 25)

is a smooth function of ``theta``; its **exact gradient** is ``jax.grad(F)``.

**The estimator.** Draw ``x_1..x_n ~ pi``; weight them ``w_i`` (1 for all) in the batch's
histogram ``q_hat(w) = sum_i w_i A[x_i] / sum_i w_i``; the reward of sample ``i`` is its influence
``r_i = n dMAUVE(p, q_hat(w)) / dw_i`` at ``w = 1`` (what ``mauve_attribution`` computes for hard
bins); the estimate is

    g_hat = (1/n) sum_i (r_i - b_i) grad_theta log pi(x_i),     grad_theta log pi(x) = e_x - pi.

With the influence function at the true Q this is exactly ``grad F`` in expectation; the plug-in
``q_hat`` makes it biased by O(1/n). The baselines compared: none; the leave-one-out batch mean
(``b_i`` = mean of the other rewards). The influences of a normalised histogram sum to zero
(MAUVE is homogeneous of degree 0 in the weights), so the leave-one-out mean is
``-r_i/(n-1)`` and only rescales the estimate by ``n/(n-1)``: influence rewards carry their own
baseline. To show what a baseline does for rewards that are not centred, the table also has the
naive reward "the batch's MAUVE plus the influence" with and without the baseline.

For each batch size the script averages ``g_hat`` over ``--draws`` batches and reports the
cosine between that mean and the exact gradient, the relative gap ``|mean - exact| / |exact|``
with its Monte Carlo standard error, and the estimator's variance ``E|g_hat - mean|^2``.

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/training_gradient_check.py
  ... --tiny        (a few seconds of work; what the test runs)
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
SCALING, NUM_POINTS = 5.0, 25
REWARDS = ("influence", "influence, leave-one-out baseline", "MAUVE + influence",
           "MAUVE + influence, leave-one-out baseline")


def exact_gradient(theta, p_hist, assign):
    """``grad_theta MAUVE(p, softmax(theta) @ assign)`` and the value: ``theta [N]``,
    ``p_hist [k]`` (sums to 1), ``assign [N, k]`` one-hot bins of the pool."""
    from jaxmetrics.mauve import mauve_from_histograms

    def f(t):
        return mauve_from_histograms(p_hist, jax.nn.softmax(t) @ assign, scaling=SCALING,
                                     num_points=NUM_POINTS).mauve

    value, grad = jax.value_and_grad(f)(theta)
    return float(value), np.asarray(grad, np.float64)


def _one_estimate(key, theta, p_hist, assign, n: int):
    """One batch of ``n`` draws: the policy-gradient estimate ``[len(REWARDS), N]`` under each
    reward of :data:`REWARDS` (same batch)."""
    from jaxmetrics.mauve import mauve_from_histograms

    pi = jax.nn.softmax(theta)
    idx = jax.random.categorical(key, theta, shape=(n,))
    rows = assign[idx]                                              # [n, k]

    def batch_mauve(w):
        return mauve_from_histograms(p_hist, (w @ rows) / w.sum(), scaling=SCALING,
                                     num_points=NUM_POINTS).mauve

    value, dw = jax.value_and_grad(batch_mauve)(jnp.ones(n))
    influence = n * dw                                              # sums to ~0

    def loo(r):
        return r - (r.sum() - r) / (n - 1)

    out = []
    for r in (influence, loo(influence), influence + value, loo(influence + value)):   # REWARDS' order
        # (1/n) sum_i r_i (e_{x_i} - pi) without forming the [n, N] one-hots
        out.append((jnp.zeros_like(pi).at[idx].add(r) - r.sum() * pi) / n)
    return jnp.stack(out)


@partial(jax.jit, static_argnames=("n", "draws"))
def _estimates(key, theta, p_hist, assign, *, n: int, draws: int):
    keys = jax.random.split(key, draws)
    return jax.vmap(lambda k: _one_estimate(k, theta, p_hist, assign, n))(keys)


def moments(key, theta, p_hist, assign, *, n: int, draws: int, chunk: int = 1000):
    """Per reward of :data:`REWARDS`: the mean ``[N]`` of the estimate over ``draws`` batches, its
    variance ``E|g - mean|^2``, and the Monte Carlo standard error of the mean
    (``sqrt(variance / draws)``). Every reward sees the same batches."""
    total = np.zeros((len(REWARDS), theta.shape[0]))
    total_sq = np.zeros_like(total)
    done = 0
    for k in jax.random.split(key, -(-draws // chunk)):
        g = np.asarray(_estimates(k, theta, p_hist, assign, n=n, draws=chunk), np.float64)[: draws - done]
        total += g.sum(0)
        total_sq += (g ** 2).sum(0)
        done += g.shape[0]
    mean = total / done
    variance = (total_sq / done - mean ** 2).sum(1)
    return mean, variance, np.sqrt(variance / done)


def check(pool, human, *, batch_sizes, draws: int, k: int, seed: int = 0) -> dict:
    """Run the check on ``pool [N, d]`` (the model's support) and ``human [n_p, d]`` (P):
    returns the exact gradient's norm and, per reward and batch size, cosine, relative gap, its
    standard error and the variance. Every reward sees the same batches at a given size, so the
    rows of one size differ only by the reward."""
    from jaxmetrics.mauve import fit_quantizer

    pool = np.asarray(pool, np.float32)
    human = np.asarray(human, np.float32)
    fitted = fit_quantizer([pool, human], num_buckets=k, seed=seed)
    bins = np.asarray(fitted.assign(np.concatenate([pool, human])))
    pool_bins, human_bins = bins[: len(pool)], bins[len(pool):]
    assign = jax.nn.one_hot(pool_bins, k)
    p_hist = jnp.asarray(np.bincount(human_bins, minlength=k) / len(human_bins), jnp.float32)
    theta = jax.random.normal(jax.random.key(seed + 1), (len(pool),)) * 0.5
    value, exact = exact_gradient(theta, p_hist, assign)
    rows = []
    for n in batch_sizes:
        means, variances, ses = moments(jax.random.key(seed + 2 + n), theta, p_hist, assign, n=n, draws=draws)
        for reward, mean, variance, se in zip(REWARDS, means, variances, ses):
            gap = float(np.linalg.norm(mean - exact) / np.linalg.norm(exact))
            cos = float(mean @ exact / (np.linalg.norm(mean) * np.linalg.norm(exact)))
            rows.append(dict(reward=reward, n=n, cosine=cos, relative_gap=gap,
                             gap_se=float(se) / float(np.linalg.norm(exact)), variance=float(variance)))
    rows.sort(key=lambda r: REWARDS.index(r["reward"]))
    return dict(theta=np.asarray(theta), p_hist=np.asarray(p_hist), assign=np.asarray(assign), exact=exact,
                mauve=value, exact_norm=float(np.linalg.norm(exact)), k=k, pool=len(pool),
                human=len(human), draws=draws, rows=rows)


def _sentences(split: str, limit: int) -> list[str]:
    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare(split):
        for s in re.split(r"(?<=[.!?])\s+", speech):
            if 8 <= len(s.split()) <= 30:
                out.append(s)
            if len(out) >= limit:
                return out
    return out


def _repeated(s: str) -> str:
    words = s.split()
    head = words[: max(3, len(words) // 3)]
    return " ".join((head * len(words))[: len(words)])


def real_features(pool_size: int, human_size: int):
    """MiniLM features of the pool (half human, half repeated) and of P (other sentences)."""
    from jaxmetrics.data import demo_encoder_dir
    from jaxmetrics.models import load_model, sentence_embeddings

    texts = _sentences("train", pool_size + human_size)
    half = pool_size // 2
    pool_texts = texts[:half] + [_repeated(s) for s in texts[half:pool_size]]
    enc = load_model(demo_encoder_dir())
    feats = np.asarray(sentence_embeddings(pool_texts + texts[pool_size:], model=enc, batch_size=64, progress=False))
    return feats[:pool_size], feats[pool_size:]


def table(res: dict) -> str:
    lines = [f"Exact MAUVE(p, q(theta)) = {res['mauve']:.4f}, |grad| = {res['exact_norm']:.4g}; pool "
             f"{res['pool']} sentences (half degraded), P {res['human']}, k = {res['k']} bins, "
             f"{res['draws']} batches per row.", "",
             "| reward | n | cosine(mean, exact) | relative gap | gap s.e. | variance |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        lines.append(f"| {r['reward']} | {r['n']} | {r['cosine']:.4f} | {r['relative_gap']:.4f} | "
                     f"{r['gap_se']:.4f} | {r['variance']:.4g} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="small pool, few draws (the test's run)")
    ap.add_argument("--out", default=str(RESULTS / "training_gradient_check.md"))
    args = ap.parse_args(argv)
    from _report import save_json, save_table  # benchmarks/ is on sys.path when a script runs

    if args.tiny:
        pool, human = real_features(40, 60)
        sizes, draws, k = (8, 64), 400, 4
    else:
        pool, human = real_features(400, 600)
        sizes, draws, k = (16, 64, 256, 1024), 20000, 16
    t0 = time.perf_counter()
    res = check(pool, human, batch_sizes=sizes, draws=draws, k=k)
    head = (f"# Policy gradient with influence rewards against the exact gradient of MAUVE\n\n"
            f"{datetime.date.today()}; `benchmarks/training_gradient_check.py"
            f"{' --tiny' if args.tiny else ''}`, {time.perf_counter() - t0:.0f} s.\n\n")
    save_table(head + table(res) + "\n", args.out)
    save_json({k: v for k, v in res.items() if not isinstance(v, np.ndarray)}, Path(args.out).with_suffix(".json"))
    print(table(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
