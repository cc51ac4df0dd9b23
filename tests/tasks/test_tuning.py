"""TuneLMBR and TuneRescoring as a race (successive halving over the tuning sentences) against the full grid, and
TuneRescoring and TuneSearch on windows of their own."""
from __future__ import annotations

import dataclasses
import gzip
import json
import re

from luigi.execution_summary import LuigiStatusCode

from pipeline.config import load_profile
from pipeline.evaluation.bleu import corpus_bleu
from pipeline.io import read_lines
from tasks.tuning import (RESCORING_OUTPUTS_FILE, SEARCH_OUTPUTS_FILE, TuneLMBR, TuneRescoring, TuneSearch,
                          race_params)
from tests.conftest import write_deen_folder
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_decode_tasks import deterministic_configs


def _configs(folder, race: str):
    configs = deterministic_configs(folder)
    profile = configs / "profiles" / "tiny.toml"
    text = re.sub(r"^tune_sentences = 50 .*$", f"tune_sentences = 20\n{race}", profile.read_text(), flags=re.M)
    text = re.sub(r"^grid_lambda = .*$", "grid_lambda = [0.001, 0.05, 1.0]", text, flags=re.M)
    # the tiny tuning set's PBMT precisions are 100%: at p = r = 1 (stage 1) L adds nothing and BLEU is 0; lower p
    # and r (stage 2) let L pull the output towards the lattice, where BLEU tells the points apart
    text = re.sub(r"^grid_p = .*$", "grid_p = [-0.5, -0.4, -0.3, 0.0]", text, flags=re.M)
    text = re.sub(r"^grid_r = .*$", "grid_r = [-0.2, 0.0]", text, flags=re.M)
    text = re.sub(r"^grid_lattice_weight = .*$", "grid_lattice_weight = [0.0, 3.0, 1e5]", text, flags=re.M)
    # one sentence per decoder batch: the race's spans and the full grid then compute the same products, so no
    # near-tie can part them on another CPU (batched products round differently: beam_search.py)
    profile.write_text(re.sub(r"^batch_sentences = .*$", "batch_sentences = 1", text, flags=re.M))
    return configs


def test_a_race_scores_its_finishers_as_the_full_grid_does(tmp_path):
    """Each point that finishes the race decoded the tuning sentences in two spans (the first 8, then the rest),
    with the L and acceptors of the right sentences: its BLEU equals the full grid's. The others stopped after 8.
    With rescoring_sentences, TuneRescoring leaves the race (TuneLMBR keeps it: the same artifact as the race's)."""
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    records = {}
    race_rule = "race_sentences = [8]\nrace_keep = 0.5"
    for name, race in (("full", ""), ("race", race_rule), ("own", f"{race_rule}\nrescoring_sentences = 20")):
        (tmp_path / name).mkdir()
        params = shared_params(tmp_path, data, config_dir=_configs(tmp_path / name, race))
        lmbr, rescoring = TuneLMBR(models="TNMT", **params), TuneRescoring(models="TNMT", lmbr=True, **params)
        assert build(lmbr, rescoring).status == LuigiStatusCode.SUCCESS
        records[name] = [json.loads((task.artifact_dir() / file).read_text())
                         for task, file in ((lmbr, "lmbr.json"), (rescoring, "rescoring.json"))]
        # every point's outputs are kept, as many as it decoded, and they give the grid's BLEU
        with gzip.open(rescoring.artifact_dir() / RESCORING_OUTPUTS_FILE, "rt") as stream:
            decoded = json.load(stream)
        references = list(read_lines(rescoring.requires()["raw"].artifact_dir() / "raw.en.gz"))
        for point, kept in zip(records[name][1]["grid"], decoded):
            assert kept["point"] == {k: v for k, v in point.items() if k not in ("bleu", "eliminated_at")}
            assert len(kept["outputs"]) == point.get("eliminated_at", 20)
            assert corpus_bleu(kept["outputs"], references[:len(kept["outputs"])], "en").score == point["bleu"]
        assert ("race_sentences" in lmbr.params()) == (name != "full")
        assert ("race_sentences" in rescoring.params()) == (name == "race")
        assert rescoring.params().get("rescoring_sentences") == (20 if name == "own" else None)

    # with a window of its own, TuneRescoring decodes every mu on all of it while TuneLMBR still races: from the
    # race's LMBR point, its grid holds the race's finishers with their BLEU and the points the race stopped
    own_lmbr, own_rescoring = records.pop("own")
    raced = records["race"][1]["grid"]
    assert own_lmbr == records["race"][0] and own_rescoring["window"] == [0, 20]
    assert len(own_rescoring["grid"]) == len(raced) == 3
    assert not any("eliminated_at" in point for point in own_rescoring["grid"])
    for own_point, race_point in zip(own_rescoring["grid"], raced):
        race_point = dict(race_point)
        if race_point.pop("eliminated_at", None) is None:
            assert own_point == race_point
        else:
            assert {**own_point, "bleu": None} == {**race_point, "bleu": None}

    def key(point):
        return tuple(sorted((k, v) for k, v in point.items() if k not in ("bleu", "eliminated_at")))

    for full, race in zip(records["full"], records["race"]):
        finished = [point for point in race["grid"] if "eliminated_at" not in point]
        stopped = [point for point in race["grid"] if "eliminated_at" in point]
        assert finished and stopped and all(point["eliminated_at"] == 8 for point in stopped)
        full_bleu = {key(point): point["bleu"] for point in full["grid"]}
        for point in finished:
            if key(point) in full_bleu:  # stage 2 of TuneLMBR may start from another point than the full grid's
                assert point["bleu"] == full_bleu[key(point)], point
    # stage 1 of TuneLMBR is the same grid in both: 3 lambdas x 2 gain forms, 3 of them finish (ceil(6 / 2)); stage
    # 2 tries 7 offsets of p and r, 4 finish, with BLEU that a wrong sentence's L would change
    lmbr_race, lmbr_full = records["race"][0]["grid"], records["full"][0]["grid"]
    assert [key(p) for p in lmbr_race[:6]] == [key(p) for p in lmbr_full[:6]]
    assert sum("eliminated_at" not in p for p in lmbr_race[:6]) == 3 and len(lmbr_race) == 6 + 7
    assert sum("eliminated_at" not in p for p in lmbr_race[6:]) == 4
    assert len({p["bleu"] for p in lmbr_full[6:]}) > 1 and min(p["bleu"] for p in lmbr_race[6:]
                                                              if "eliminated_at" not in p) > 20


