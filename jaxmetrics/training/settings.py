"""The settings of one fine-tuning run (:class:`FinetuneSettings`): one frozen object, validated when
built, hashed into the run's signature and into the identity of a resumable ``out_dir``."""
from __future__ import annotations

from typing import Any

from jaxmetrics import _validation as V
from jaxmetrics.mauve.sizes import check_num_buckets
from jaxmetrics.settings import Settings
from jaxmetrics.training.objectives import BASELINES, DEFAULT_MLE_WEIGHT

__all__ = ["FinetuneSettings", "OBJECTIVES", "POLICY_GRADIENT_OBJECTIVES", "command_line_objectives"]

#: the objectives of :func:`~jaxmetrics.training.finetune`
OBJECTIVES = ("mle", "token_ot", "mauve_pg", "twmd_pg")
#: the objectives that sample continuations and train on per-sample rewards
POLICY_GRADIENT_OBJECTIVES = ("mauve_pg", "twmd_pg")
#: settings that change neither the parameters nor the curves (left out of the signature and of
#: the identity of a resumable run; ``steps`` may grow: a longer run continues a shorter one)
_SPEED_ONLY = ("checkpoint_every", "steps")


def command_line_objectives() -> tuple[str, ...]:
    """The objectives as the command line spells them (``token-ot``, ``mauve-pg``, ...)."""
    return tuple(o.replace("_", "-") for o in OBJECTIVES)


