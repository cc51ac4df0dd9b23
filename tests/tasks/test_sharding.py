"""Decoding a split in shards (the batch jobs of tasks/cluster.py) and merging them gives the unsharded artifact."""
import json

import pytest
from luigi.execution_summary import LuigiStatusCode

from pipeline.io import atomic_dir, read_lines, write_json
from tasks import DecodePBMT
from tasks.base import shard_bounds
from tasks.decode import DecodeLNMT
from tests.conftest import write_deen_folder
from tests.tasks.helpers import build, shared_params
from tests.tasks.test_decode_tasks import untuned_configs


@pytest.mark.parametrize("total, shards", [(10, 3), (3, 3), (2, 3), (0, 2), (7, 1)])
def test_shard_bounds_cover_the_items_in_order(total, shards):
    bounds = [shard_bounds(total, k, shards) for k in range(shards)]
    assert [i for first, last in bounds for i in range(first, last)] == list(range(total))
    assert max(last - first for first, last in bounds) - min(last - first for first, last in bounds) <= 1
    with pytest.raises(ValueError):
        shard_bounds(total, shards, shards)


def sharded(task, folder, shards):
    """What the batch jobs and the worker do: each part built atomically (with part.json), then merged."""
    parts = []
    for k in range(shards):
        part = folder / f"{k:03d}"
        with atomic_dir(part) as tmp:
            write_json(tmp / "part.json", {"shard": k, "shards": shards, "stats": task.build_shard(tmp, k, shards)})
        parts.append(part)
    out = folder / "merged"
    out.mkdir()
    return task.merge_shards(parts, out), out


def test_pbmt_and_lnmt_decoding_in_three_shards_equal_the_whole(tmp_path):
    data = tmp_path / "data"
    write_deen_folder(data, eval_sentences=11)
    params = shared_params(tmp_path, data, config_dir=untuned_configs(tmp_path))
    pbmt, lnmt = DecodePBMT(split="newstest2016", **params), DecodeLNMT(split="newstest2016", **params)
    assert build(pbmt, lnmt).status == LuigiStatusCode.SUCCESS

    stats, out = sharded(pbmt, tmp_path / "pbmt-parts", 3)
    whole = pbmt.artifact_dir()
    for name in ("words.en", "translation.en", "nbest.txt"):
        assert list(read_lines(out / name)) == list(read_lines(whole / name)), name
    names = [sorted(p.name for p in (folder / "lattices").iterdir()) for folder in (out, whole)]
    assert names[0] == names[1]
    for lattice in (whole / "lattices").iterdir():  # each lattice under its index in the whole split
        assert (out / "lattices" / lattice.name).read_bytes() == lattice.read_bytes(), lattice.name
    expected = pbmt.signature()["stats"]
    assert {k: stats[k] for k in ("sentences", "source_words", "lattice")} == \
        {k: expected[k] for k in ("sentences", "source_words", "lattice")}
    assert json.loads((out / "lattices.json").read_text()) == json.loads((whole / "lattices.json").read_text())

    stats, out = sharded(lnmt, tmp_path / "lnmt-parts", 3)  # each shard's lines use their own sentences' L
    for name in ("translation.en", "bpe.en"):
        assert list(read_lines(out / name)) == list(read_lines(lnmt.artifact_dir() / name)), name
    expected = lnmt.signature()["stats"]
    assert {k: stats[k] for k in ("sentences", "source_words", "target_words")} == \
        {k: expected[k] for k in ("sentences", "source_words", "target_words")}
