"""What the docs' generated regions draw from (pipeline/report/doc_regions.py): a run's folder or a benchmark's JSON.

Block generators (`<!-- generated: NAME ARGS -->`):

- `table1 DIR [bleu|chrf2]`: Table 1 of the run folder DIR, one row per task and one column per system (the
  README's layout), the best score of each task in bold;
- `provenance DIR`: per task, the commit, version, machine, workers and date of the run behind its cells;
- `paper DIR REPORTED`: per task, the paper's Table 1 row (REPORTED: a JSON of the paper's reported scores) above
  ours from the run folder DIR, with the two differences the paper's claim rests on (TNMT - PBMT, LTNMT - TNMT);
- `estimates GLOB`: one row per forecast checked against a run (benchmarks/run_estimate.py's JSON files matching
  GLOB): the machine, its measured GFLOP/s and seconds per Transformer update, the forecast and the actual minutes;
- `curves UPDATES SOURCE=Label...`: learning curves side by side, one row per update of UPDATES (`1000,2000`, or
  `every:1000`) that some curve has, a cell "greedy BLEU / loss (minutes)"; a SOURCE is a benchmark's JSON with a
  `curve`, a training run's `_metrics.csv`, or a run folder's curve
  (`results/medium/report_inputs.json#eng-jpn_TNMT_transformer_seed_1`);
- `include FILE`: a report file (a run's `regime.md`, say) without its heading and its "Produced by" list;
- `table FILE PATH COLUMN...`: one row per element of the JSON list (or per key of the object) at PATH in FILE, or
  per element of a list that matches PATH's last segment when it is a filter, or per file when FILE is a glob or a
  comma-separated list of files (PATH `.`; another PATH: the rows at PATH of each file, keyed "file key"); a
  COLUMN is `Header=path[:format]` (underscores in the header are spaces; path as for a value, within the
  element; `/path` from the file's root, where `{key}` is the row's key and `{field}` the element's field; `@key`
  the key, or the file's name without `.json`; `a|b` the first of two paths that is there; a path that is not
  there gives an empty cell).

An inline value (`<!-- value: FILE PATH [FORMAT] -->`) is one field of a JSON file. PATH's segments, separated by
`/`, are a key, a list index, or a filter `key=value,...` that picks the one element of a list whose fields match
(an empty value matches ""; `task=eng-ger,system=TNMT,variant=`). FORMAT is a Python format spec (`.2f`, `+.1f`,
`,.0f`); a value without one is written as it is.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pipeline.report import render


class DocSourceError(ValueError):
    """A generator or value that its source cannot give."""


def _load(repo: Path, name: str) -> Any:
    path = repo / name
    if not path.is_file():
        raise DocSourceError(f"no file {name}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DocSourceError(f"{name} is not JSON: {error}") from None


def _step(node: Any, segment: str) -> Any:
    if "=" in segment:
        if not isinstance(node, list):
            raise DocSourceError(f"filter {segment!r} applied to a {type(node).__name__}, not a list")
        wanted = dict(pair.split("=", 1) for pair in segment.split(","))
        found = [item for item in node if isinstance(item, dict)
                 and all(str(item.get(key, "")) == value for key, value in wanted.items())]
        if len(found) != 1:
            raise DocSourceError(f"filter {segment!r} matches {len(found)} elements, not 1")
        return found[0]
    if isinstance(node, list):
        try:
            return node[int(segment)]
        except (ValueError, IndexError):
            raise DocSourceError(f"no element {segment!r} in a list of {len(node)}") from None
    if isinstance(node, dict) and segment not in node and segment.replace("_", " ") in node:
        segment = segment.replace("_", " ")  # a key with spaces, written with underscores
    if not isinstance(node, dict) or segment not in node:
        raise DocSourceError(f"no key {segment!r}")
    return node[segment]


def lookup(data: Any, path: str) -> Any:
    """The element of `data` at PATH (see the module docstring; `_` in a key stands for a space where needed)."""
    node = data
    for segment in path.split("/"):
        node = _step(node, segment)
    return node


def render_value(spec: str, repo: Path) -> str:
    parts = spec.split()
    if len(parts) not in (2, 3):
        raise DocSourceError("a value needs FILE PATH [FORMAT]")
    value = lookup(_load(repo, parts[0]), parts[1])
    if len(parts) == 2:
        return str(value)
    try:
        return format(value, parts[2])
    except (ValueError, TypeError) as error:
        raise DocSourceError(f"cannot format {value!r} with {parts[2]!r}: {error}") from None


def _table1(repo: Path, folder: str, metric: str = "bleu") -> str:
    inputs = _load(repo, f"{folder}/report_inputs.json")
    records = [r for r in _load(repo, f"{folder}/results.json") if not r.get("variant")]
    scores = {(r["task"], r["system"]): r.get(metric) for r in records}
    systems = [s for s in inputs["systems"] if any((t, s) in scores for t in inputs["tasks"])]
    rows = []
    for task in inputs["tasks"]:
        cells = [scores.get((task, system)) for system in systems]
        best = max((c for c in cells if c is not None), default=None)
        rows.append([task, *(None if c is None else (f"**{c:.2f}**" if c == best else f"{c:.2f}") for c in cells)])
    return render.markdown(["task", *systems], rows)


def _provenance(repo: Path, folder: str) -> str:
    inputs = _load(repo, f"{folder}/report_inputs.json")
    rows = []
    for task in inputs["tasks"]:
        p = inputs.get("provenance", {}).get(task)
        if p is None:
            raise DocSourceError(f"{folder}/report_inputs.json has no provenance for {task}")
        machine = f"{p.get('cpu', '?')} ({p.get('cores', '?')} cores, {p.get('cpu_variant', '?')})"
        stages = inputs.get("stage_times", {}).get(task, {}).get("stages", {})
        work = f"{sum(stages.values()) / 60:.0f}" if stages else None
        rows.append([task, p.get("commit", "?"), p.get("version", "?"), machine, p.get("workers"), p.get("date"),
                     work])
    return render.markdown(["task", "commit", "version", "machine", "workers", "date",
                            "minutes of work (its stages summed)"], rows)


PAPER_SYSTEMS = ("PBMT", "FNMT", "LNMT", "TNMT", "LTNMT")


def _paper(repo: Path, folder: str, reported: str) -> str:
    paper = _load(repo, reported)["table1"]
    inputs = _load(repo, f"{folder}/report_inputs.json")
    ours = {(r["task"], r["system"]): r["bleu"] for r in _load(repo, f"{folder}/results.json") if not r.get("variant")}
    rows = []
    for task in inputs["tasks"]:
        for source, scores in (("the paper", paper.get(task, {})),
                               ("ours", {s: ours.get((task, s)) for s in PAPER_SYSTEMS})):
            cells = [scores.get(s) for s in PAPER_SYSTEMS]
            gaps = [a - b if a is not None and b is not None else None
                    for a, b in ((scores.get("TNMT"), scores.get("PBMT")), (scores.get("LTNMT"), scores.get("TNMT")))]
            rows.append([task, source, *cells, *(None if g is None else f"{g:+.2f}" for g in gaps)])
    return render.markdown(["task", "", *PAPER_SYSTEMS, "TNMT - PBMT", "LTNMT - TNMT"], rows)


def _estimates(repo: Path, pattern: str) -> str:
    rows = []
    for path in sorted(repo.glob(pattern)):
        run = _load(repo, path.relative_to(repo).as_posix())
        forecast, machine = run["forecast"], run["forecast"]["machine"]
        update = next((t["seconds_per_update"] for t in machine.get("training", []) if t["threads"] == 1), None)
        built = [s for s in run.get("stages", []) if s.get("all_built")]
        stages = (f"{sum(s['forecast_minutes'] for s in built):.0f} / {sum(s['actual_minutes'] for s in built):.0f}"
                  if built else None)
        profile = re.search(r"--profile[ =](\S+)", run.get("command", ""))
        rows.append([profile[1] if profile else run.get("profile"), ", ".join(forecast.get("task_minutes", {})),
                     machine["cpu"], machine.get("gflops_1_thread"),
                     next((v for k, v in machine.items() if k.startswith("gflops_") and k != "gflops_1_thread"), None),
                     None if update is None else f"{update:.2f}", run["workers"],
                     f"{forecast['wall_minutes']:.0f}",
                     "partial run" if run.get("partial") else f"{run['actual_wall_minutes']:.0f}", stages])
    if not rows:
        raise DocSourceError(f"no file matches {pattern}")
    return render.markdown(["profile", "tasks", "machine", "GFLOP/s, 1 thread", "GFLOP/s, all cores",
                            "s per Transformer update (1000 tokens, 1 thread)", "workers", "forecast, min",
                            "actual, min", "stages built: forecast / actual, min"], rows)


def _curve(repo: Path, source: str) -> dict[int, tuple[float, float, float]]:
    """{update: (greedy BLEU, loss, minutes)} of one learning curve (see `curves`)."""
    name, _, label = source.partition("#")
    if name.endswith(".csv"):
        import csv

        path = repo / name
        if not path.is_file():
            raise DocSourceError(f"no file {name}")
        with path.open(encoding="utf-8") as f:
            return {int(r["update"]): (float(r["valid_bleu"]), float(r["valid_loss"]), float(r["elapsed_s"]) / 60)
                    for r in csv.DictReader(f) if r["kind"] == "valid"}
    data = _load(repo, name)
    points = lookup(data, "curves/" + label) if label else data.get("curve")
    if points is None:
        raise DocSourceError(f"{name} holds no curve")
    return {int(p["update"]): (p["valid_bleu"], p["valid_loss"], p["minutes"]) for p in points}


def _curves(repo: Path, updates: str, *sources: str) -> str:
    if not sources or any("=" not in s for s in sources):
        raise DocSourceError("curves needs UPDATES and SOURCE=Label columns")
    curves = [_curve(repo, s.rsplit("=", 1)[0]) for s in sources]
    seen = sorted(set().union(*curves))
    if updates.startswith("every:"):
        step = int(updates.split(":", 1)[1])
        rows = [u for u in seen if u % step == 0]
    else:
        rows = [int(u) for u in updates.split(",") if int(u) in seen]
    cells = [[u, *(f"{c[u][0]:.2f} / {c[u][1]:.3f} ({c[u][2]:.1f})" if u in c else None for c in curves)]
             for u in rows]
    return render.markdown(["update", *(s.rsplit("=", 1)[1].replace("_", " ") for s in sources)], cells)


def _include(repo: Path, name: str) -> str:
    path = repo / name
    if not path.is_file():
        raise DocSourceError(f"no file {name}")
    lines = path.read_text(encoding="utf-8").splitlines()
    if lines and lines[0].startswith("#"):
        lines = lines[1:]
    if "Produced by:" in lines:
        lines = lines[:lines.index("Produced by:")]
    return "\n".join(lines).strip("\n") + "\n"


def _cell(element: Any, column: str, root: Any = None, key: str = "") -> tuple[str, str]:
    """One cell: `path` within the row's element; `/path` from the file's root, `{key}` standing for the row's key
    (rows of a JSON object); `@key` the row's key itself. A path that is not there gives an empty cell."""
    if "=" not in column:
        raise DocSourceError(f"column {column!r} is not Header=path[:format]")
    header, source = column.split("=", 1)
    path, _, spec = source.partition(":")
    if path == "@key":
        return header.replace("_", " "), key
    value = None
    for choice in path.split("|"):  # alternatives, the first that is there
        try:
            if choice.startswith("/"):
                fields = {"key": key.replace(" ", "_"), **(element if isinstance(element, dict) else {})}
                value = lookup(root, re.sub(r"\{(\w+)\}", lambda m: str(fields.get(m[1], m[0])), choice[1:]))
            else:
                value = lookup(element, choice)
            break
        except DocSourceError as error:
            if "no key" not in str(error):
                raise
    if value is None:
        return header.replace("_", " "), ""
    try:
        return header.replace("_", " "), format(value, spec) if spec else str(value)
    except (ValueError, TypeError) as error:
        raise DocSourceError(f"cannot format {value!r} with {spec!r}: {error}") from None


