"""Prompts with human continuations for :func:`~jaxmetrics.evaluation.evaluate_generation`.

Three on-disk forms and their in-memory equivalents:

* **JSONL** (``.jsonl`` / ``.json``, one object a line): ``prompt_field`` and
  ``reference_field`` name the prompt and the human continuation. With ``prompt_field=None``
  each object has one human text (``reference_field``) and the prompt is its first
  ``prompt_tokens`` model tokens, the continuation the rest — the MAUVE paper's protocol
  (WebText documents, 35-token prompts).
* **CSV** (``.csv``, with a header row): the same, with column names.
* **Two text files** ``(prompts.txt, references.txt)``: line ``i`` of each is pair ``i``.
* In memory: a list of dicts (as JSONL), or a pair of lists ``(prompts, references)``.

Every problem (missing file or field, an empty prompt or continuation, mismatched lengths) is
a ``ValueError`` naming ``dataset``, the file and the row, raised before any model is loaded.
"""
from __future__ import annotations

import csv
import json
import os
from typing import Any, Sequence

from jaxmetrics._files import check_input_file
from jaxmetrics.results import Result, static_field

__all__ = ["PromptDataset", "load_prompt_dataset"]


class PromptDataset(Result):
    """Prompts and human continuations as texts (``references`` may be ``None`` per the split
    protocol, where the prompt is cut from the human text by tokens later).

    Attributes:
      prompts: ``N`` prompt texts, or ``None`` with the split protocol.
      references: ``N`` human continuations (split protocol: the whole human texts).
      split: True for the split protocol (``prompt_field=None``).
      source: where the rows came from (for messages and the report).
    """

    prompts: list[str] | None
    references: list[str]
    split: bool = static_field()
    source: str = static_field()

    def __len__(self) -> int:
        return len(self.references)


def _check_rows(prompts, references, source: str, split: bool) -> PromptDataset:
    if not references:
        raise ValueError(f"dataset: {source} has no rows")
    for name, col in (("prompt", prompts), ("continuation" if not split else "text", references)):
        if col is None:
            continue
        for i, t in enumerate(col):
            if not isinstance(t, str):
                raise ValueError(f"dataset: {source} row {i + 1}: the {name} is {type(t).__name__}, expected a string")
            if not t.strip():
                raise ValueError(f"dataset: {source} row {i + 1}: the {name} is empty")
    if prompts is not None and len(prompts) != len(references):
        raise ValueError(f"dataset: {source}: {len(prompts)} prompts but {len(references)} continuations")
    return PromptDataset(prompts=None if prompts is None else list(prompts), references=list(references),
                         split=split, source=source)


def _from_records(records: list[Any], source: str, prompt_field: str | None, reference_field: str) -> PromptDataset:
    prompts, refs = ([] if prompt_field is not None else None), []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise ValueError(f"dataset: {source} row {i + 1} is {type(rec).__name__}, expected an object with "
                             f"fields {prompt_field!r} and {reference_field!r}")
        for f in ((prompt_field,) if prompt_field is not None else ()) + (reference_field,):
            if f not in rec:
                have = ", ".join(map(repr, list(rec)[:8]))
                which = "prompt_field" if f == prompt_field else "reference_field"
                raise ValueError(f"dataset: {source} row {i + 1} has no field {f!r} ({which}); it has {have}")
        if prompts is not None:
            prompts.append(rec[prompt_field])
        refs.append(rec[reference_field])
    return _check_rows(prompts, refs, source, prompt_field is None)


def _read_lines(path: str) -> list[str]:
    check_input_file(path, "dataset")
    with open(path, encoding="utf-8") as f:
        return [ln.rstrip("\n").rstrip("\r") for ln in f]


def load_prompt_dataset(dataset: Any, *, prompt_field: str | None = "prompt",
                        reference_field: str = "continuation") -> PromptDataset:
    """Read prompts and human continuations (see the module docstring for the forms).

    Args:
      dataset: a ``.jsonl`` / ``.json`` / ``.csv`` path, a pair ``(prompts.txt, references.txt)``
        of paths, a list of dicts, or a pair of lists of strings ``(prompts, references)``.
      prompt_field: field / column of the prompt; ``None``: split each human text into a
        prompt and a continuation by tokens (the MAUVE paper's protocol).
      reference_field: field / column of the human continuation (with ``prompt_field=None``,
        of the whole human text).

    Returns:
      :class:`PromptDataset`.

    Examples:
      >>> ds = load_prompt_dataset([{"prompt": "Once upon", "continuation": " a time"}])
      >>> ds.prompts, ds.references, ds.split
      (['Once upon'], [' a time'], False)
      >>> load_prompt_dataset([{"text": "x"}])
      Traceback (most recent call last):
      ...
      ValueError: dataset: records row 1 has no field 'prompt' (prompt_field); it has 'text'
    """
    if isinstance(dataset, (str, os.PathLike)):
        path = os.fspath(dataset)
        ext = os.path.splitext(path)[1].lower()
        if ext in (".jsonl", ".json"):
            records = []
            for i, ln in enumerate(_read_lines(path)):
                if not ln.strip():
                    continue
                try:
                    records.append(json.loads(ln))
                except json.JSONDecodeError as e:
                    raise ValueError(f"dataset: {path} line {i + 1} is not JSON ({e.msg}, column {e.colno})") from None
            return _from_records(records, path, prompt_field, reference_field)
        if ext == ".csv":
            check_input_file(path, "dataset")
            with open(path, encoding="utf-8", newline="") as f:
                rows = list(csv.DictReader(f))
            return _from_records(rows, path, prompt_field, reference_field)
        raise ValueError(f"dataset: {path!r}: expected a .jsonl, .json or .csv file, or a pair of text files "
                         "(prompts, references)")
    if isinstance(dataset, (tuple, list)) and len(dataset) == 2 and all(
            isinstance(x, (str, os.PathLike)) for x in dataset) and all(os.path.splitext(os.fspath(x))[1] for x in dataset):
        p_path, r_path = map(os.fspath, dataset)
        prompts, refs = _read_lines(p_path), _read_lines(r_path)
        while prompts and refs and not prompts[-1].strip() and not refs[-1].strip():
            prompts, refs = prompts[:-1], refs[:-1]  # a trailing blank line in both files
        return _check_rows(prompts, refs, f"{p_path} + {r_path}", False)
    if isinstance(dataset, (tuple, list)) and len(dataset) == 2 and all(
            isinstance(x, (list, tuple)) for x in dataset):
        return _check_rows(list(dataset[0]), list(dataset[1]), "(prompts, references)", False)
    if isinstance(dataset, Sequence) and not isinstance(dataset, (str, bytes)):
        return _from_records(list(dataset), "records", prompt_field, reference_field)
    raise ValueError(f"dataset: expected a .jsonl/.csv path, a pair of text files, a list of dicts or "
                     f"(prompts, references) lists, got {type(dataset).__name__}")
