"""The report of :func:`~jaxmetrics.evaluation.evaluate_generation`: its result type, the one
Markdown / CSV formatter of its table (also the demo's table) and the writer of its files.

* :class:`GenerationReport` — rows per decoding setting, per-run values, config, notes;
* :func:`format_markdown` — the table in any column layout (default: every column some row
  has, in :data:`COLUMNS` order; the demo passes the MAUVE paper's Table 2 layout) and a caption;
* :func:`write_report` — ``report.md`` / ``.json`` / ``.csv``, the generated texts
  (``generations.jsonl``) and the plots of :mod:`jaxmetrics.evaluation.plot`; returns
  :class:`ReportFiles`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from jaxmetrics.results import Result, static_field

__all__ = ["COLUMNS", "HUMAN", "GenerationReport", "ReportFiles", "format_markdown", "write_report"]

HUMAN = "human"

# (key, header, format); the keys in _PM are shown as mean ± s.d. when the row has key_std
COLUMNS = (
    ("mauve", "MAUVE ↑", "{:.3f}"),
    ("frontier_integral", "FI ↓", "{:.3f}"),
    ("gen_ppl", "Gen. PPL", "{:.2f}"),
    ("gen_ppl_gap", "|Gen. PPL − human|", "{:.2f}"),
    ("ppl_evaluate", "PPL (evaluate)", "{:.2f}"),
    ("zipf", "Zipf", "{:.3f}"),
    ("rep", "REP %", "{:.1f}"),
    ("distinct_4", "Distinct-4", "{:.3f}"),
    ("self_bleu_4", "Self-BLEU-4", "{:.3f}"),
    ("mean_length", "Mean length", "{:.1f}"),
    ("bertscore_f1", "BERTScore F1 ↑", "{:.3f}"),
    ("twmd_f1", "TWMD F1 ↑", "{:.3f}"),
    ("me_petersen", "ME-Petersen ↑", "{:.3f}"),
)
_PM = {"mauve", "frontier_integral"}  # shown as mean ± s.d. in the Markdown table


class ReportFiles(Result):
    """Paths written by :func:`write_report` (one folder).

    Attributes:
      markdown: ``report.md`` (the table and its caption).
      json: ``report.json`` (:meth:`GenerationReport.to_dict`).
      csv: ``report.csv`` (every column, ``_std`` columns after their value).
      divergence_curves: ``divergence_curves.png``.
      lengths: ``lengths.png``.
      generations: ``generations.jsonl``: one JSON object a line, ``{"row", "prompt", "setting",
        "seed", "text"}`` for every generated continuation (``seed`` is ``null`` for a
        deterministic setting such as greedy); ``None`` for a report without its texts.
    """

    markdown: str
    json: str
    csv: str
    divergence_curves: str
    lengths: str
    generations: str | None = None


class GenerationReport(Result):
    """Result of :func:`~jaxmetrics.evaluation.evaluate_generation`.

    Attributes:
      rows: ``{row name: {column: value}}``; ``'human'`` first, then the decoding settings in
        the order given. Columns as in :mod:`jaxmetrics.evaluation`, plus ``<column>_std``
        (sample s.d. over runs) and ``<column>_runs`` (per-run values) where a setting has
        several runs. A row holds only the columns its options computed (the table's ``—``).
      runs: ``{setting: [per-run dict]}`` with each run's sampling seed (``None`` for a
        deterministic setting such as greedy), values and per-text ``ppl_evaluate_per_text``.
      config: the settings of the call (JSON-able): the models' names, ``dataset``,
        ``num_prompts``, the resolved ``max_new_tokens``, ``pooling`` and ``eos_token_id``, the
        stage objects as given (``generation``, ``features``, ``scoring``: their
        :meth:`~jaxmetrics.settings.Settings.to_dict`), ``cache_dir``, ``devices``, ``dtypes``.
      notes: what was dropped or skipped, in words.
      seconds: wall time per stage (``generate``, ``featurize``, ``score``, ``total``).
      files: the :class:`ReportFiles` written under ``out_dir`` (``None`` without one).
      curves: ``{setting: [m + 2, 2]}`` divergence curve of its first run and first k-means seed.
      lengths: ``{row: [N] int}`` continuation lengths in tokens (first run).
      generations: ``{setting: [per run: N continuation id arrays]}`` (EOS removed; runs in seed
        order); not written to the JSON (the cache keeps them).
      prompts: the ``N`` prompts as text (decoded prompt ids); not in the JSON.
      texts: ``{setting: [per run: N continuation texts]}`` (``generations`` decoded); not in the
        JSON: :func:`write_report` writes them with ``prompts`` to ``generations.jsonl``.
      signature: what the numbers depend on (static; :mod:`jaxmetrics.results`):
        ``metric:evaluate-generation``, the generating model with its weights' hash, the
        featurizer's and the similarity model's ids, the decodings, sampling seeds, k-means seeds,
        ``max_new_tokens`` (``auto`` when derived from the prompts), pooling, truncation lengths,
        every scoring option (the stage objects' ``signature_fields()``) and the models' dtypes.
        In ``report.json``.
    """

    rows: dict
    runs: dict
    config: dict
    notes: list = ()
    seconds: dict = None
    files: ReportFiles | None = None
    curves: dict = None
    lengths: dict = None
    generations: dict = None
    prompts: list = None
    texts: dict = None
    signature: str = static_field(default="", repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``report.json``: every field but ``generations``, ``prompts`` and ``texts``
        (curves and lengths as lists; ``files`` as ``{kind: path}``, ``{}`` before
        :func:`write_report`)."""
        out = super().to_dict()
        for k in ("generations", "prompts", "texts"):
            del out[k]
        out["files"] = out["files"] or {}
        for k in ("seconds", "curves", "lengths"):
            out[k] = out[k] or {}
        out["notes"] = list(out["notes"])
        return out

    def to_markdown(self, labels: dict[str, str] | None = None, *, columns: Sequence[str] | None = None,
                    caption: Sequence[str] | None = None) -> str:
        """The table (one line per row) and a caption: :func:`format_markdown` of this report."""
        return format_markdown(self.rows, self.config, self.notes, labels=labels, columns=columns, caption=caption)

    def csv_rows(self) -> list[Mapping[str, Any]]:
        """One row per setting for :meth:`to_csv`: ``row``, then every column, each followed by its
        ``_std`` column (``None`` where a value is missing)."""
        keys = [k for k, _, _ in COLUMNS]
        header = [c for k in keys for c in (k, k + "_std")]
        return [{"row": r, **{c: None if vals.get(c) is None else float(vals[c]) for c in header}}
                for r, vals in self.rows.items()]


def _seeds_caption(config: dict) -> str:
    """Which settings the sampling seeds apply to: the sampled ones only (greedy has no seed)."""
    from jaxmetrics.evaluation.decodings import parse_decoding

    generation = config.get("generation") or {}
    names = list(generation.get("decodings") or [])
    sampled = [n for n in names if parse_decoding(n).stochastic]
    fixed = [n for n in names if n not in sampled]
    parts = []
    if sampled:
        parts.append(f"sampling seeds {generation.get('seeds')} ({', '.join(sampled)})")
    if fixed:
        parts.append(f"{', '.join(fixed)}: one deterministic run, no seed")
    return "; ".join(parts)


def _mauve_caption(config: dict) -> str:
    """How MAUVE was estimated: over how many k-means seeds (the quantized estimator), or with which
    density-ratio estimator and over how many of its seeds; the f-divergence when it is not KL."""
    mauve = (config.get("scoring") or {}).get("mauve") or {}
    est = mauve.get("estimator") or "quantized"
    div = mauve.get("divergence") or "kl"
    kind = "k-means" if est == "quantized" else f"{est}-estimator"
    return (f"MAUVE over {len(mauve.get('seeds') or ())} {kind} seeds per run ({mauve.get('scoring')} scoring"
            + ("" if div == "kl" else f", {div} frontier") + f"), ± = s.d. over sampling runs (one run: over "
            f"{kind} seeds)")


def _default_caption(config: dict) -> list[str]:
    seeds = _seeds_caption(config)
    return [f"{config.get('num_prompts')} prompts; up to {config.get('max_new_tokens')} new tokens; "
            + (seeds + "; " if seeds else "")
            + _mauve_caption(config) + "; "
            f"features: {config.get('featurizer')} ({config.get('pooling')} pooling)."]


def format_markdown(rows: dict[str, dict], config: dict, notes: Sequence[str] = (),
                    labels: dict[str, str] | None = None, *, columns: Sequence[str] | None = None,
                    caption: Sequence[str] | None = None) -> str:
    """Markdown table of report rows, then a caption and one ``Note:`` line per note.

    Args:
      rows: ``{row name: {column: value}}`` (:attr:`GenerationReport.rows`), printed in order;
        ``mauve`` and ``frontier_integral`` print as ``mean ± s.d.`` when the row has their
        ``_std``; a missing value prints as ``—``.
      config: :attr:`GenerationReport.config` (read by the default caption; ``{}``: no caption).
      notes: appended as ``Note: ...`` lines.
      labels: display names of the rows (default: the row name, ``Human`` for ``'human'``).
      columns: keys of :data:`COLUMNS` to show, in this order, all of them even where no row
        has a value; default: every column that some row has, in :data:`COLUMNS` order.
      caption: lines printed after a blank line below the table (default: the settings of
        ``config`` in one line).

    Returns:
      the Markdown text.

    Examples:
      >>> rows = {"human": {"gen_ppl": 9.5}, "greedy": {"mauve": 0.25, "gen_ppl": 2.0}}
      >>> print(format_markdown(rows, {}).splitlines()[2])
      | Human | — | 9.50 |
      >>> print(format_markdown(rows, {}).splitlines()[3])
      | greedy | 0.250 | 2.00 |
      >>> print(format_markdown(rows, {}, columns=["rep", "gen_ppl"], caption=["Two rows."]))
      | Decoding | REP % | Gen. PPL |
      |---|---|---|
      | Human | — | 9.50 |
      | greedy | — | 2.00 |
      <BLANKLINE>
      Two rows.
    """
    labels = labels or {}
    if columns is None:
        shown = [c for c in COLUMNS if any(c[0] in v for v in rows.values())] or list(COLUMNS[:1])
    else:
        spec = {c[0]: c for c in COLUMNS}
        unknown = [k for k in columns if k not in spec]
        if unknown:
            raise ValueError(f"columns: unknown {unknown}; known: {', '.join(spec)}")
        shown = [spec[k] for k in columns]
    lines = ["| " + " | ".join(["Decoding"] + [c[1] for c in shown]) + " |", "|" + "---|" * (len(shown) + 1)]
    for r, vals in rows.items():
        cells = [labels.get(r, "Human" if r == HUMAN else r)]
        for k, _, fmt in shown:
            cell = fmt.format(vals[k]) if vals.get(k) is not None else "—"
            if k in _PM and vals.get(k + "_std") is not None and vals.get(k) is not None:
                cell += " ± " + fmt.format(vals[k + "_std"])
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    caption = _default_caption(config) if caption is None and config else list(caption or ())
    if caption:
        lines.append("")
        lines.extend(caption)
    for n in notes:
        lines.append(f"Note: {n}")
    return "\n".join(lines)


def write_report(report: GenerationReport, out_dir: str | os.PathLike, labels: dict[str, str] | None = None, *,
                 curves_title: str | None = None) -> ReportFiles:
    """Write ``report.md``, ``report.json``, ``report.csv``, ``generations.jsonl`` (when the report
    has its texts), ``divergence_curves.png`` and ``lengths.png`` under ``out_dir`` (created).

    Args:
      report: a :class:`GenerationReport`.
      out_dir: the folder.
      labels: display names of the rows in the table and the plots.
      curves_title: title of the divergence-curve figure (default: says what the curves are).

    Returns:
      :class:`ReportFiles`; ``report.json`` is ``report.replace(files=...).to_dict()``.
    """
    from jaxmetrics.evaluation.plot import plot_report_curves, plot_report_lengths

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = ReportFiles(markdown=str(out / "report.md"), json=str(out / "report.json"), csv=str(out / "report.csv"),
                        divergence_curves=str(out / "divergence_curves.png"), lengths=str(out / "lengths.png"),
                        generations=None if report.texts is None else str(out / "generations.jsonl"))
    Path(files.markdown).write_text(report.to_markdown(labels) + "\n")
    report.to_csv(files.csv)
    if files.generations is not None:
        Path(files.generations).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                   for r in _generation_records(report)), encoding="utf-8")
    plot_report_curves(report, files.divergence_curves, labels, title=curves_title)
    plot_report_lengths(report, files.lengths, labels)
    report.replace(files=files).write_json(files.json, indent=1)
    return files


def _generation_records(report: GenerationReport) -> list[dict[str, Any]]:
    """The lines of ``generations.jsonl``: ``{"row", "prompt", "setting", "seed", "text"}`` for
    every continuation of every run, in setting, run and row order; ``seed`` is the run's sampling
    seed, ``None`` for a deterministic setting (greedy). ``[]`` for a report without its texts.

    Examples:
      >>> rep = GenerationReport(rows={}, runs={"greedy": [{"seed": None}]}, config={},
      ...                        prompts=["ROMEO:"], texts={"greedy": [[" But soft"]]})
      >>> _generation_records(rep)
      [{'row': 0, 'prompt': 'ROMEO:', 'setting': 'greedy', 'seed': None, 'text': ' But soft'}]
    """
    if report.texts is None:
        return []
    out = []
    for setting, runs in report.texts.items():
        for run, texts in zip(report.runs[setting], runs):
            out.extend({"row": i, "prompt": report.prompts[i], "setting": setting, "seed": run.get("seed"),
                        "text": t} for i, t in enumerate(texts))
    return out
