"""Subprocess of ``test_evaluate_generation.py``: ``evaluate_generation`` on 8 simulated CPU
devices (``XLA_FLAGS=--xla_force_host_platform_device_count=8``) without and with ``mesh=``.
Prints one JSON line ``{"devices": 8, "one": rows, "eight": rows}``."""
from __future__ import annotations

import json
import sys

import jax


def main() -> int:
    from jaxmetrics.data import demo_model_dir, load_shakespeare
    from jaxmetrics.evaluation import GenerationSettings, MauveScoring, ScoringSettings, evaluate_generation
    from jaxmetrics.models import load_model
    from jaxmetrics.sharding import make_mesh

    lines = [ln for ln in load_shakespeare("heldout") if len(ln.split()) >= 30][:20]
    data = [{"prompt": " ".join(ln.split()[:6]), "continuation": " " + " ".join(ln.split()[6:])} for ln in lines]
    lm = load_model(demo_model_dir())
    kw = dict(model=lm, featurizer=lm, dataset=data, batch_size=12, progress=False,
              generation=GenerationSettings(decodings=("greedy", "top_p=0.9"), seeds=(0, 1), max_new_tokens=10),
              scoring=ScoringSettings(mauve=MauveScoring(seeds=(25, 26)), self_bleu_samples=8))
    one = evaluate_generation(**kw)
    eight = evaluate_generation(**kw, mesh=make_mesh())
    sys.stdout.write("\n" + json.dumps({"devices": len(jax.devices()), "one": one.rows, "eight": eight.rows}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
