"""Analyses built on MAUVE: sweeps, system comparisons and attribution.

:mod:`.sweeps` with :mod:`.sweep_stages` and :mod:`.sweep_results` (MAUVE along sample size, text
length, k, c and quantizer), :mod:`.sweep_stats` (rank agreement, paired seed differences),
:mod:`.compare` (systems under one quantizer, intervals, p-values) and :mod:`.attribution` (each
sample's influence on MAUVE).
"""
