"""Corpora: finding the files of a split (resolver, download), validating and cleaning parallel text."""
