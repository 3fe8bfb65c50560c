"""Prompt / continuation records for the generation-evaluation tests (imported by their files)."""
from __future__ import annotations

from jaxmetrics.data import load_shakespeare


def shakespeare_records(n: int) -> list[dict]:
    """The first ``n`` held-out lines of at least 30 words: 6 words of prompt, the rest continuation."""
    lines = [ln for ln in load_shakespeare("heldout") if len(ln.split()) >= 30][:n]
    return [{"prompt": " ".join(ln.split()[:6]), "continuation": " " + " ".join(ln.split()[6:])} for ln in lines]
