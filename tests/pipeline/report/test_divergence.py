"""The report's table of decoding modes that part (pipeline/report/divergence.py)."""
from __future__ import annotations

import json

from pipeline.report.divergence import divergence_table


def comparison(sentences, identical, gap):
    return {"sentences": sentences, "identical": identical, "differing": [], "max_score_gap": gap}


def test_rows_sum_each_figure_and_mode(tmp_path):
    figure2 = tmp_path / "f2.json"
    figure2.write_text(json.dumps([{"beam": 4, "comparison": comparison(40, 40, 0.0)},
                                   {"beam": 8, "comparison": comparison(40, 39, 0.00378)}]))
    figure3 = tmp_path / "f3.json"
    figure3.write_text(json.dumps([{"batch_sentences": 1, "sorted_comparison": comparison(96, 96, 0.0),
                                    "unsorted_comparison": comparison(96, 95, 0.5)}]))
    header, rows = divergence_table([("figure2_eng-ger_TNMT.png", tmp_path / "x.png"),
                                     ("figure2_eng-ger_TNMT.json", figure2), ("figure3_eng-ger_TNMT.json", figure3)])
    assert header[-2:] == ["% identical", "largest score gap"]
    assert rows == [["figure2_eng-ger_TNMT", "batched vs unbatched", 2, 80, 79, 98.75, 0.00378],
                    ["figure3_eng-ger_TNMT", "sorted batches vs the first", 1, 96, 96, 100.0, 0.0],
                    ["figure3_eng-ger_TNMT", "unsorted batches vs the first", 1, 96, 95, 98.96, 0.5]]
    assert divergence_table([]) == (header, [])