def test_finalists_enter_the_tuning_hash_only_above_one():
    """race_finalists = 1 is the race of before: its tuning artifacts keep their ids; 4 is another race."""
    lmbr = load_profile("medium").lmbr
    one, four = dataclasses.replace(lmbr, race_finalists=1), dataclasses.replace(lmbr, race_finalists=4)
    assert race_params(one) == {"race_sentences": (25, 50), "race_keep": 0.3333}
    assert race_params(four) == {**race_params(one), "race_finalists": 4}
    assert race_params(dataclasses.replace(four, race_sentences=())) == {}


def test_the_rescoring_and_search_windows_are_the_tuning_splits_first_sentences_and_must_fit_its_lines():
    """Without rescoring_sentences (search_sentences), TuneRescoring (TuneSearch) decodes the tuning window; with it,
    the split's first sentences, wherever the tuning window starts."""
    profile = load_profile("medium")
    plain = dataclasses.replace(profile.lmbr, rescoring_sentences=0, search_sentences=0, tune_start=100)
    assert plain.rescoring_window() == plain.tune_window() == range(100, 400)
    own = dataclasses.replace(plain, rescoring_sentences=1000)
    assert own.rescoring_window() == range(0, 1000) and not dataclasses.replace(profile, lmbr=own).problems()
    past = dataclasses.replace(profile, lmbr=dataclasses.replace(own, rescoring_sentences=1001))
    assert dict(past.problems())["lmbr.rescoring_sentences"] == (
        "1001 sentences, past the 1000 tuning lines that [data] tune_sentences prepares")
    assert plain.search_window() == range(100, 400)
    own = dataclasses.replace(plain, search_sentences=1000)
    assert own.search_window() == range(0, 1000) and not dataclasses.replace(profile, lmbr=own).problems()
    past = dataclasses.replace(profile, lmbr=dataclasses.replace(own, search_sentences=1001))
    assert dict(past.problems())["lmbr.search_sentences"] == (
        "1001 sentences, past the 1000 tuning lines that [data] tune_sentences prepares")


