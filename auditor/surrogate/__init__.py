"""Interpretable surrogates: ILMART (paper 002) trained on stock LightGBM, its exact decomposition into main and
pair effects, and fidelity to the audited ranker. `train.py` holds the two uses: a surrogate of any ranker, and
ILMART trained on labels as the audited model itself."""
