import csv

from pipeline.nmt.metrics import COLUMNS, MetricsLog


def read(path):
    with path.open() as f:
        return list(csv.DictReader(f))


def test_a_resumed_log_drops_the_rows_after_its_checkpoint_and_a_torn_line(tmp_path):
    path = tmp_path / "metrics.csv"
    log = MetricsLog(path)
    for update in (10, 20, 30):
        log.write("train", update, train_loss=1.0 / update, lr=0.001)
    log.write("valid", 20, valid_bleu=12.5)
    log.close()
    with path.open("a") as f:
        f.write("train,40,0,1.5,0.0")  # a line cut by a kill
    MetricsLog(path, resume_update=20).close()
    rows = read(path)
    assert list(rows[0]) == list(COLUMNS)
    assert [(r["kind"], r["update"]) for r in rows] == [("train", "10"), ("train", "20"), ("valid", "20")]
    assert rows[2]["valid_bleu"] == "12.5" and rows[0]["train_loss"] == "0.1"