def _rows(repo: Path, name: str, path: str) -> tuple[Any, list[tuple[str, Any]]]:
    """The file's root and the (key, element) rows: a glob's files (PATH "."), the elements of a list or an object
    at PATH, or those of a list that match a last filter segment."""
    if "*" in name or "," in name:
        files = sorted(repo.glob(name)) if "*" in name else [repo / n for n in name.split(",")]
        if not files:
            raise DocSourceError(f"no file matches {name}")
        if path == ".":
            return None, [(f.stem, _load(repo, f.relative_to(repo).as_posix())) for f in files]
        rows = []  # each file's rows at PATH, keyed "file key"
        for f in files:
            for key, element in _rows(repo, f.relative_to(repo).as_posix(), path)[1]:
                rows.append((f"{f.stem} {key}".strip(), element))
        return None, rows
    root = _load(repo, name)
    *parents, last = path.split("/")
    if "=" in last:  # every element that matches, not exactly one
        wanted = dict(pair.split("=", 1) for pair in last.split(","))
        found = lookup(root, "/".join(parents)) if parents else root
        return root, [("", e) for e in found if isinstance(e, dict)
                      and all(str(e.get(k, "")) == v for k, v in wanted.items())]
    elements = lookup(root, path)
    if not isinstance(elements, (list, dict)):
        raise DocSourceError(f"{path} in {name} is not a list or an object")
    return root, list(elements.items()) if isinstance(elements, dict) else [("", e) for e in elements]


def _table(repo: Path, name: str, path: str, *columns: str) -> str:
    if not columns:
        raise DocSourceError("no columns given")
    root, keyed = _rows(repo, name, path)
    rows = [[_cell(element, column, root, str(key)) for column in columns] for key, element in keyed]
    header = [h for h, _ in rows[0]] if rows else [c.split("=", 1)[0].replace("_", " ") for c in columns]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    lines += ["| " + " | ".join(text for _, text in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


BLOCKS = {"table1": _table1, "provenance": _provenance, "paper": _paper, "estimates": _estimates, "curves": _curves,
          "include": _include, "table": _table}


def render_block(spec: str, repo: Path) -> str:
    name, *args = spec.split()
    if name not in BLOCKS:
        raise DocSourceError(f"unknown generator {name!r} (known: {', '.join(sorted(BLOCKS))})")
    try:
        text = BLOCKS[name](repo, *args)
    except TypeError:
        raise DocSourceError(f"wrong arguments for {name}: {args}") from None
    except KeyError as error:
        raise DocSourceError(f"missing field {error}") from None
    return text if text.endswith("\n") else text + "\n"