def test_a_search_window_of_its_own_decodes_every_search_on_all_of_it(tmp_path):
    """With search_sentences (40, past the tuning window's 20), TuneSearch decodes each search on the tuning split's
    first 40 sentences at TuneLMBR's point (the same artifact as without it), with L and acceptors of all 40. Its
    kept outputs give its recorded BLEU, and their first 20 are the plain window's outputs (one sentence per batch:
    a sentence's search does not depend on the others)."""
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    searches = 'grid_search = ["free", "anchored"]'
    found = {}
    for name, rule in (("plain", searches), ("own", f"{searches}\nsearch_sentences = 40")):
        (tmp_path / name).mkdir()
        params = shared_params(tmp_path, data, config_dir=_configs(tmp_path / name, rule))
        search = TuneSearch(models="TNMT", **params)
        assert build(search).status == LuigiStatusCode.SUCCESS
        with gzip.open(search.artifact_dir() / SEARCH_OUTPUTS_FILE, "rt") as stream:
            kept = {entry["search"]: entry["outputs"] for entry in json.load(stream)}
        record = json.loads((search.artifact_dir() / "search.json").read_text())
        references = list(read_lines(search.requires()["raw"].artifact_dir() / "raw.en.gz"))
        assert set(kept) == {"free", "anchored"}
        for form, outputs in kept.items():
            assert len(outputs) == record["sentences"]
            assert corpus_bleu(outputs, references[:len(outputs)], "en").score == record["bleu"][form]
        found[name] = (search, record, kept)
    (plain, plain_record, plain_kept), (own, own_record, own_kept) = found["plain"], found["own"]
    assert plain_record["sentences"] == 20 and "window" not in plain_record and "search_sentences" not in plain.params()
    assert own_record["sentences"] == 40 and own_record["window"] == [0, 40] and own.params()["search_sentences"] == 40
    assert own.requires()["tuning"].artifact_dir().name == plain.requires()["tuning"].artifact_dir().name
    assert {task.sentences for task in own.requires()["lmatrix"].values()} == {40}
    assert own.requires()["acceptors"].sentences == 40
    for form in ("free", "anchored"):
        assert own_kept[form][:20] == plain_kept[form]


def test_the_search_tuning_may_choose_the_evidence_space_and_the_decoding_takes_it(tmp_path):
    """With search_evidence, TuneSearch decodes each search over each evidence space of grid_nbest at TuneLMBR's
    point: its rows at TuneLMBR's own evidence space are the decodings without search_evidence, every row's BLEU is
    its kept outputs', the chosen space is the one of the best row, and DecodeLTNMT decodes with its L."""
    from tasks.decode import DecodeLTNMT

    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=12)
    rule = 'grid_search = ["free", "anchored"]\ngrid_nbest = [0, 3]\nsearch_sentences = 30'
    found = {}
    for name, extra in (("plain", ""), ("evidence", "\nsearch_evidence = true")):
        (tmp_path / name).mkdir()
        params = shared_params(tmp_path, data, config_dir=_configs(tmp_path / name, rule + extra))
        search = TuneSearch(models="TNMT", **params)
        assert build(search).status == LuigiStatusCode.SUCCESS
        with gzip.open(search.artifact_dir() / SEARCH_OUTPUTS_FILE, "rt") as stream:
            kept = json.load(stream)
        found[name] = (search, json.loads((search.artifact_dir() / "search.json").read_text()), kept, params)
    (plain, plain_record, plain_kept, _), (search, record, kept, params) = found["plain"], found["evidence"]
    assert "search_evidence" not in plain.params() and search.params()["search_evidence"] is True
    assert plain.chosen_nbest() is None and "evidence" not in plain_record
    own = record["point"]["nbest"]  # TuneLMBR's choice, the same artifact in both
    assert plain_record["point"] == record["point"]
    assert [(row["search"], row["nbest"]) for row in record["evidence"]] == [
        (form, nbest) for nbest in (own, 3 - own) for form in ("free", "anchored")]
    references = list(read_lines(search.requires()["raw"].artifact_dir() / "raw.en.gz"))[:30]
    for row, entry in zip(record["evidence"], kept):
        assert (entry["search"], entry["nbest"]) == (row["search"], row["nbest"])
        assert corpus_bleu(entry["outputs"], references, "en").score == row["bleu"]
    assert [entry["outputs"] for entry in kept[:2]] == [entry["outputs"] for entry in plain_kept]
    best = max(record["evidence"], key=lambda row: row["bleu"])["bleu"]
    chosen = search.chosen_nbest()
    assert chosen == record["chosen"]["nbest"] and record["bleu"] == {
        row["search"]: row["bleu"] for row in record["evidence"] if row["nbest"] == chosen}
    assert max(record["bleu"].values()) == best
    decoding = DecodeLTNMT(split="newstest2016", **params)
    assert decoding.chosen()["nbest"] == chosen
    from tasks.lmatrix import evidence_nbest
    assert evidence_nbest(decoding.lmatrix()) == chosen
