"""Fine-tuning a language model with a text-generation metric in the loop.

:func:`finetune` trains a Flax NNX GPT-2 (optax AdamW, gradient accumulation, a jit-compiled step)
with one of four objectives and writes a Hugging Face checkpoint that :func:`jaxmetrics.models.load_model`,
``transformers`` and ``jaxmetrics evaluate-generation --model`` read as-is:

* ``'mle'``: maximum likelihood (:func:`~jaxmetrics.training.objectives.mle`);
* ``'token_ot'``: EMO's token-level optimal transport mixed with MLE
  (:func:`~jaxmetrics.training.objectives.token_ot`);
* ``'mauve_pg'``: policy gradient with each sample's influence on MAUVE as its reward
  (:func:`~jaxmetrics.training.rewards.mauve_influence_rewards`);
* ``'twmd_pg'``: policy gradient with each sample's TWMD F1 against its prompt's human continuation
  (:func:`~jaxmetrics.training.rewards.twmd_rewards`),

the policy-gradient ones with an exact KL penalty towards the starting model. A run is resumable:
its ``out_dir`` holds the training state, and rerunning the same call continues it to the
parameters an uninterrupted run reaches. The settings travel as one :class:`FinetuneSettings`.

Modules: ``objectives`` (the losses, pure JAX), ``rewards`` (per-sample rewards), ``data``
(:func:`text_passages`: texts cut into prompt / continuation token pairs), ``settings``, ``steps``
(optimizer, jit-compiled update, data order and keys), ``state_io`` (the resumable state), ``loop``
(:func:`finetune`).
"""
from jaxmetrics.training.data import TextPassages, text_passages
from jaxmetrics.training.loop import FinetuneResult, finetune
from jaxmetrics.training.objectives import advantages, mle, policy_gradient, token_kl, token_ot
from jaxmetrics.training.rewards import mauve_influence_rewards, twmd_rewards
from jaxmetrics.training.settings import OBJECTIVES, FinetuneSettings

__all__ = [
    "FinetuneResult",
    "FinetuneSettings",
    "OBJECTIVES",
    "TextPassages",
    "advantages",
    "finetune",
    "mauve_influence_rewards",
    "mle",
    "policy_gradient",
    "text_passages",
    "token_kl",
    "token_ot",
    "twmd_rewards",
]
