"""MAUVE as a training loss: :mod:`.soft` (soft and hard MAUVE, ``mauve_loss``) and :mod:`.fit`
(:func:`fit_to_mauve`, the recipe that refits the codebook while the loss is minimised).
"""
