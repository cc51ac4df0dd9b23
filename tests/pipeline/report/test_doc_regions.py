import json

import pytest

from pipeline.report.doc_regions import DocRegionError, main, refreshed, stale_files
from pipeline.report.doc_sources import DocSourceError, lookup


@pytest.fixture
def repo(tmp_path):
    run = tmp_path / "results" / "medium"
    run.mkdir(parents=True)
    records = [{"task": t, "system": s, "variant": v, "bleu": b, "chrf2": b + 30}
               for t, s, v, b in [("ger-eng", "PBMT", "", 21.94), ("ger-eng", "TNMT", "", 17.321),
                                  ("ger-eng", "TNMT", "accelerated", 17.0), ("eng-ger", "PBMT", "", 16.89),
                                  ("eng-ger", "TNMT", "", 15.891)]]
    (run / "results.json").write_text(json.dumps(records))
    (run / "report_inputs.json").write_text(json.dumps({
        "tasks": ["ger-eng", "eng-ger"], "systems": ["PBMT", "FNMT", "TNMT"],
        "provenance": {t: {"commit": "abc", "version": "1.0", "cpu": "AMD EPYC", "cores": 2, "cpu_variant": "AVX2",
                           "workers": 2, "date": "2026-12-07"} for t in ("ger-eng", "eng-ger")}}))
    (run / "regime.md").write_text("## Regime\n\n| task | holds |\n|---|---:|\n| ger-eng | no |\n\nProduced by:\n\n- x\n")
    bench = tmp_path / "results" / "benchmarks"
    bench.mkdir()
    (bench / "speed.json").write_text(json.dumps({"ratio": 1.534, "rows": [{"name": "a", "wpm": 12345.6},
                                                                          {"name": "b", "wpm": 999.0}]}))
    (tmp_path / "docs").mkdir()
    return tmp_path


def test_a_value_and_a_table1_are_drawn_from_the_results(repo):
    text = ("TNMT reaches <!-- value: results/medium/results.json task=eng-ger,system=TNMT,variant=/bleu .2f -->"
            "9.99<!-- /value --> and is <!-- value: results/benchmarks/speed.json ratio .2f -->1<!-- /value -->x.\n\n"
            "<!-- generated: table1 results/medium -->\nold\n<!-- end generated -->\n")
    assert refreshed(text, repo / "README.md", repo) == (
        "TNMT reaches <!-- value: results/medium/results.json task=eng-ger,system=TNMT,variant=/bleu .2f -->"
        "15.89<!-- /value --> and is <!-- value: results/benchmarks/speed.json ratio .2f -->1.53<!-- /value -->x.\n\n"
        "<!-- generated: table1 results/medium -->\n"
        "| task | PBMT | TNMT |\n|---|---:|---:|\n| ger-eng | **21.94** | 17.32 |\n| eng-ger | **16.89** | 15.89 |\n"
        "<!-- end generated -->\n")


def test_a_table_of_json_rows_an_included_report_and_the_provenance(repo):
    text = ("<!-- generated: table results/benchmarks/speed.json rows system=name words_a_minute=wpm:,.0f -->\n"
            "<!-- end generated -->\n<!-- generated: include results/medium/regime.md -->\n<!-- end generated -->\n"
            "<!-- generated: provenance results/medium -->\n<!-- end generated -->\n")
    out = refreshed(text, repo / "x.md", repo)
    assert "| system | words a minute |\n|---|---:|\n| a | 12,346 |\n| b | 999 |\n" in out
    assert "| task | holds |\n|---|---:|\n| ger-eng | no |\n<!-- end generated -->" in out  # no heading, no footer
    assert "| eng-ger | abc | 1.0 | AMD EPYC (2 cores, AVX2) | 2 | 2026-12-07 |" in out


@pytest.mark.parametrize("text, message", [
    ("a\n<!-- generated: table9 results/medium -->\n<!-- end generated -->\n", "x.md:2: table9 results/medium: "
                                                                             "unknown generator 'table9'"),
    ("<!-- value: results/medium/results.json task=ger-eng,system=TNMT/bleu -->1<!-- /value -->",
     "matches 2 elements, not 1"),
    ("<!-- value: results/none.json a -->1<!-- /value -->", "x.md:1: results/none.json a: no file results/none.json"),
    ("\n\n<!-- generated: table1 results/medium -->\nno end\n", "x.md:3: <!-- generated: ... without its closing"),
    ("<!-- value: results/benchmarks/speed.json rows/0/name .2f -->1<!-- /value -->", "cannot format 'a'"),
])
def test_a_region_that_cannot_be_generated_names_the_file_and_line(repo, text, message):
    with pytest.raises(DocRegionError, match=message.replace("(", r"\(").replace(".", r"\.").replace("'", "'")):
        refreshed(text, repo.joinpath("x.md").relative_to(repo), repo)


