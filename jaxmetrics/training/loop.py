"""The fine-tuning loop (:func:`finetune`): passages of the training texts, the jit-compiled update of
:mod:`jaxmetrics.training.steps`, sampling with the KV cache and per-sample rewards for the
policy-gradient objectives, a dev MAUVE every ``eval_every`` steps, the resumable training state
of :mod:`jaxmetrics.training.state_io`, and the final checkpoint
(:func:`jaxmetrics.models.save_pretrained`) in ``out_dir``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from typing import Any, Sequence

import jax
import numpy as np
from flax import nnx

from jaxmetrics.results import Result, make_signature, model_id, static_field
from jaxmetrics.training import state_io
from jaxmetrics.training.data import text_passages
from jaxmetrics.training.objectives import advantages
from jaxmetrics.training.rewards import mauve_influence_rewards, twmd_rewards
from jaxmetrics.training.settings import FinetuneSettings
from jaxmetrics.training.steps import batch_indices, build_update, step_key

__all__ = ["FinetuneResult", "finetune"]

#: the micro-batch index folded into the keys of the dev evaluations (never a training micro-batch)
DEV_DRAW = 2**31 - 1


class FinetuneResult(Result):
    """Result of :func:`finetune`: the curves of the whole run (a resumed run included) and the
    checkpoint.

    Attributes:
      loss: ``[steps]`` the loss of each step (mean over its micro-batches).
      reward_mean: ``[steps]`` the mean reward of each step's samples (policy gradient), else ``None``.
      kl: ``[steps]`` the mean ``KL(p_theta || p_start)`` at the sampled positions (policy gradient),
        else ``None``.
      eval_steps: ``[E]`` the steps after which the dev MAUVE was computed.
      dev_mauve: ``[E]`` the dev MAUVE after those steps (a fresh k-means seed each time).
      checkpoint: the directory of the fine-tuned checkpoint (``out_dir``; ``load_model`` takes it).
      resumed_from: the step the run resumed from (0: started fresh).
      seconds_per_step: mean wall time of the steps this call ran (compilation included).
      settings: the :class:`FinetuneSettings` as a dict.
      signature: what the numbers depend on (:mod:`jaxmetrics.results`): ``metric:finetune``, the
        starting model with its weights' hash, the reward featurizer, and every setting but
        ``checkpoint_every``.
    """

    loss: np.ndarray
    reward_mean: np.ndarray | None
    kl: np.ndarray | None
    eval_steps: np.ndarray
    dev_mauve: np.ndarray
    settings: dict
    checkpoint: str = static_field()
    resumed_from: int = static_field(default=0)
    seconds_per_step: float = static_field(default=0.0)
    signature: str = static_field(default="", repr=False)


def _settings(settings: FinetuneSettings | None, options: dict) -> FinetuneSettings:
    if settings is not None:
        if not isinstance(settings, FinetuneSettings):
            raise TypeError(f"settings: expected a FinetuneSettings, got {type(settings).__name__}")
        return settings.replace(**options) if options else settings
    names = {f.name for f in dataclasses.fields(FinetuneSettings)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise TypeError(f"{unknown[0]}: not a setting of finetune; known: {', '.join(sorted(names))}")
    return FinetuneSettings(**options)


def _texts_hash(texts: Sequence[str] | None) -> str | None:
    if texts is None:
        return None
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]


@dataclasses.dataclass
class _Run:
    """What the loop holds: the model copy being trained, its tokenizer, the passages, the reward."""

    lm: Any
    settings: FinetuneSettings
    windows: np.ndarray
    featurizer: Any = None
    reference_features: Any = None
    dev_prompts: Any = None
    dev_features: Any = None
    #: ``[m, d]`` features of the latest generations, pooled into the next MAUVE rewards (``mauve_pg``)
    pool: Any = None


def _features(texts: list[str], featurizer: Any) -> np.ndarray:
    from jaxmetrics.mauve.pipeline.inputs import featurize_texts

    return featurize_texts({"texts": texts}, model=featurizer, progress=False).features["texts"]


def _decode(lm: Any, rows: np.ndarray) -> list[str]:
    return [lm.tokenizer.decode(r.tolist()) for r in np.asarray(rows)]


def _draw_seed(seed: int, step: int, micro: int) -> int:
    """A k-means seed of step ``step``: fresh every step, a function of ``(seed, step, micro)``."""
    return int(np.random.default_rng([seed, step, micro, 1]).integers(2**31 - 1))


def _sample(run: _Run, prompts: np.ndarray, key: jax.Array):
    from jaxmetrics.lm.sampling import generate

    s = run.settings
    out = generate(prompts, model=run.lm, key=key, max_new_tokens=s.gen_len, temperature=s.temperature,
                   eos_token_id=None)
    return np.asarray(out.tokens, np.int32)


def _rewards(run: _Run, gen: np.ndarray, idx: np.ndarray, step: int, micro: int) -> np.ndarray:
    s = run.settings
    texts = _decode(run.lm, gen)
    if s.objective == "twmd_pg":
        human = _decode(run.lm, run.windows[idx, s.prompt_len:])
        return twmd_rewards(references=human, candidates=texts, model=run.featurizer)
    # mauve_pg: an empty generation cannot be featurized; it gets the batch's lowest reward
    real = np.asarray([bool(t.strip()) for t in texts])
    rewards = np.zeros(len(texts), np.float32)
    if real.sum() >= 2:
        feats = _features([t for t, r in zip(texts, real) if r], run.featurizer)
        rewards[real] = mauve_influence_rewards(references=run.reference_features, candidates=feats,
                                                seed=_draw_seed(s.seed, step, micro),
                                                num_buckets=s.reward_num_buckets, pool=run.pool)
        rewards[~real] = rewards[real].min()
        if s.reward_pool:   # the newest generations first; the oldest drop out
            run.pool = np.concatenate([feats, run.pool])[:s.reward_pool]
    return rewards


def _micro_batch(run: _Run, step: int, micro: int) -> tuple[dict, float | None]:
    s = run.settings
    idx = batch_indices(s, step, micro, run.windows.shape[0])
    if not s.is_policy_gradient:
        return {"ids": run.windows[idx]}, None
    prompts = run.windows[idx, :s.prompt_len]
    gen = _sample(run, prompts, step_key(s.seed, step, micro))
    rewards = _rewards(run, gen, idx, step, micro)
    adv = np.asarray(advantages(rewards, baseline=s.baseline), np.float32)
    batch = {"ids": np.concatenate([prompts, gen], axis=1), "advantage": adv}
    if s.mle_coef:
        batch["human"] = run.windows[idx]
    return batch, float(np.mean(rewards))


def _dev_mauve(run: _Run, step: int) -> float:
    from jaxmetrics.mauve import compute_mauve_seeds

    s = run.settings
    gen = _sample(run, run.dev_prompts, step_key(s.seed, step, DEV_DRAW))
    texts = [t if t.strip() else "." for t in _decode(run.lm, gen)]   # an empty generation: one "."
    feats = _features(texts, run.featurizer)
    out = compute_mauve_seeds(references=run.dev_features, candidates=feats, seeds=(_draw_seed(s.seed, step, DEV_DRAW),))
    return float(out.mauve_mean)


def _train_one_step(run: _Run, update: Any, state: dict, step: int) -> dict:
    """Run the ``grad_accum`` micro-batches of step ``step``; returns its curve entries."""
    losses, kls, rewards = [], [], []
    for micro in range(run.settings.grad_accum):
        batch, reward = _micro_batch(run, step, micro)
        state["params"], state["opt_state"], loss, kl = update(state["params"], state["opt_state"], state["ref"], batch)
        nnx.update(run.lm.model, state["params"])   # the sampler reads the module's current parameters
        losses.append(float(loss))
        kls.append(float(kl))
        if reward is not None:
            rewards.append(reward)
    entry = {"loss": float(np.mean(losses))}
    if run.settings.is_policy_gradient:
        entry.update(kl=float(np.mean(kls)), reward_mean=float(np.mean(rewards)))
    return entry


def _setup(model: Any, settings: FinetuneSettings, train_texts: Any, dev_texts: Any, featurizer: Any,
           dtype: Any) -> tuple[_Run, Any]:
    """Check and load everything before any training: the model (a private copy), the passages, the
    featurizer and the features computed once. Returns the run and the starting ``LoadedModel``."""
    from jaxmetrics.models.gpt2 import GPT2
    from jaxmetrics.models.protocol import resolve_model

    s = settings
    if s.eval_every and dev_texts is None:
        raise ValueError("dev_texts: eval_every > 0 needs dev texts (prompts and human continuations are cut from them)")
    start = resolve_model(model, causal=True, purpose="finetune", dtype=dtype)
    if not isinstance(start.model, GPT2):
        raise ValueError(f"model: finetune trains the GPT-2 family (Flax NNX GPT-2), got {start.kind!r}")
    if np.dtype(start.dtype) != np.float32:
        raise ValueError(f"dtype: finetune trains in float32, got a {np.dtype(start.dtype).name} model")
    positions = start.max_positions
    if positions is not None and s.prompt_len + s.gen_len > positions:
        raise ValueError(f"gen_len: prompt_len + gen_len = {s.prompt_len + s.gen_len} exceeds the model's {positions} positions")
    if train_texts is None:
        from jaxmetrics.data import load_shakespeare

        train_texts = load_shakespeare("train")
    passages = text_passages(start.tokenizer, train_texts, prompt_len=s.prompt_len, gen_len=s.gen_len, seed=s.seed,
                             name="train_texts")
    if passages.windows.shape[0] < s.batch_size:
        raise ValueError(f"train_texts: {passages.windows.shape[0]} passages of {s.prompt_len + s.gen_len} tokens, "
                         f"fewer than batch_size={s.batch_size}")
    # a deep copy of the module is trained (the caller's model, the KL's reference, is never updated)
    copy = dataclasses.replace(start, model=nnx.clone(start.model), _jitted=None, _reductions={},
                               _weights_sha256=start.weights_sha256)
    run = _Run(lm=copy, settings=s, windows=passages.windows)
    if s.is_policy_gradient or s.eval_every:
        from jaxmetrics.data import demo_encoder_dir

        run.featurizer = resolve_model(demo_encoder_dir() if featurizer is None else featurizer)
    if s.objective == "mauve_pg":
        n = min(s.num_reward_references, passages.windows.shape[0])
        chosen = np.sort(np.random.default_rng([s.seed, 0, 0, 2]).choice(passages.windows.shape[0], n, replace=False))
        run.reference_features = _features(_decode(start, passages.windows[chosen, s.prompt_len:]), run.featurizer)
        run.pool = np.zeros((0, run.reference_features.shape[1]), np.float32)
    if s.eval_every:
        dev = text_passages(start.tokenizer, dev_texts, prompt_len=s.prompt_len, gen_len=s.gen_len,
                            num_passages=s.num_dev_prompts, seed=s.seed, name="dev_texts")
        run.dev_prompts = dev.prompts(s.prompt_len)
        run.dev_features = _features(_decode(start, dev.continuations(s.prompt_len)), run.featurizer)
    return run, start


def finetune(*, model: Any, objective: str | None = None, train_texts: Sequence[str] | None = None,
             out_dir: str | os.PathLike, dev_texts: Sequence[str] | None = None,
             settings: FinetuneSettings | None = None, featurizer: Any = None, progress: bool = True,
             dtype: Any = None, **options: Any) -> FinetuneResult:
    """Fine-tune a GPT-2-family causal LM with MLE, token-level OT, or MAUVE / TWMD as a
    policy-gradient reward, resumably, and write the checkpoint to ``out_dir``.

    Training data: ``train_texts`` (default: the bundled plays' training split,
    ``load_shakespeare("train")``) cut into non-overlapping passages of ``prompt_len + gen_len``
    tokens (:func:`~jaxmetrics.training.text_passages`). Each step averages ``grad_accum``
    micro-batches of ``batch_size`` passages (drawn from the seed and the step) and makes one AdamW
    update (:mod:`jaxmetrics.training.steps`). The objectives (:mod:`jaxmetrics.training.objectives`):

    * ``'mle'``: the mean next-token NLL over whole passages;
    * ``'token_ot'``: EMO's token-level transport cost mixed with MLE (``mle_weight``);
    * ``'mauve_pg'`` / ``'twmd_pg'``: for each prompt of the batch, ``gen_len`` new tokens are sampled
      with the KV cache (:func:`~jaxmetrics.lm.generate`, ``temperature``, no early stop) and the
      REINFORCE surrogate of :func:`~jaxmetrics.training.objectives.policy_gradient` is minimised with
      the rewards of :mod:`jaxmetrics.training.rewards` (MAUVE influence against human continuations
      of the training texts featurized once, ``num_reward_references`` of them, with the model's
      histogram estimated from the batch and the ``reward_pool`` latest earlier generations; an empty generation,
      which cannot be featurized, gets the batch's lowest reward; TWMD F1 against each prompt's own
      human continuation, an empty generation scoring 0), a leave-one-out baseline, and ``kl_coef``
      times the exact KL to the starting model; ``mle_coef > 0`` adds that multiple of MLE on the
      batch prompts' human passages.

    Every ``eval_every`` steps the model continues ``num_dev_prompts`` passages of ``dev_texts`` and
    their MAUVE against the human continuations is recorded (``featurizer``'s features, a fresh
    k-means seed each time; an empty generation is featurized as ``"."``).

    Resume: ``out_dir`` keeps the training state every ``checkpoint_every`` steps (atomically). Running
    the same call again continues from the last state; with the same seed the final parameters
    equal an uninterrupted run's bit for bit. ``out_dir`` holding a run with other settings (or
    another model, other texts) is refused with a ``ValueError`` naming ``out_dir``. At the end the
    model is written to ``out_dir`` as a Hugging Face checkpoint (:func:`~jaxmetrics.models.save_pretrained`).

    Args:
      model: the starting causal LM (a loaded GPT-2 or its directory); it is not modified.
      objective: ``'mle'``, ``'token_ot'``, ``'mauve_pg'`` or ``'twmd_pg'`` (a setting, as ``options``).
      train_texts: the training texts (default: the bundled plays' training split).
      out_dir: the run's directory (training state, then the checkpoint).
      dev_texts: texts whose passages give the dev prompts and human continuations (needed when
        ``eval_every > 0``).
      settings: a :class:`~jaxmetrics.training.FinetuneSettings`; ``objective`` and ``options`` replace
        its fields. Without it the settings are built from them.
      featurizer: the encoder of the rewards and the dev MAUVE (default: all-MiniLM-L6-v2,
        :func:`jaxmetrics.data.demo_encoder_dir`).
      progress: a progress bar on stderr (:func:`jaxmetrics.progress.progress_bar`).
      dtype: the model's dtype (``'float32'`` only: training runs in float32).
      **options: fields of :class:`FinetuneSettings` (``steps=``, ``seed=``, ``batch_size=``, ...).

    Returns:
      :class:`FinetuneResult`.
    """
    if objective is not None:
        options["objective"] = objective
    s = _settings(settings, options)
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir: expected a directory path, got {type(out_dir).__name__}")
    run, start = _setup(model, s, train_texts, dev_texts, featurizer, dtype)
    identity = {**s._run_identity(), "model": model_id(start),
                "featurizer": model_id(run.featurizer) if run.featurizer is not None else None,
                "train_texts": _texts_hash(train_texts), "dev_texts": _texts_hash(dev_texts)}
    state_io.check_run_identity(out_dir, identity)
    return _loop(run, start, identity, out_dir, progress)


def _loop(run: _Run, start: Any, identity: dict, out_dir: Any, progress: bool) -> FinetuneResult:
    from jaxmetrics.models.saving import save_pretrained
    from jaxmetrics.progress import progress_bar

    s = run.settings
    update, params, tx = build_update(run.lm.model, s)
    state = {"params": params, "opt_state": tx.init(params), "ref": nnx.state(start.model, nnx.Param)}
    curves: dict = {"loss": [], "kl": [], "reward_mean": [], "eval_steps": [], "dev_mauve": []}
    saved = state_io.read_state(out_dir, params=state["params"], opt_state=state["opt_state"])
    done = 0
    if saved is not None:
        state["params"], state["opt_state"], done, curves, extra = saved
        if run.pool is not None:
            run.pool = extra.get("reward_pool", run.pool)
        if done > s.steps:
            raise ValueError(f"steps: out_dir holds this run after {done} steps, more than steps={s.steps}")
        nnx.update(run.lm.model, state["params"])
    resumed_from, t0 = done, time.perf_counter()
    with progress_bar(s.steps, desc=f"finetune ({s.objective})", unit="step", enabled=progress) as bar:
        bar.update(done)
        for step in range(done + 1, s.steps + 1):
            entry = _train_one_step(run, update, state, step)
            for k, v in entry.items():
                curves[k].append(v)
            if s.eval_every and step % s.eval_every == 0:
                curves["eval_steps"].append(step)
                curves["dev_mauve"].append(_dev_mauve(run, step))
            if step % s.checkpoint_every == 0 or step == s.steps:
                state_io.write_state(out_dir, params=state["params"], opt_state=state["opt_state"], step=step,
                                     curves=curves, extra={} if run.pool is None else {"reward_pool": run.pool})
            bar.update(1)
            bar.set_postfix_str(f"loss {entry['loss']:.4g}" + (f", reward {entry['reward_mean']:.3g}"
                                                                 if "reward_mean" in entry else ""))
    ran = s.steps - resumed_from
    save_pretrained(run.lm, out_dir)
    pg = s.is_policy_gradient
    sig = make_signature("finetune", model=start, featurizer=identity["featurizer"] or "none",
                         **s.signature_fields())
    return FinetuneResult(
        loss=np.asarray(curves["loss"], np.float32),
        reward_mean=np.asarray(curves["reward_mean"], np.float32) if pg else None,
        kl=np.asarray(curves["kl"], np.float32) if pg else None,
        eval_steps=np.asarray(curves["eval_steps"], np.int64),
        dev_mauve=np.asarray(curves["dev_mauve"], np.float32),
        settings=s.to_dict(), checkpoint=os.fspath(out_dir), resumed_from=resumed_from,
        seconds_per_step=(time.perf_counter() - t0) / ran if ran > 0 else 0.0, signature=sig)
