"""WFST lattices -> exact n-gram posteriors -> the L matrix of LMBR (Iglesias et al. 2018). No Luigi inside.

The path of a phrase-based lattice (docs/LATTICE_FORMAT.md) to the NMT decoder, one module per concept:

- :mod:`lattices.lattice`      acyclic acceptor as float64 arrays (topologically sorted, trimmed)
- :mod:`lattices.fst_io`       reading/writing lattice files, symbol tables, lattices.json
- :mod:`lattices.units`        word arcs -> BPE piece chains -> target vocabulary ids (<s>/</s>/OOV convention)
- :mod:`lattices.determinize`  float64 determinisation, tropical (best derivation) or log (summed)
- :mod:`lattices.nbest`        the K best unique strings, exactly
- :mod:`lattices.openfst`      the same evidence space in C++ (OpenFst through pynini)
- :mod:`lattices.path_kernels` compiled reading of OpenFst's n-shortest FST: strings, float32 costs, n-gram ids
- :mod:`lattices.evidence`     the evidence space: semiring x (full lattice | n-best), path scale alpha
- :mod:`lattices.posteriors`   the at-least-once forward algorithm, orders 1-4
- :mod:`lattices.blackwood`    path-counting transducers (OpenFst): an independent check of the posteriors
- :mod:`lattices.theta`        Theta_0..Theta_4 from BLEU precisions (two conventions)
- :mod:`lattices.row_automaton` the history -> row lookup as an automaton, next_row(row, token)
- :mod:`lattices.lmatrix`      L per sentence (sparse + Theta_0)
- :mod:`lattices.lmatrix_shards` npz shards of many sentences' L, written one sentence at a time; build_lmatrix_shard()
- :mod:`lattices.batch`        torch: dense L rows and next rows for a batch of hypotheses

The maths is docs/algorithms.md sections 1-4.
"""