def test_a_stale_region_is_found_and_rewritten(repo, capsys):
    (repo / "README.md").write_text("x\n<!-- generated: include results/medium/regime.md -->\nold\n"
                                    "<!-- end generated -->\n")
    (repo / "docs" / "page.md").write_text("nothing generated here, 1.5x\n")
    assert stale_files(repo) == ["README.md:3"]
    assert main(["--repo", str(repo), "--check"]) == 1
    assert "stale generated region: README.md:3" in capsys.readouterr().err
    assert main(["--repo", str(repo)]) == 0
    assert stale_files(repo) == [] and "| ger-eng | no |" in (repo / "README.md").read_text()
    (repo / "results" / "medium" / "regime.md").write_text("## R\n\n| task | holds |\n|---|---:|\n| ger-eng | yes |\n")
    assert stale_files(repo) == ["README.md:5"]


def test_lookup_walks_keys_indexes_and_filters():
    data = {"a": [{"k": "x", "v": 1}, {"k": "y", "v": 2, "w": ""}]}
    assert lookup(data, "a/1/v") == 2 and lookup(data, "a/k=x/v") == 1 and lookup(data, "a/k=y,w=/v") == 2
    with pytest.raises(DocSourceError, match="no key 'b'"):
        lookup(data, "b")


def test_the_papers_rows_beside_ours_with_the_two_differences(repo):
    (repo / "paper.json").write_text(json.dumps({"table1": {"ger-eng": {
        "PBMT": 28.9, "FNMT": 32.8, "LNMT": 33.7, "TNMT": 35.2, "LTNMT": 35.4}}}))
    out = refreshed("<!-- generated: paper results/medium paper.json -->\n<!-- end generated -->\n", repo / "x.md", repo)
    assert "| ger-eng | the paper | 28.90 | 32.80 | 33.70 | 35.20 | 35.40 | +6.30 | +0.20 |" in out
    assert "| ger-eng | ours | 21.94 | - | - | 17.32 | - | -4.62 | - |" in out
    assert "| eng-ger | the paper | - | - | - | - | - | - | - |" in out  # a task the paper lacks: empty, not an error


def test_a_table_of_an_objects_keys_reads_other_parts_of_the_file_by_key(repo):
    (repo / "bench.json").write_text(json.dumps({
        "wpm": {"FNMT": 49177.7, "LNMT free": 23731.0},
        "seconds": {"FNMT": {"total": 7.856}, "LNMT free": {"posteriors + L": 1.467, "total": 16.28}}}))
    spec = ("table bench.json wpm system=@key L=/seconds/{key}/posteriors_+_L:.2f total=/seconds/{key}/total:.1f "
            "words_a_minute=/wpm/{key}:,.0f")
    out = refreshed(f"<!-- generated: {spec} -->\n<!-- end generated -->\n", repo / "x.md", repo)
    assert "| system | L | total | words a minute |\n|---|---:|---:|---:|\n| FNMT |  | 7.9 | 49,178 |\n" \
           "| LNMT free | 1.47 | 16.3 | 23,731 |\n" in out


def test_a_table_of_the_matching_elements_of_a_list_and_one_of_files(repo):
    (repo / "decode.json").write_text(json.dumps({"results": [
        {"engine": "compiled", "stack": 200, "wpm": 57648.2}, {"engine": "python", "stack": 200, "wpm": 7153.9},
        {"engine": "compiled", "stack": 50, "wpm": 113979.0}, {"engine": "python", "stack": 50, "wpm": 37939.0}]}))
    spec = ("table decode.json results/engine=compiled stack=stack compiled=wpm:,.0f "
            "Python=/results/engine=python,stack={stack}/wpm:,.0f")
    out = refreshed(f"<!-- generated: {spec} -->\n<!-- end generated -->\n", repo / "x.md", repo)
    assert "| 200 | 57,648 | 7,154 |\n| 50 | 113,979 | 37,939 |\n" in out
    for task, bleu in (("b-task", 2.0), ("a-task", 1.0)):
        (repo / f"run_{task}.json").write_text(json.dumps({"task": task, "quality": {"bleu": bleu}}))
    out = refreshed("<!-- generated: table run_*.json . task=task file=@key BLEU=quality/bleu:.1f -->\n"
                    "<!-- end generated -->\n", repo / "x.md", repo)
    assert "| a-task | run_a-task | 1.0 |\n| b-task | run_b-task | 2.0 |\n" in out


