"""reproduce-table --strength-curve: TNMT, LTNMT and TNMT-lat from each kept snapshot of the Transformer's training
and from the final model, each tuned on the tuning set; the final point is Table 1's, each snapshot decodes its own
checkpoint, and the gains are the BLEU differences with their intervals."""
import csv
import json
import re

import pytest

from tasks.nmt import AverageCheckpoints
from tasks.reproduce import main
from tests.tasks.helpers import shared_params, short_transformer_configs


@pytest.fixture
def configs(tmp_path):
    """The short Transformer keeping snapshots 4 and 8; tuning on 20 of the test's 40 tuning lines, small grids."""
    folder = short_transformer_configs(tmp_path / "configs", snapshot_every="4")
    path = folder / "profiles" / "tiny.toml"
    text = path.read_text()
    for key, value in (("tune_sentences", "20"), ("grid_lambda", "[0.05, 0.25]"), ("grid_p", "[0.0]"),
                       ("grid_r", "[0.0]"), ("grid_lattice_weight", "[0.0, 10.0]")):
        head, lmbr = text.split("\n[lmbr]\n")
        text = head + "\n[lmbr]\n" + re.sub(rf"^{key} = .*$", f"{key} = {value}", lmbr, count=1, flags=re.M)
    path.write_text(text)
    return folder


def _run(tmp_path, data_dir, configs, *extra):
    return main(["--tasks", "ger-eng", "--profile", "tiny", "--data-dir", str(data_dir), "--processes", "1",
                 "--systems", "PBMT,TNMT,LTNMT,TNMT-lat", "--table2-tasks", "none", "--config-dir", str(configs),
                 "--work-dir", str(tmp_path / "work"), "--out", str(tmp_path / "out"), *extra])


def test_the_strength_curve_decodes_each_snapshot_and_ends_at_table_1(tmp_path, data_dir, configs):
    assert _run(tmp_path, data_dir, configs, "--strength-curve") == 0
    out = tmp_path / "out"
    with (out / "strength_curve.csv").open() as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    assert [(r[0], r[1], r[2]) for r in body] == [("ger-eng", "checkpoint 4", "4"), ("ger-eng", "checkpoint 8", "8"),
                                                  ("ger-eng", "final (averaged)", "12")]
    saved = json.loads((out / "report_inputs.json").read_text())["strength"]
    scores = {r["system"]: r["bleu"] for r in json.loads((out / "results.json").read_text())}
    final = saved[-1]
    assert {s: final["bleu"][s] for s in ("PBMT", "TNMT", "LTNMT", "TNMT-lat")} == {
        s: scores[s] for s in ("PBMT", "TNMT", "LTNMT", "TNMT-lat")}
    for row in saved:
        bleu = row["bleu"]
        assert row["margin"]["difference"] == pytest.approx(bleu["TNMT"] - bleu["PBMT"], abs=0.01)
        for system in ("LTNMT", "TNMT-lat"):
            gain = row["gains"][system]
            assert gain["difference"] == pytest.approx(bleu[system] - bleu["TNMT"], abs=0.01)
            assert gain["low"] <= gain["difference"] <= gain["high"]
        assert row["chosen"]["nmt_lambda"] > 0
    params = {**shared_params(tmp_path, data_dir, config_dir=configs)}
    at_4 = AverageCheckpoints(architecture="transformer", seed=1, snapshot=4, **params)
    assert at_4.signature()["stats"]["averaged"] == ["checkpoint-00000004.pt"]
    final_model = AverageCheckpoints(architecture="transformer", seed=1, **params)
    assert final_model.signature()["stats"]["averaged"] == ["checkpoint-00000008.pt", "checkpoint-00000012.pt"]
    assert (out / "strength_curve.png").stat().st_size > 0 and "LTNMT - TNMT" in (out / "strength_curve.md").read_text()


def test_a_profile_without_snapshots_is_refused_before_the_build(tmp_path, data_dir, capsys):
    assert main(["--tasks", "ger-eng", "--profile", "tiny", "--data-dir", str(data_dir), "--strength-curve",
                 "--work-dir", str(tmp_path / "work"), "--out", str(tmp_path / "out")]) == 2
    assert "--strength-curve: the Transformer of ger-eng keeps no snapshots" in capsys.readouterr().err
    assert not (tmp_path / "work").exists()
