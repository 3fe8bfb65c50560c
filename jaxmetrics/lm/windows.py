"""Strided sliding-window perplexity of fixed-context causal LMs, and generation perplexity.

Every window of the corpus is laid out once as a padded batch ``[W, T]`` of token windows
with a target mask, and the windows are scored ``batch_size`` at a time by one jit-compiled
function (model forward + log-softmax + masked NLL sums per window) — no Python loop over
single windows. Sums are accumulated on the host in float64.

Two conventions for the window layout (``convention=``):

``'exact'`` (default)
    Every token after the first of each document is scored exactly once, with the longest
    context the window allows. Window ``w`` ends at ``e_w = min(w·s' + L, N)`` with
    ``s' = min(stride, L - 1)`` (a window of ``L`` tokens predicts at most ``L - 1`` of them,
    so with ``stride == L`` consecutive windows overlap by the one token that conditions the
    next window's first target), starts at ``max(0, e_w - L)`` (so the final window is also a
    full ``L`` tokens of context where the document allows), and scores the targets
    ``[max(e_{w-1}, 1), e_w)``. Token count = ``Σ_docs (N_d - 1)``.

``'document'``
    The Hugging Face loop of "Perplexity of fixed-length models" reproduced number for
    number: windows start at ``w·stride``, end at ``min(w·stride + L, N)``, their labels
    are the last ``trg_len = e_w - e_{w-1}`` tokens, and each window's mean loss is weighted by
    ``trg_len - 1`` (the doc's ``num_valid_tokens - batch_size``, "label-shift correction").
    That count is exact only when the first label of the window is at position 0 (first
    window, or ``stride == L``): in later overlapping windows the internal label shift drops a
    *context* position, the loss averages over all ``trg_len`` labels, and the doc weights
    them by ``trg_len - 1``. Also, with ``stride == L`` the first token of every window is
    never scored (``N - #windows`` targets). A final window with ``trg_len == 1`` has no
    scored label (the doc's loop gets ``0·NaN``); here it contributes nothing.

The ``'exact'`` NLL and count equal the per-token definition ``Σ -ln p(x_j | x_{b_w..j-1})``
over these windows; parity with the doc's PyTorch loop (both conventions) is tested.

Defaults fit the model: the window is the model's context (``max_length=None``) and the
stride defaults to the window (``stride=None``: non-overlapping windows, as the guide's first
example); pass ``stride`` smaller than the window for more context per scored token.
The model is used only through the causal-LM protocol (forward pass for hidden states, then
``lm_head`` on the scored positions).
"""
from __future__ import annotations

import time
import weakref
from functools import partial
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_choice, check_int
from jaxmetrics.models.batching import plan_rows
from jaxmetrics.models.protocol import resolve_model
from jaxmetrics.results import Result, static_field
from jaxmetrics.results import make_signature

__all__ = ["CONVENTIONS", "REDUCTIONS", "WindowLayout", "window_layout", "WindowScores", "score_windows",
           "PerplexityResult", "perplexity"]

#: ``convention=``: the two window conventions of the module docstring
CONVENTIONS = ("exact", "document")
#: ``reduction=``: one perplexity for the corpus, or one per sequence
REDUCTIONS = ("corpus", "sequence")


# ----------------------------------------------------------------------------------------------
# window layout (host-side index arithmetic; no model involved)


class WindowLayout(Result):
    """All windows of a corpus. Arrays of shape ``[W]``.

    Attributes:
      doc: document index of each window.
      start: first token of the window (offset inside its document).
      length: number of input tokens of the window (``<= max_length``).
      score_from: local index of the first scored label; labels ``score_from .. length-1``
        are scored (label ``j`` is predicted by the logit at ``j - 1``), so ``score_from >= 1``.
      weight: per-window multiplier of the mean window loss used by ``'document'``
        (``(trg_len - 1) / n_scored``); all ones for ``'exact'``.
      doc_count: per-window token count added to the total (``'exact'``: ``length -
        score_from``; ``'document'``: ``trg_len - 1``).
      width: padded width ``T`` of the batch (longest window).
    """

    doc: np.ndarray
    start: np.ndarray
    length: np.ndarray
    score_from: np.ndarray
    weight: np.ndarray
    doc_count: np.ndarray
    width: int = static_field()

    @property
    def num_windows(self) -> int:
        return int(self.doc.shape[0])

    @property
    def num_scored(self) -> np.ndarray:
        """``[W]`` number of labels the forward pass scores in each window."""
        return self.length - self.score_from


