"""ExportSystem and `lmbr translate --system`: every system of Table 1 as a folder that translates raw text exactly as
the pipeline translated its split, and refuses a folder that is not as exported."""
from __future__ import annotations

import shutil

import pytest

from pipeline.cli.lmbr import main as lmbr_main
from pipeline.deploy.system import KINDS, load_system
from pipeline.deploy.translator import Translator
from pipeline.errors import DataError
from pipeline.io import read_lines


@pytest.mark.parametrize("name", list(KINDS))
def test_an_exported_system_translates_raw_text_as_the_pipeline_did(exported_systems, name):
    exports, raw = exported_systems
    task = exports[name]
    expected = list(read_lines(task.decoding().artifact_dir() / "translation.en"))
    if name not in ("FNMT", "TNMT"):  # (the test's NMT models, trained for seconds, say nothing without L or lattice)
        assert sum(1 for line in expected if line) >= len(expected) - 1, expected
    translator = Translator(load_system(task.folder()), batch_lines=4)  # batches unlike the pipeline's
    assert list(translator.translate(raw)) == expected
    manifest = load_system(task.folder()).manifest
    if KINDS[name].lmbr:
        chosen = task.decoding().chosen()
        assert manifest["settings"]["lmbr"]["nmt_lambda"] == chosen["nmt_lambda"]
        assert manifest["settings"]["lmbr"]["theta"]["p"] == chosen["p"]
    if KINDS[name].constrained:
        assert manifest["settings"]["lmbr"]["lattice_weight"] == task.decoding().lattice_weight()
    if KINDS[name].models:  # FNMT and TNMT with the length penalty the tuning chose, the hybrids with the profile's
        decode = manifest["settings"]["decode"]
        assert decode["length_penalty"] == task.decoding().length_penalty() and "grid_length_penalty" not in decode
        assert task.decoding().tunes_length() == (name in ("FNMT", "TNMT"))
    assert translator.timings["pbmt"] > 0 if KINDS[name].needs_lattices else translator.timings["pbmt"] == 0


def test_the_command_translates_a_file_and_keeps_empty_lines(exported_systems, tmp_path, capsys):
    exports, raw = exported_systems
    folder = exports["LNMT"].folder()
    source = tmp_path / "in.de"
    source.write_text("\n".join([raw[0], "", raw[1]]) + "\n", encoding="utf-8")
    out, timings = tmp_path / "out.en", tmp_path / "timings.json"
    assert lmbr_main(["translate", "--system", str(folder), "-i", str(source), "-o", str(out),
                      "--timings", str(timings), "--batch-lines", "2"]) == 0
    expected = list(read_lines(exports["LNMT"].decoding().artifact_dir() / "translation.en"))
    assert out.read_text(encoding="utf-8").split("\n")[:3] == [expected[0], "", expected[1]]
    assert '"posteriors"' in timings.read_text() and "LNMT: 3 lines" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["LNMT", "TNMT-lat"])
def test_the_command_decodes_in_processes_in_batches_and_in_order(exported_systems, tmp_path, name):
    exports, raw = exported_systems
    source, out, timings = tmp_path / "in.de", tmp_path / "out.en", tmp_path / "timings.json"
    lines = raw + [""] + raw[:3]  # more batches than are submitted ahead, so that batches are given back in turn
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert lmbr_main(["translate", "--system", str(exports[name].folder()), "-i", str(source), "-o", str(out),
                      "--timings", str(timings), "--batch-lines", "2", "--decode-processes", "2"]) == 0
    expected = dict(zip(raw, read_lines(exports[name].decoding().artifact_dir() / "translation.en")))
    assert out.read_text(encoding="utf-8").split("\n")[:len(lines)] == [expected.get(line, "") for line in lines]
    assert '"decode_processes": 2' in timings.read_text()


