"""Luigi tasks: thin wrappers around pipeline/ and lattices/, one module per stage.

`luigi --module tasks <Task> --task-name ger-eng ...` builds any artifact on its own; `reproduce-table` builds the
whole table.
"""
from tasks.data import ApplyBPE, BuildVocab, LearnBPE, TokenizeSplit, TrainTruecaser, TruecaseSplit  # noqa: F401
from tasks.evaluate import EvaluateSystem, RoundTripBLEU  # noqa: F401
from tasks.lm import TrainLM  # noqa: F401
from tasks.report import TaskReport  # noqa: F401
from tasks.smt import AlignWords, BuildPhraseTable, DecodePBMT, TunePBMT  # noqa: F401
from tasks.nmt import AverageCheckpoints, ExportCTranslate2, NMTSystem, ShrinkEnsemble, TrainNMT  # noqa: F401
from tasks.decode import DecodeFNMT, DecodeLNMT, DecodeLTNMT, DecodeTNMT  # noqa: F401
from tasks.lmatrix import BuildLMatrix  # noqa: F401
from tasks.speed import MeasureDecodingSpeed  # noqa: F401