def window_layout(lengths: Sequence[int], max_length: int, stride: int, *, convention: str = "exact") -> WindowLayout:
    """Windows of documents of the given lengths (see the module docstring for the two conventions).

    Args:
      lengths: ``[n_docs]`` document lengths in tokens (each >= 2).
      max_length: window size ``L`` (the model's context).
      stride: step ``s`` between window starts, ``1 <= s <= L``.
      convention: ``'exact'`` or ``'document'``.

    Returns:
      :class:`WindowLayout`.

    Examples:
      >>> lay = window_layout([10], max_length=4, stride=2)
      >>> lay.start.tolist(), lay.length.tolist(), lay.score_from.tolist(), int(lay.doc_count.sum())
      ([0, 2, 4, 6], [4, 4, 4, 4], [1, 2, 2, 2], 9)
      >>> lay = window_layout([10], max_length=4, stride=4, convention="document")
      >>> lay.start.tolist(), lay.length.tolist(), lay.doc_count.tolist()
      ([0, 4, 8], [4, 4, 2], [3, 3, 1])
    """
    check_choice(convention, "convention", CONVENTIONS)
    L = check_int(max_length, "max_length", minimum=2)
    s = check_int(stride, "stride", minimum=1)
    if s > L:
        raise ValueError(f"stride: must be <= max_length ({L}), got {s}")
    lens = np.asarray(lengths, dtype=np.int64).reshape(-1)
    if lens.size == 0:
        raise ValueError("token_ids: the corpus is empty (no documents)")
    if np.any(lens < 2):
        i = int(np.argmax(lens < 2))
        raise ValueError(f"token_ids: document {i} has {int(lens[i])} token(s); at least 2 are needed")
    step = min(s, L - 1) if convention == "exact" else s
    # number of windows per document: w = 0.. while w*step + L < N, plus the last one
    n_win = 1 + np.maximum(0, -(-(lens - L) // step))
    doc = np.repeat(np.arange(lens.size), n_win)
    first = np.cumsum(n_win) - n_win
    w = np.arange(doc.size) - first[doc]
    n = lens[doc]
    end = np.minimum(w * step + L, n)
    prev_end = np.where(w > 0, np.minimum((w - 1) * step + L, n), 0)
    if convention == "exact":
        start = np.maximum(0, end - L)
        score_from = np.maximum(prev_end, 1) - start
        weight = np.ones(doc.size)
        doc_count = end - start - score_from
    else:
        start = w * step
        length = end - start
        trg_len = end - prev_end
        score_from = np.maximum(length - trg_len, 1)
        n_scored = length - score_from
        doc_count = trg_len - 1
        weight = np.where(n_scored > 0, doc_count / np.maximum(n_scored, 1), 0.0)
    length = end - start
    return WindowLayout(doc=doc, start=start, length=length, score_from=score_from, weight=weight,
                        doc_count=doc_count, width=int(length.max()))


def _gather_windows(flat: np.ndarray, offsets: np.ndarray, lay: WindowLayout, pad_id: int):
    """Padded ``ids [W, T]``, ``attention_mask [W, T]`` and ``target_mask [W, T-1]``
    (``target_mask[w, t]``: the logit at ``t`` predicting token ``t + 1`` is scored)."""
    T = lay.width
    col = np.arange(T)
    idx = offsets[lay.doc][:, None] + lay.start[:, None] + col[None, :]
    valid = col[None, :] < lay.length[:, None]
    ids = np.where(valid, flat[np.minimum(idx, flat.size - 1)], pad_id).astype(np.int32)
    lab = col[None, 1:]
    tmask = (lab >= lay.score_from[:, None]) & (lab < lay.length[:, None])
    return ids, valid, tmask


# ----------------------------------------------------------------------------------------------
# the jitted scoring function

_SCORERS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _scorer(lm):
    """Jitted ``f(state, ids [B,T], targets [B,T], mask [B,T], tmask [B,T-1], first [B], *, k) -> (nll_sum [B],
    count [B])``: the logit at ``t`` scores ``targets[:, t + 1]`` where ``tmask[:, t]``.

    Only the ``k`` logit positions ``first .. first + k - 1`` of each window go through the LM
    head (the scored labels of a window are a contiguous suffix), so windows that score
    ``stride`` tokens pay for ``stride`` head rows, not ``T``. Compiled once per (model, shape, k).
    """
    fn = _SCORERS.get(lm)
    if fn is None:
        from flax import nnx

        graphdef, state = nnx.split(lm.model)

        @partial(jax.jit, static_argnames=("k",))
        def run(state, ids, targets, mask, tmask, first, *, k):
            model = nnx.merge(graphdef, state)
            h = model(ids, mask, return_logits=False).last_hidden_state  # [B, T, D]
            t = ids.shape[1]
            pos = first[:, None] + jnp.arange(k)[None, :]  # logit positions [B, k]
            inside = pos <= t - 2
            pos = jnp.minimum(pos, t - 2)
            sel = jnp.take_along_axis(tmask, pos, axis=1) & inside
            hk = jnp.take_along_axis(h, pos[..., None], axis=1)
            logits = model.lm_head(hk)
            tgt = jnp.take_along_axis(targets, pos + 1, axis=1)
            z_y = jnp.take_along_axis(logits, tgt[..., None], axis=-1)[..., 0]
            nll = jnp.where(sel, jax.nn.logsumexp(logits, axis=-1) - z_y, 0.0)
            return jnp.sum(nll, axis=-1), jnp.sum(sel, axis=-1)

        fn = (run, state)
        _SCORERS[lm] = fn
    return fn


class WindowScores(Result):
    """Per-window sums of :func:`score_windows`.

    Attributes:
      nll_sum: ``[B]`` float32 total negative log-likelihood (nats) of the scored labels.
      count: ``[B]`` int32 number of scored labels.
    """

    nll_sum: jax.Array
    count: jax.Array


def score_windows(input_ids, attention_mask, labels, *, model, first=None, num_head_rows=None,
                  dtype=None) -> WindowScores:
    """NLL sum and count per window for one batch (one jit-compiled forward).

    Labels follow the transformers convention: ``labels[b, j]`` is the token scored at position
    ``j`` (normally ``input_ids[b, j]``) and ``-100`` marks positions that are not scored; the
    label at ``j`` is predicted by the logit at ``j - 1``, so ``labels[:, 0]`` is never scored.
    ``nll_sum[b] = Σ_{j: labels[b, j] != -100} -ln p(labels[b, j] | input_ids[b, :j])``.

    Args:
      input_ids: ``[B, T]`` int token ids (right-padded).
      attention_mask: ``[B, T]`` bool, true on real tokens.
      labels: ``[B, T]`` int, ``-100`` where not scored.
      model: a causal :class:`~jaxmetrics.models.LoadedModel` (or a hub id / local directory).
      first, num_head_rows: optional ``[B]`` first scored logit position and the static number of
        positions passed through the LM head (every scored label ``j`` must satisfy
        ``first <= j - 1 < first + num_head_rows``); default ``0`` and ``T - 1`` (all positions).
        Only those rows pay for the ``[D, V]`` head product.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`WindowScores` of device arrays (the rows can be sharded over a mesh).

    Examples:
      >>> import tempfile, numpy as np
      >>> from jaxmetrics.models import load_model
      >>> from jaxmetrics.testing import tiny_checkpoint
      >>> lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
      >>> ids = np.array([[5, 6, 7]])
      >>> out = score_windows(ids, np.ones((1, 3), bool), ids, model=lm)
      >>> int(out.count[0]), bool(out.nll_sum[0] > 0)
      (2, True)
    """
    lm = resolve_model(model, causal=True, purpose="score_windows", dtype=dtype)
    run, state = _scorer(lm)
    ids = jnp.asarray(input_ids, jnp.int32)
    lab = jnp.asarray(labels)
    if lab.shape != ids.shape or ids.ndim != 2:
        raise ValueError(f"labels: expected shape {tuple(ids.shape)} like input_ids [B, T], got {tuple(lab.shape)}")
    scored = (lab[:, 1:] != -100)
    if first is None:
        first = np.zeros(ids.shape[0], np.int32)
    if num_head_rows is None:
        num_head_rows = ids.shape[1] - 1
    targets = jnp.where(lab == -100, ids, lab).astype(jnp.int32)
    nll, cnt = run(state, ids, targets, jnp.asarray(attention_mask, bool), scored, jnp.asarray(first, jnp.int32),
                   k=int(num_head_rows))
    return WindowScores(nll, cnt)


# ----------------------------------------------------------------------------------------------
# public pipeline


class PerplexityResult(Result):
    """Result of :func:`perplexity`.

    Attributes:
      perplexity: the reported value (``reduction='corpus'``: ``exp(nll / num_tokens)``;
        ``'sequence'``: mean of the per-document perplexities, as HF ``evaluate``).
      nll: total negative log-likelihood (nats) over all scored tokens.
      num_tokens: number of scored tokens (the denominator).
      corpus_perplexity, mean_sequence_perplexity: both reductions.
      doc_nll, doc_tokens, doc_perplexity: ``[n_docs]`` per-document values.
      num_windows: number of forward windows.
      seconds: wall time of the scoring (including compilation).
      convention, max_length, stride, reduction: the settings (static).
      signature: ``metric:perplexity``, the model with its weights' hash, ``max_length``,
        ``stride``, ``convention``, ``reduction`` and the model's dtype (static;
        :mod:`jaxmetrics.results`).
    """

    perplexity: float
    nll: float
    num_tokens: int
    corpus_perplexity: float
    mean_sequence_perplexity: float
    doc_nll: np.ndarray
    doc_tokens: np.ndarray
    doc_perplexity: np.ndarray
    num_windows: int
    seconds: float
    convention: str = static_field()
    max_length: int = static_field()
    stride: int = static_field()
    reduction: str = static_field()
    signature: str = static_field(default="", repr=False)

    @property
    def tokens_per_second(self) -> float:
        """Scored tokens per second of wall time."""
        return self.num_tokens / self.seconds if self.seconds > 0 else float("inf")


def _causal(model, purpose: str, dtype=None):
    return resolve_model(model, causal=True, purpose=purpose, dtype=dtype)


def _context_length(lm) -> int:
    limit = lm.max_positions
    if limit is None:
        raise ValueError("model: its config has no context size (n_positions / max_position_embeddings); "
                         "pass max_length")
    return int(limit)


def _as_documents(lm, token_ids, name: str = "token_ids") -> list[np.ndarray]:
    """One stream ``[N]`` -> one document; ``[D, N]`` or a list of 1-D arrays -> documents;
    a string or a list of strings is tokenized with the model's tokenizer (no special tokens)."""
    if isinstance(token_ids, str):
        token_ids = [token_ids]
    if isinstance(token_ids, np.ndarray) or hasattr(token_ids, "__array__") and not isinstance(token_ids, (list, tuple)):
        arr = np.asarray(token_ids)
        if arr.ndim == 1:
            docs = [arr]
        elif arr.ndim == 2:
            docs = list(arr)
        else:
            raise ValueError(f"{name}: expected a 1-D stream or 2-D [docs, tokens] array, got shape {arr.shape}")
    else:
        seq = list(token_ids)
        if seq and all(isinstance(t, str) for t in seq):
            enc = lm.tokenizer(seq, add_special_tokens=False)["input_ids"]
            docs = [np.asarray(e, dtype=np.int64) for e in enc]
        elif seq and all(isinstance(t, (int, np.integer)) for t in seq):
            docs = [np.asarray(seq)]
        else:
            docs = [np.asarray(d) for d in seq]
    if not docs:
        raise ValueError(f"{name}: the corpus is empty (no documents)")
    vocab = int(getattr(lm.config, "vocab_size", 0) or 0)
    out = []
    for i, d in enumerate(docs):
        if d.ndim != 1:
            raise ValueError(f"{name}: document {i} must be 1-D, got shape {d.shape}")
        if d.size and not np.issubdtype(d.dtype, np.integer):
            raise TypeError(f"{name}: document {i} has dtype {d.dtype}; expected integer token ids")
        d = d.astype(np.int64)
        if d.size and (d.min() < 0 or (vocab and d.max() >= vocab)):
            raise ValueError(f"{name}: document {i} has ids outside [0, {vocab})")
        out.append(d)
    return out


def perplexity(token_ids, *, model, max_length: int | None = None, stride: int | None = None,
               batch_size: int = 8, reduction: str = "corpus", convention: str = "exact", progress: bool = False,
               mesh=None, dtype=None) -> PerplexityResult:
    """Sliding-window perplexity of a causal LM over one token stream or a list of documents.

    ``PPL = exp(Σ_docs Σ_{scored t} -ln p(x_t | window context) / #scored)`` (corpus), or the
    mean over documents of ``exp(nll_d / n_d)`` (``reduction='sequence'``, HF ``evaluate``'s
    ``mean_perplexity``). Windows never cross document boundaries. The window layout and the
    difference between ``convention='exact'`` and the Hugging Face doc's own number
    (``'document'``, its ``- batch_size`` correction) are described in the module docstring.

    Args:
      token_ids: one stream ``[N]``, a ``[D, N]`` array, a list of 1-D id arrays (documents),
        or text(s) (tokenized with the model's tokenizer, no special tokens).
      model: a causal :class:`~jaxmetrics.models.LoadedModel`, or a hub id / local directory.
      max_length: window size ``L``; default the model's context (``n_positions``).
      stride: step between window starts, ``1 <= stride <= max_length``; default ``max_length``
        (non-overlapping windows). Smaller strides give each scored token more context.
      batch_size: windows per jitted forward (batches are padded to one size; windows are grouped
        by how many tokens they score, and only those positions go through the LM head, so at
        most two compiled shapes).
      reduction: ``'corpus'`` (token-weighted) or ``'sequence'`` (mean of per-document PPLs).
      convention: ``'exact'`` or ``'document'``.
      progress: report progress over batches on stderr (:func:`jaxmetrics.progress.progress_bar`).
      mesh: optional :class:`jax.sharding.Mesh` (``jaxmetrics.sharding.make_mesh()``): each batch
        of windows is split over its devices (the batch size is rounded up to a multiple of the
        device count); XLA partitions the forward pass. The mesh may span several processes
        (every process passes the same ``token_ids``); each gets the full result.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`PerplexityResult`.

    Examples:
      >>> import tempfile, numpy as np
      >>> from jaxmetrics.models import load_model
      >>> from jaxmetrics.testing import tiny_checkpoint
      >>> lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
      >>> ids = np.random.default_rng(0).integers(0, 200, size=100)
      >>> res = perplexity(ids, model=lm, max_length=32, stride=16, batch_size=4)
      >>> res.num_tokens, res.num_windows, bool(res.perplexity > 1)
      (99, 6, True)
      >>> res   # doctest: +ELLIPSIS
      PerplexityResult(perplexity=..., nll=..., num_tokens=99, ..., convention='exact', max_length=32, stride=16, reduction='corpus')
    """
    check_choice(reduction, "reduction", REDUCTIONS)
    check_choice(convention, "convention", CONVENTIONS)
    lm = _causal(model, "perplexity", dtype)
    ctx = _context_length(lm)
    L = ctx if max_length is None else check_int(max_length, "max_length", minimum=2)
    if L > ctx:
        raise ValueError(f"max_length: {L} exceeds the model's context size {ctx}")
    s = L if stride is None else check_int(stride, "stride", minimum=1)
    if s > L:
        raise ValueError(f"stride: must be <= max_length ({L}), got {s}")
    bs = check_int(batch_size, "batch_size", minimum=1)
    docs = _as_documents(lm, token_ids)
    lens = np.array([d.size for d in docs])
    lay = window_layout(lens, L, s, convention=convention)
    flat = np.concatenate(docs)
    ids, mask, tmask = _gather_windows(flat, np.cumsum(lens) - lens, lay, lm.pad_token_id)
    plan = _batch_plan(lay, s, L, convention=convention, batch_size=bs, mesh=mesh)
    t0 = time.perf_counter()
    win_nll, win_cnt = _score_windows(lm, plan, (ids, mask, tmask, (lay.score_from - 1).astype(np.int32)),
                                      lay.num_windows, mesh=mesh, progress=progress)
    seconds = time.perf_counter() - t0
    if not np.all(np.isfinite(win_nll)):
        raise ValueError("model: produced non-finite log-probabilities (NaN/inf logits); check the weights and dtype")
    if np.any(win_cnt != lay.num_scored):  # pragma: no cover - internal consistency
        raise AssertionError("internal error: scored-token count does not match the window layout")
    doc_nll, doc_tok = _document_sums(lay, win_nll, win_cnt, len(docs), convention=convention)
    total_nll, total_tok = float(doc_nll.sum()), int(doc_tok.sum())
    if total_tok <= 0:
        raise ValueError("token_ids: no token could be scored with this window layout")
    with np.errstate(divide="ignore", invalid="ignore"):
        doc_ppl = np.where(doc_tok > 0, np.exp(doc_nll / np.maximum(doc_tok, 1)), np.nan)
    corpus = float(np.exp(total_nll / total_tok))
    scored_docs = doc_tok > 0
    seq_mean = float(np.mean(doc_ppl[scored_docs]))
    return PerplexityResult(
        perplexity=corpus if reduction == "corpus" else seq_mean, nll=total_nll, num_tokens=total_tok,
        corpus_perplexity=corpus, mean_sequence_perplexity=seq_mean, doc_nll=doc_nll, doc_tokens=doc_tok,
        doc_perplexity=doc_ppl, num_windows=lay.num_windows, seconds=seconds, convention=convention, max_length=L,
        stride=s, reduction=reduction, signature=make_signature("perplexity", model=lm, max_length=L, stride=s,
                                                                convention=convention, reduction=reduction,
                                                                dtype=getattr(lm, "dtype", None)))


def _batch_plan(lay, s: int, L: int, *, convention: str, batch_size: int, mesh) -> list:
    """The batches of :func:`perplexity`: ``[(window indices, k)]``, each a ``[B]`` array of window
    indices (``-1`` for a dummy window filling the batch) and its static number ``k`` of LM-head
    rows.

    Two groups of windows, each with one ``k``: windows scoring at most one step of new tokens
    (``k = step``) and the rest (first windows of documents, ``k = T - 1``). Each group is cut into
    the fewest batches of at most ``batch_size``, made as even as possible (padding < number of
    batches); with a mesh the batch size is rounded up to a multiple of its devices."""
    step = min(s, L - 1) if convention == "exact" else s
    k_small = min(step, lay.width - 1)
    small = lay.num_scored <= k_small
    groups = [(np.nonzero(~small)[0], lay.width - 1), (np.nonzero(small)[0], k_small)]
    n_dev = 1 if mesh is None else int(mesh.devices.size)
    return [(sel, k) for idx, k in groups for sel in plan_rows(idx, batch_size=batch_size, devices=n_dev)]


def _score_windows(lm, plan: list, windows, num_windows: int, *, mesh, progress: bool):
    """Run the scorer over every batch of ``plan``; ``windows`` is ``(ids, mask, targets_mask,
    first)`` of every window. Returns the summed NLL ``[W]`` (float64) and the scored-token count
    ``[W]`` of each window (gathered on every process with a multi-process mesh)."""
    from jaxmetrics.progress import progress_bar

    ids, mask, tmask, first = windows

    def batch_arrays(sel):
        real = sel >= 0
        j = np.where(real, sel, 0)
        m = mask[j].copy()
        m[~real] = False
        m[~real, 0] = True  # dummy windows: one attended pad token, nothing scored
        tm = tmask[j] & real[:, None]
        return np.where(real[:, None], ids[j], lm.pad_token_id), m, tm, np.where(real, first[j], 0)

    run, state = _scorer(lm)
    bar = progress_bar(len(plan), desc="perplexity", unit="batch", enabled=progress)
    outs = []
    for sel, k in plan:
        bi, bm, bt, bf = batch_arrays(sel)
        if mesh is not None:
            from jaxmetrics.sharding import shard

            bi, bm, bt, bf = shard((bi.astype(np.int32), bm, bt, bf.astype(np.int32)), mesh)
        outs.append((sel, run(state, jnp.asarray(bi, jnp.int32), jnp.asarray(bi, jnp.int32), jnp.asarray(bm, bool),
                              jnp.asarray(bt, bool), jnp.asarray(bf, jnp.int32), k=int(k))))
        if progress:
            jax.block_until_ready(outs[-1][1])
        bar.update(1)
    bar.close()
    win_nll = np.zeros(num_windows, np.float64)
    win_cnt = np.zeros(num_windows, np.int64)
    if mesh is not None:  # a mesh over several processes: gather each batch's sums on every process
        from jaxmetrics.sharding import to_host

        outs = [(sel, to_host(o)) for sel, o in outs]
    for sel, (nll_b, cnt_b) in outs:
        real = sel >= 0
        win_nll[sel[real]] = np.asarray(nll_b, dtype=np.float64)[real]
        win_cnt[sel[real]] = np.asarray(cnt_b)[real]
    return win_nll, win_cnt


def _document_sums(lay, win_nll: np.ndarray, win_cnt: np.ndarray, num_docs: int, *, convention: str):
    """Each document's NLL and scored-token count from its windows' sums (``'document'``: each
    window's mean NLL times the tokens it adds to its document, the Hugging Face doc's number)."""
    if convention == "exact":
        contrib = win_nll
    else:
        contrib = np.where(win_cnt > 0, win_nll / np.maximum(win_cnt, 1), 0.0) * lay.doc_count
    doc_nll = np.bincount(lay.doc, weights=contrib, minlength=num_docs)
    doc_tok = np.bincount(lay.doc, weights=lay.doc_count, minlength=num_docs).astype(np.int64)
    return doc_nll, doc_tok
