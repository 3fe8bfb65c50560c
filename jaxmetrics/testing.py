"""Helpers for tests and benchmarks: tiny random checkpoints and reference loops (no downloads).

* :func:`tiny_checkpoint` writes a Hugging Face checkpoint directory (``config.json``,
  ``model.safetensors``, tokenizer files) for a tiny random ``'gpt2'``, ``'bert'`` or
  ``'roberta'`` model, created with transformers' PyTorch classes and a small tokenizer trained
  on the fly with the ``tokenizers`` library.
* :func:`hf_doc_perplexity_loop` is the Hugging Face guide's sliding-window perplexity loop in
  PyTorch, the reference of the perplexity parity tests and benchmark.

Importing this module does not import torch; the functions that need it import it when called
(torch is in the ``test`` extra: ``pip install 'jaxmetrics[test]'``).

Examples:
    >>> import sys, jaxmetrics.testing
    >>> "tiny_checkpoint" in dir(jaxmetrics.testing)
    True
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["hf_doc_perplexity_loop", "tiny_checkpoint"]

_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A journey of a thousand miles begins with a single step.",
    "To be, or not to be, that is the question.",
    "All that glitters is not gold; all who wander are not lost.",
    "It was the best of times, it was the worst of times.",
    "Colorless green ideas sleep furiously in the night.",
    "Numbers like 12345 and symbols like $%& also appear here!",
] * 4


def _bpe_tokenizer(kind: str, vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>"] if kind == "gpt2" else ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_CORPUS, trainer)
    if kind == "gpt2":
        return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>",
                                       eos_token="<|endoftext|>", unk_token="<|endoftext|>")
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")))
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")


def _wordpiece_tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(_CORPUS, trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def tiny_checkpoint(kind: str, directory: str | os.PathLike, *, seed: int = 0, num_layers: int = 2,
                    hidden: int = 32, heads: int = 4, max_positions: int = 64, vocab_size: int = 300,
                    return_torch: bool = False) -> "str | tuple":
    """Write a tiny random ``kind`` checkpoint (``'gpt2'``, ``'bert'``, ``'roberta'``) to ``directory``.

    Returns the directory as a string, or ``(directory, torch_model)`` with ``return_torch``.
    """
    import torch
    import transformers as tf

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    if kind == "gpt2":
        tok = _bpe_tokenizer("gpt2", vocab_size)
        eos = tok.eos_token_id
        cfg = tf.GPT2Config(vocab_size=len(tok), n_positions=max_positions, n_embd=hidden, n_layer=num_layers,
                            n_head=heads, bos_token_id=eos, eos_token_id=eos)
        model = tf.GPT2LMHeadModel(cfg)
    elif kind == "bert":
        tok = _wordpiece_tokenizer(vocab_size)
        cfg = tf.BertConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=num_layers,
                            num_attention_heads=heads, intermediate_size=4 * hidden,
                            max_position_embeddings=max_positions, pad_token_id=tok.pad_token_id)
        model = tf.BertModel(cfg, add_pooling_layer=False)
    elif kind == "roberta":
        tok = _bpe_tokenizer("roberta", vocab_size)
        cfg = tf.RobertaConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=num_layers,
                               num_attention_heads=heads, intermediate_size=4 * hidden,
                               max_position_embeddings=max_positions + 2, pad_token_id=tok.pad_token_id,
                               bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                               type_vocab_size=1)
        model = tf.RobertaModel(cfg, add_pooling_layer=False)
    else:
        raise ValueError(f"kind: expected 'gpt2', 'bert' or 'roberta', got {kind!r}")
    model.eval()
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()       # its "Writing model shards" bar is noise in tests and examples
    try:
        model.save_pretrained(str(d))
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    tok.save_pretrained(str(d))
    return (str(d), model) if return_torch else str(d)


def hf_doc_perplexity_loop(model, ids, max_length, stride, *, exact=False):
    """The PyTorch loop of "Perplexity of fixed-length models", the reference that the
    perplexity tests and ``benchmarks/perplexity_vs_reference.py`` compare against.

    ``model``: a transformers causal LM; ``ids``: one token stream (1-D). Returns
    ``(nll_sum, n_tokens)``; ``exp(nll_sum / n_tokens)`` is the document's perplexity (its
    ``- batch_size`` token count).

    ``exact=True`` applies the two fixes of ``convention='exact'``: step ``min(stride, L-1)``,
    window start ``max(0, end - L)``, and the exact count ``(labels[:, 1:] != -100).sum()``.
    """
    import torch

    enc = torch.tensor(ids)[None, :]
    seq_len = enc.size(1)
    step = min(stride, max_length - 1) if exact else stride
    nll_sum, n_tokens, prev_end_loc = 0.0, 0, 0
    for begin_loc in range(0, seq_len, step):
        end_loc = min(begin_loc + max_length, seq_len)
        if exact:
            begin_loc = max(0, end_loc - max_length)
        trg_len = end_loc - prev_end_loc
        input_ids = enc[:, begin_loc:end_loc]
        target_ids = input_ids.clone()
        target_ids[:, :-trg_len] = -100
        with torch.no_grad():
            neg_log_likelihood = model(input_ids, labels=target_ids).loss
        if exact:
            num_loss_tokens = int((target_ids[:, 1:] != -100).sum())
        else:
            num_valid_tokens = (target_ids != -100).sum().item()
            num_loss_tokens = num_valid_tokens - target_ids.size(0)
        nll_sum += float(neg_log_likelihood) * num_loss_tokens
        n_tokens += num_loss_tokens
        prev_end_loc = end_loc
        if end_loc == seq_len:
            break
    return nll_sum, n_tokens
