"""MAUVE's scoring stage: histograms or density ratios → divergence frontier → score.

:mod:`.histograms` (divergence curve, area and frontier integral of two histograms, smoothing),
:mod:`.divergences` (f-divergence frontiers from log density ratios, the Gaussian closed form),
:mod:`.estimators` (density-ratio estimators: k-NN, classifier, Gaussian, quantized) and
:mod:`.estimate` (:func:`estimate_mauve`, the family's entry point) and :mod:`.results` (the three
result classes and the estimator-specific details they carry).
"""
