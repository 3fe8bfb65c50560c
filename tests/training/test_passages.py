"""text_passages: non-overlapping (prompt, continuation) windows of the texts' token stream."""
import numpy as np
import pytest

from jaxmetrics.data import load_shakespeare
from jaxmetrics.training import text_passages


def test_passages_start_at_texts_do_not_overlap_and_split_into_prompt_and_continuation(gpt2):
    texts = load_shakespeare("heldout", limit=60)
    p = text_passages(gpt2.tokenizer, texts, prompt_len=3, gen_len=5, seed=1)
    n = p.windows.shape[0]
    assert p.windows.shape == (n, 8) and n > 10
    views = np.lib.stride_tricks.sliding_window_view(p.stream, 8)
    assert all(np.any(np.all(views == w, axis=1)) for w in p.windows)            # windows of the stream
    assert n * 8 <= p.stream.size                                                 # that do not overlap
    first = gpt2.tokenizer.backend_tokenizer.encode(texts[0]).ids
    assert p.stream[:len(first)].tolist() == first                               # the texts, in order
    np.testing.assert_array_equal(np.concatenate([p.prompts(3), p.continuations(3)], axis=1), p.windows)
    again = text_passages(gpt2.tokenizer, texts, prompt_len=3, gen_len=5, seed=1, num_passages=4)
    assert again.windows.shape == (4, 8)
    with pytest.raises(ValueError, match="^train_texts: only"):
        text_passages(gpt2.tokenizer, texts[:2], prompt_len=3, gen_len=5, num_passages=50, name="train_texts")