def test_learning_curves_side_by_side_from_a_json_a_metrics_csv_and_a_runs_report(repo):
    (repo / "a.json").write_text(json.dumps({"curve": [{"update": 500, "minutes": 3.0, "valid_bleu": 0.5,
                                                        "valid_loss": 6.5}, {"update": 1000, "minutes": 6.04,
                                                        "valid_bleu": 1.234, "valid_loss": 5.7631}]}))
    (repo / "b_metrics.csv").write_text("kind,update,elapsed_s,valid_loss,valid_bleu\ntrain,10,1.0,,\n"
                                        "valid,1000,30.0,5.1,2.5\nvalid,1500,45.0,4.9,3.0\n")
    inputs = json.loads((repo / "results/medium/report_inputs.json").read_text())
    inputs["curves"] = {"ger-eng TNMT transformer seed 1": [{"update": 1500, "minutes": 9.0, "valid_bleu": 4.0,
                                                             "valid_loss": 4.0}]}
    (repo / "results/medium/report_inputs.json").write_text(json.dumps(inputs))
    spec = ("curves every:500 a.json=CPU b_metrics.csv=GPU,_again "
            "results/medium/report_inputs.json#ger-eng_TNMT_transformer_seed_1=the_run")
    out = refreshed(f"<!-- generated: {spec} -->\n<!-- end generated -->\n", repo / "x.md", repo)
    assert ("| update | CPU | GPU, again | the run |\n|---|---:|---:|---:|\n| 500 | 0.50 / 6.500 (3.0) | - | - |\n"
            "| 1000 | 1.23 / 5.763 (6.0) | 2.50 / 5.100 (0.5) | - |\n"
            "| 1500 | - | 3.00 / 4.900 (0.8) | 4.00 / 4.000 (9.0) |\n") in out


def test_rows_of_several_files_at_one_path_and_the_first_present_of_two_paths(repo):
    (repo / "p1.json").write_text(json.dumps({"date": "2026-12-01", "results": {"fp32": {"ms": 4.161}}}))
    (repo / "p2.json").write_text(json.dumps({"machine": {"date": "2026-12-03"}, "results": {"fp32": {"ms": 15.74},
                                                                                           "int8": {"ms": 9.26}}}))
    out = refreshed("<!-- generated: table p1.json,p2.json results run=@key ms=ms:.1f -->\n<!-- end generated -->\n"
                    "<!-- generated: table p1.json,p2.json . run=@key date=date|machine/date -->\n"
                    "<!-- end generated -->\n", repo / "x.md", repo)
    assert "| p1 fp32 | 4.2 |\n| p2 fp32 | 15.7 |\n| p2 int8 | 9.3 |\n" in out
    assert "| p1 | 2026-12-01 |\n| p2 | 2026-12-03 |\n" in out


def test_the_forecasts_checked_per_cpu_class(repo):
    (repo / "results/benchmarks/run_estimate_tiny_x.json").write_text(json.dumps({
        "command": "python benchmarks/run_estimate.py --profile tiny --tasks all", "workers": 2, "partial": False,
        "actual_wall_minutes": 14.6, "stages": [{"all_built": True, "forecast_minutes": 10.0, "actual_minutes": 12.0}],
        "forecast": {"wall_minutes": 15.26, "task_minutes": {"ger-eng": 3.0, "eng-ger": 3.0}, "machine": {
            "cpu": "AMD EPYC, 2 cores, AVX2", "gflops_1_thread": 77.9, "gflops_2_threads": 136.6,
            "training": [{"threads": 1, "seconds_per_update": 0.8446}]}}}))
    out = refreshed("<!-- generated: estimates results/benchmarks/run_estimate_*.json -->\n<!-- end generated -->\n",
                    repo / "x.md", repo)
    assert "| tiny | ger-eng, eng-ger | AMD EPYC, 2 cores, AVX2 | 77.90 | 136.60 | 0.84 | 2 | 15 | 15 | 10 / 12 |" in out
