"""``jaxmetrics mauve``: MAUVE between two feature files (``.npy``) or two text files."""
from __future__ import annotations

import argparse
import json
import os


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mauve",
        help="MAUVE between P (human) and Q (model): feature files or text files",
        description="MAUVE (Pillutla et al. 2021) with mauve-text's defaults. Give --p-features/--q-features "
        "([n, d] .npy arrays), or two text files (one text per line) and --model.",
    )
    p.add_argument("texts", nargs="*", metavar="TEXT_FILE", help="human.txt model.txt (one text per line)")
    p.add_argument("--p-features", help="P features, .npy [n_p, d]")
    p.add_argument("--q-features", help="Q features, .npy [n_q, d]")
    p.add_argument("--model", default="gpt2-large", help="featurizer (hub id or local dir) for text files")
    p.add_argument("--max-text-length", type=int, default=1024)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--num-buckets", default="auto", help="'auto' (n/10) or an integer")
    p.add_argument("--kmeans-explained-var", type=float, default=0.9)
    p.add_argument("--kmeans-num-redo", type=int, default=5)
    p.add_argument("--kmeans-max-iter", type=int, default=500)
    p.add_argument("--scaling", type=float, default=5.0, help="mauve_scaling_factor c")
    p.add_argument("--num-points", type=int, default=25, help="divergence_curve_discretization_size")
    p.add_argument("--seed", type=int, default=25)
    p.add_argument("--seeds", type=int, default=1, help="average over this many k-means seeds (seed, seed+1, ...)")
    p.add_argument("--plot", help="write the divergence curve figure here (.png/.pdf)")
    p.add_argument("--json", dest="json_out", help="write the scores as JSON here")
    p.set_defaults(func=run)


def _read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from jaxmetrics.mauve import compute_mauve, compute_mauve_seeds
    from jaxmetrics.mauve.plot import plot_divergence_curves

    if args.texts and (args.p_features or args.q_features):
        raise ValueError("texts: give either two text files or --p-features/--q-features, not both")
    kw: dict = {}
    if args.texts:
        if len(args.texts) != 2:
            raise ValueError(f"texts: expected two files (human.txt model.txt), got {len(args.texts)}")
        for t in args.texts:
            if not os.path.isfile(t):
                raise FileNotFoundError(f"texts: no such file {t!r}")
        kw.update(p_text=_read_lines(args.texts[0]), q_text=_read_lines(args.texts[1]),
                  featurize_model_name=args.model, max_text_length=args.max_text_length,
                  batch_size=args.batch_size)
    else:
        if not args.p_features or not args.q_features:
            raise ValueError("p_features: give --p-features and --q-features (.npy), or two text files")
        kw.update(p_features=np.load(args.p_features, allow_pickle=False),
                  q_features=np.load(args.q_features, allow_pickle=False))
    try:
        nb = args.num_buckets if args.num_buckets == "auto" else int(args.num_buckets)
    except ValueError:
        raise ValueError(f"num_buckets: expected 'auto' or an integer, got {args.num_buckets!r}") from None
    common = dict(num_buckets=nb, kmeans_explained_var=args.kmeans_explained_var,
                  kmeans_num_redo=args.kmeans_num_redo, kmeans_max_iter=args.kmeans_max_iter,
                  divergence_curve_discretization_size=args.num_points, mauve_scaling_factor=args.scaling)
    if args.seeds < 1:
        raise ValueError(f"seeds: must be >= 1, got {args.seeds}")
    try:
        return _score(args, kw, common, compute_mauve, compute_mauve_seeds, plot_divergence_curves)
    except ImportError as e:  # the featurizer (jaxmetrics.models) is unavailable
        raise ValueError(f"texts: {e}") from e


def _score(args, kw, common, compute_mauve, compute_mauve_seeds, plot_divergence_curves) -> int:
    if args.seeds == 1:
        out = compute_mauve(**kw, **common, seed=args.seed)
        result = dict(mauve=out.mauve, frontier_integral=out.frontier_integral, mauve_star=out.mauve_star,
                      frontier_integral_star=out.frontier_integral_star, num_buckets=out.num_buckets)
        curves = {"P vs Q": out.divergence_curve}
        print(f"MAUVE {out.mauve:.4f}  MAUVE* {out.mauve_star:.4f}  FI {out.frontier_integral:.4f}  "
              f"FI* {out.frontier_integral_star:.4f}  (k = {out.num_buckets})")
    else:
        seeds = tuple(range(args.seed, args.seed + args.seeds))
        out = compute_mauve_seeds(**kw, **common, seeds=seeds)
        result = dict(mauve=out.mauve_mean, mauve_std=out.mauve_std, mauve_star=out.mauve_star_mean,
                      mauve_star_std=out.mauve_star_std, frontier_integral=out.frontier_integral_mean,
                      frontier_integral_std=out.frontier_integral_std, num_buckets=out.num_buckets,
                      seeds=list(seeds), mauve_per_seed=[float(v) for v in out.mauve])
        curves = {f"seed {s}": c for s, c in zip(seeds, out.divergence_curve)}
        print(f"MAUVE {out.mauve_mean:.4f} +- {out.mauve_std:.4f}  MAUVE* {out.mauve_star_mean:.4f} +- "
              f"{out.mauve_star_std:.4f}  over {len(seeds)} seeds (k = {out.num_buckets})")
    if args.plot:
        plot_divergence_curves(curves, args.plot)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return 0