def test_a_corrupt_missing_or_foreign_file_is_an_error_that_names_it(exported_systems, tmp_path):
    exports, _ = exported_systems
    folder = tmp_path / "LTNMT"
    shutil.copytree(exports["LTNMT"].folder(), folder)
    load_system(folder)
    model = folder / "nmt" / "model-1.pt"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 1
    model.write_bytes(bytes(data))
    with pytest.raises(DataError, match=r"nmt/model-1\.pt: corrupt or altered"):
        load_system(folder)
    model.unlink()
    with pytest.raises(DataError, match=r"nmt/model-1\.pt: missing"):
        load_system(folder)
    shutil.copyfile(exports["LTNMT"].folder() / "nmt" / "model-1.pt", model)
    (folder / "pbmt" / "notes.txt").write_text("x")
    with pytest.raises(DataError, match=r"pbmt/notes\.txt: not part of the exported system"):
        load_system(folder)
    (folder / "pbmt" / "notes.txt").unlink()
    (folder / "manifest.json").unlink()
    with pytest.raises(DataError, match=r"manifest\.json: missing"):
        load_system(folder)
    assert lmbr_main(["translate", "--system", str(folder), "-i", str(tmp_path / "none")]) == 2


def test_an_anchored_lnmt_translates_raw_text_as_the_pipeline_did_and_serves_the_same(tmp_path):
    """Anchored search offline, in the serving pool and in its decoding processes: each line's free search and
    lattice copy may decode in different batches (pool of 3) or processes, and the better answers, as offline."""
    from luigi.execution_summary import LuigiStatusCode

    from pipeline.deploy.decoding_service import DecodingService
    from tasks.data import TokenizeSplit
    from tasks.export import ExportSystem
    from tests.conftest import write_deen_folder
    from tests.tasks.helpers import build, shared_params
    from tests.tasks.test_anchored_search import edit_profile
    from tests.tasks.test_decode_tasks import deterministic_configs

    data = write_deen_folder(tmp_path / "data", eval_sentences=9)
    configs = deterministic_configs(tmp_path)
    edit_profile(configs, tune="false", gains='"bounded"', search='"anchored"', nmt_lambda="0.5")
    params = shared_params(tmp_path, data, config_dir=configs)
    export = ExportSystem(system="LNMT", split="newstest2016", **params)
    assert build(export).status == LuigiStatusCode.SUCCESS
    system = load_system(export.folder())
    assert system.settings.lmbr["search"] == "anchored" and system.settings.lmbr["anchor_nbest"] == 0
    raw = list(read_lines(TokenizeSplit(split="newstest2016", **params).artifact_dir() / "raw.de.gz"))
    translator = Translator(system, batch_lines=4)
    expected = list(read_lines(export.decoding().artifact_dir() / "translation.en"))
    assert translator.anchored() and list(translator.translate(raw)) == expected
    for decoders in (0, 2):
        service = DecodingService(Translator(system), pool_sentences=3, max_queue=1000, decode_processes=decoders)
        futures = [service.submit(raw[k:k + 2]) for k in range(0, len(raw), 2)]
        served = [text for future in futures for text in future.result(timeout=300)]
        service.close()
        assert served == expected, decoders


def test_the_accelerated_fnmt_exports_and_translates_with_the_shrunken_ensemble(exported_systems):
    """Table 2's accelerated FNMT decodes with the ensemble shrunk into one model (ShrinkEnsemble): the export holds
    that model alone and translates as the pipeline did."""
    import torch
    from luigi.execution_summary import LuigiStatusCode

    from pipeline.nmt.checkpoint import load_checkpoint
    from tasks.export import ExportSystem
    from tests.tasks.helpers import build

    exports, raw = exported_systems
    task = exports["FNMT"].clone(ExportSystem, variant="accelerated")
    assert build(task).status == LuigiStatusCode.SUCCESS
    shrunken = task.requires()["nmt"]
    assert type(shrunken).__name__ == "ShrinkEnsemble"
    models = sorted((task.folder() / "nmt").glob("model-*.pt"))
    assert [p.name for p in models] == ["model-1.pt"]
    exported, built = load_checkpoint(models[0]), load_checkpoint(shrunken.artifact_dir() / "model.pt")
    assert exported.config == built.config and not exported.config.tied_output
    assert all(torch.equal(exported.model[k], built.model[k]) for k in built.model)
    expected = list(read_lines(task.decoding().artifact_dir() / "translation.en"))
    assert list(Translator(load_system(task.folder()), batch_lines=4).translate(raw)) == expected
