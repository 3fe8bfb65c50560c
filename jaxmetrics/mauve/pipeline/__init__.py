"""MAUVE from texts, tokens or features: the mauve-text compatible entry points.

:mod:`.inputs` (features from text or tokens), :mod:`.compute` (``compute_mauve``,
``compute_mauve_seeds``), :mod:`.interval` (the seed mean's interval), :mod:`.codebook` (one
fitted codebook for several pairs) and :mod:`.state` (``MauveState``, the feature buffer).
"""
