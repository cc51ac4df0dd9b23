"""Neural MT in PyTorch: attention GRU (FNMT) and Transformer (TNMT) models behind one step interface, their
training, checkpoint averaging, ensembles, greedy decoding and export to CTranslate2. No Luigi here.

One concept per module: `interface` (the decoder-facing contract and Ensemble), `gru`, `transformer`, `models`
(architectures by name), `batching`, `schedule`, `metrics`, `train`, `checkpoint`, `average`, `system`, `greedy`,
`export_ct2`.
"""

from pipeline.nmt.interface import DecoderState, Ensemble, NMTModel, StepModel

__all__ = ["DecoderState", "Ensemble", "NMTModel", "StepModel"]