class FinetuneSettings(Settings):
    """Everything one fine-tuning run depends on (:func:`~jaxmetrics.training.finetune`).

    Attributes:
      objective: ``'mle'``, ``'token_ot'``, ``'mauve_pg'`` or ``'twmd_pg'`` (hyphens accepted).
      steps: optimizer updates.
      seed: every random draw derives from it: the data order of step ``s`` from
        ``numpy.random.default_rng([seed, s, micro])``, the sampling key from
        ``fold_in(fold_in(key(seed), s), micro)``, the k-means seeds of the rewards and dev MAUVE
        from ``seed`` and ``s`` — so a resumed run draws what an uninterrupted one draws.
      batch_size: passages (MLE, token OT) or prompts (policy gradient) per micro-batch.
      grad_accum: micro-batches whose gradients are averaged into one update (``optax.MultiSteps``).
      learning_rate, weight_decay, max_grad_norm: AdamW (constant rate), after clipping the global
        gradient norm.
      prompt_len, gen_len: passage lengths in tokens: the prompt, and the human continuation and the
        number of new tokens sampled for the policy-gradient objectives.
      temperature: sampling temperature of the policy-gradient objectives (1: pure sampling).
      kl_coef: ``beta`` of the ``KL(p_theta || p_start)`` penalty (policy gradient).
      baseline: the advantage baseline (:data:`~jaxmetrics.training.objectives.BASELINES`).
      mle_weight: the weight of MLE in the token-OT mixture.
      mle_coef: ``lambda`` of an MLE term on the human passages of the batch's prompts, added to the
        policy-gradient loss (the "pretraining mix" of RL fine-tuning: it keeps the model on the
        training text while the reward moves its samples; 0: the reward and the KL alone).
      num_reward_references: human continuations of the training texts featurized once as MAUVE's
        reference set (``mauve_pg``).
      reward_pool: features of the most recent earlier generations (previous micro-batches and
        steps) pooled with the batch's as MAUVE's model sample when the ``mauve_pg`` rewards are
        computed, so the model's histogram is estimated from up to ``batch_size + reward_pool``
        samples, not the batch alone (0: the batch alone, whose 32-sample rewards are mostly
        noise, see :func:`~jaxmetrics.training.mauve_influence_rewards`). The pooled samples come
        from up to ``reward_pool / batch_size`` updates ago; the pool is part of the resumable state.
      reward_num_buckets: k-means bins of the codebook each ``mauve_pg`` step fits for its rewards
        (default 8: with a batch of 32 and a pool of 224 its rewards follow the many-sample
        influence most closely, ``benchmarks/reward_reliability.py``); ``'auto'`` is MAUVE's own
        rule on the model sample, ``max(2, round(min(n, num_reward_references) / 10))`` with ``n``
        the batch's generations plus the pool's (26 bins for 32 + 224).
      eval_every: dev MAUVE every this many steps (0: never; needs dev texts).
      num_dev_prompts: dev passages generated and scored at each evaluation.
      checkpoint_every: training state written every this many steps (and at the end).
    """

    objective: str = "mle"
    steps: int = 100
    seed: int = 0
    batch_size: int = 32
    grad_accum: int = 1
    learning_rate: float = 1e-4
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    prompt_len: int = 10
    gen_len: int = 40
    temperature: float = 1.0
    kl_coef: float = 0.05
    baseline: str = "leave_one_out"
    mle_weight: float = DEFAULT_MLE_WEIGHT
    mle_coef: float = 0.0
    num_reward_references: int = 256
    reward_pool: int = 224
    reward_num_buckets: int | str = 8
    eval_every: int = 0
    num_dev_prompts: int = 64
    checkpoint_every: int = 10

    def check(self) -> None:
        if isinstance(self.objective, str):
            object.__setattr__(self, "objective", self.objective.replace("-", "_"))
        V.check_choice(self.objective, "objective", OBJECTIVES)
        for name in ("steps", "batch_size", "grad_accum", "prompt_len", "gen_len", "num_reward_references",
                     "num_dev_prompts", "checkpoint_every"):
            V.check_int(getattr(self, name), name, minimum=1)
        for name in ("seed", "eval_every", "reward_pool"):
            V.check_int(getattr(self, name), name, minimum=0)
        V.check_positive(self.learning_rate, "learning_rate")
        V.check_positive(self.weight_decay, "weight_decay", allow_zero=True)
        V.check_positive(self.max_grad_norm, "max_grad_norm")
        V.check_positive(self.temperature, "temperature")
        V.check_positive(self.kl_coef, "kl_coef", allow_zero=True)
        V.check_choice(self.baseline, "baseline", BASELINES)
        if self.reward_num_buckets != "auto":    # MAUVE's own bucket check, naming this field
            if isinstance(self.reward_num_buckets, str):
                raise ValueError(f"reward_num_buckets: expected 'auto' or an integer, got {self.reward_num_buckets!r}")
            check_num_buckets(self.reward_num_buckets, "reward_num_buckets")
        if V.check_positive(self.mle_weight, "mle_weight", allow_zero=True) > 1.0:
            raise ValueError(f"mle_weight: expected a number in [0, 1], got {self.mle_weight!r}")
        if V.check_positive(self.mle_coef, "mle_coef", allow_zero=True) and not self.is_policy_gradient:
            raise ValueError(f"mle_coef: adds MLE to a policy-gradient objective (mauve_pg, twmd_pg), "
                             f"not to {self.objective!r}")
        if self.objective in POLICY_GRADIENT_OBJECTIVES and self.baseline == "leave_one_out" and self.batch_size < 2:
            raise ValueError("batch_size: the leave-one-out baseline needs at least 2 prompts per batch")

    @property
    def is_policy_gradient(self) -> bool:
        """Whether the objective samples continuations and trains on rewards."""
        return self.objective in POLICY_GRADIENT_OBJECTIVES

    def signature_fields(self) -> dict[str, Any]:
        """The fields the parameters and curves depend on (``checkpoint_every`` left out; ``steps`` kept)."""
        out = super().signature_fields()
        out.pop("checkpoint_every")
        return out

    def _run_identity(self) -> dict[str, Any]:
        """The fields a resumable ``out_dir`` must agree on (:data:`_SPEED_ONLY` left out)."""
        return {k: v for k, v in self.to_dict().items() if k not in _SPEED_ONLY}
