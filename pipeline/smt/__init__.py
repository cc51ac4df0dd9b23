"""Phrase-based SMT (Moses-style): word alignment, phrase tables, stack decoding with lattices, MERT.

One concept per module: ``align`` (eflomal both ways), ``symmetrize`` (grow-diag-final-and), ``extract``
(phrase pairs), ``lexical`` (word translation tables, lexical weights), ``phrase_scoring`` (a phrase table from
an aligned corpus, with bounded memory), ``reordering`` (the lexicalised reordering model, msd-bidirectional-fe),
``phrase_table`` (in memory, the fast form, filtering, the option cap),
``features`` (names and the log-linear weights), ``options`` (a sentence's translation options),
``future_cost``, ``decoder`` (stack search keeping recombined arcs), ``lattice`` (search graph -> OpenFst,
1-best, n-best), ``parallel`` (decoding many sentences in processes), ``mert`` (Och 2003), ``weights`` (weights
JSON with its signature). No Luigi here.
"""
