"""Minimum Bayes-risk decoding over a set of translations: pairwise utilities and the selection."""
