"""Scoring a model fast and exactly: tree ensembles as arrays, masked rows scored off the trees, the maskers, and our
compiled TreeSHAP. The explainers, checks and model kinds build on it."""
