"""Table 1 (BLEU of each system on each task), the data/LM summary, Figure 1 (time breakdown) and results.json."""
from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from pipeline.io import atomic_path, write_json, write_text
from pipeline.report import render
from pipeline.report.divergence import divergence_table
from pipeline.report.figures import breakdown_table, plot_time_breakdown, time_breakdown
from pipeline.report.finding import finding_table, regime_table


@dataclass(frozen=True)
class Record:
    """One BLEU score of results.json."""

    task: str
    system: str
    eval_set: str
    bleu: float
    precisions: list[float]
    signature: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    source_words: int | None = None
    variant: str = ""  # a Table 2 variant (research, accelerated); "" for Table 1
    chrf2: float | None = None  # corpus chrF2 (sacrebleu), beside BLEU
    fallback_lines: int = 0  # lattice systems: lines decoded without their lattice (it accepts nothing in the limit)
    run: dict[str, Any] = field(default_factory=dict)  # the build that scored it (pipeline/report/cell_provenance.py)


def table1(records: Sequence[Record], tasks: Sequence[str], systems: Sequence[str], metric: str = "bleu"
           ) -> tuple[list[str], list[list]]:
    """Rows = systems, columns = tasks (the paper's layout); a missing score is None. metric: bleu or chrf2."""
    scores = {(r.system, r.task): getattr(r, metric) for r in records if not r.variant}
    header = ["system", *tasks]
    return header, [[system, *(scores.get((system, task)) for task in tasks)] for system in systems]


def table2(records: Sequence[Record]) -> tuple[list[str], list[list]]:
    """One row per (task, system, variant): BLEU and end-to-end words per minute (phrase-based decoding, posteriors
    and L, and neural decoding for the LMBR systems; neural decoding for the others)."""
    speed = {(r["task"], r["system"], r["variant"]): r["wpm"] for r in time_breakdown(records)}
    header = ["task", "system", "variant", "BLEU", "words per minute"]
    rows = [[r.task, r.system, r.variant, r.bleu, speed.get((r.task, r.system, r.variant))] for r in records]
    return header, rows


DATA_COLUMNS = (
    ("task", "task"), ("train_file_pairs", "train pairs (file)"), ("train_selected", "selected"),
    ("train_kept", "kept"), ("removed", "removed (empty/short/long/ratio)"), ("tune_lines", "tune lines"),
    ("eval_set", "eval set"), ("eval_lines", "eval lines"), ("vocab", "BPE vocab src/tgt"),
    ("lm", "LM order (n-grams)"), ("tune_perplexity", "LM tune ppl"), ("roundtrip_bleu", "round-trip BLEU"),
)


def data_table(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list]]:
    return [title for _, title in DATA_COLUMNS], [[row.get(key) for key, _ in DATA_COLUMNS] for row in rows]


SIGNIFICANCE_COLUMNS = ("task", "system", "baseline", "metric", "score", "baseline_score", "mean", "ci", "p_value")


def significance_table(records: Sequence[dict[str, Any]]) -> tuple[list[str], list[list]]:
    """One row per (task, system, baseline, metric) of paired bootstrap resampling."""
    header = ["task", "system", "baseline", "metric", "system score", "baseline score", "resampled mean",
              "95% interval (+-)", "p-value"]
    # p-values as text with three decimals: 1000 resamples give p >= 0.001, which two decimals would show as 0.00
    return header, [[f"{r[key]:.3f}" if key == "p_value" else r[key] for key in SIGNIFICANCE_COLUMNS]
                    for r in records]


def _md_csv(stem: str, header: list[str], rows: list[list], title: str) -> dict[str, str]:
    """{stem.md, stem.csv}: one table as markdown (with its title) and as CSV."""
    return {f"{stem}.md": render.markdown(header, rows, title), f"{stem}.csv": render.csv_text(header, rows)}


def _write_texts(out: Path, files: dict[str, str]) -> list[Path]:
    """Each {name: text} written atomically into `out`; their paths, in order."""
    for name, text in files.items():
        write_text(out / name, text)
    return [out / name for name in files]


def write_report(out: Path, records: Sequence[Record], tasks: Sequence[str], systems: Sequence[str],
                 data_rows: Sequence[dict[str, Any]], profile: str, eval_set: str,
                 figures: Sequence[tuple[str, Path]] = (),
                 significance: Sequence[dict[str, Any]] = (), notes: dict[str, str] | None = None) -> list[Path]:
    """Write table1.{md,csv,tex}, table1_chrf.{md,csv} (chrF2), significance.{md,csv} (paired bootstrap of the hybrids
    against PBMT, their NMT systems and lattice MBR, and of the NMT systems against PBMT), finding.{md,csv} (the
    paper's comparisons: pipeline/report/finding.py), regime.{md,csv} (does the paper's regime hold, per task), data_summary.{md,csv,tex}, table2/figure1 when they have data, and results.json
    into `out`, and copy the measured `figures` ((name, file): Figures 2-3) there with decoding_divergence.{md,csv}
    (the sentences whose outputs differ between the figures' decoding modes); return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, source in figures:
        with atomic_path(out / name) as tmp:
            shutil.copyfile(source, tmp)
        paths.append(out / name)
    header, rows = divergence_table(figures)
    if rows:
        title = ("Decoding modes compared in Figures 2-3: sentences whose best output differs from the reference "
                 "mode's (float32 rounding of differently shaped products; each figure JSON lists them)")
        paths += _write_texts(out, _md_csv("decoding_divergence", header, rows, title))
    header, rows = table1(records, tasks, systems)
    caption = f"Cased BLEU (sacrebleu) on the {eval_set} sets, profile {profile}"
    data_header, data_rows_ = data_table(data_rows)
    data_caption = f"Data and language models, profile {profile}"
    if systems:
        table_md = render.markdown(header, rows, f"Table 1: {caption}")
        if notes:
            table_md += "\n" + "\n".join(f"- **{name}**: {text}" for name, text in notes.items()) + "\n"
        fallbacks = [f"{r.system} on {r.task}: {r.fallback_lines}" for r in records if r.fallback_lines]
        if fallbacks:
            table_md += ("\nLines decoded without their lattice (it accepts nothing, or nothing within the length "
                         "limit; each one is named in the decoding's log and signature): " + "; ".join(fallbacks) + "\n")
    else:
        table_md = (f"## Table 1: {caption}\n\nNo translation system was selected or built yet; "
                    "the data and LM summary follows.\n")
    files = {
        "table1.md": table_md + "\n" + render.markdown(data_header, data_rows_, data_caption),
        "table1.csv": render.csv_text(header, rows),
        "table1.tex": render.latex(header, rows, caption),
        "data_summary.md": render.markdown(data_header, data_rows_, data_caption),
        "data_summary.csv": render.csv_text(data_header, data_rows_),
        "data_summary.tex": render.latex(data_header, data_rows_, data_caption),
    }
    paths += _write_texts(out, files)
    if systems:
        header, rows = table1(records, tasks, systems, "chrf2")
        title = f"Table 1 in chrF2 (sacrebleu) on the {eval_set} sets, profile {profile}"
        paths += _write_texts(out, _md_csv("table1_chrf", header, rows, title))
    if significance:
        header, rows = significance_table(significance)
        title = (f"Paired bootstrap resampling (1000 resamples) of each system against its baselines on the "
                 f"{eval_set} sets, profile {profile}")
        paths += _write_texts(out, _md_csv("significance", header, rows, title))
    bleu = {(r.task, r.system): r.bleu for r in records if not r.variant}
    header, rows = finding_table(bleu, significance, tasks)
    if rows:
        title = (f"The paper's finding on the {eval_set} sets, profile {profile}: NMT vs PBMT, LMBR on the NMT, and "
                 f"the NMT's gain over the lattice (BLEU; paired bootstrap p < 0.05 is significant)")
        paths += _write_texts(out, _md_csv("finding", header, rows, title))
    header, rows = regime_table(bleu, significance, tasks)
    if rows:
        title = (f"The paper's regime on the {eval_set} sets, profile {profile}: TNMT at or above PBMT, and LMBR adding "
                 f"to it (LTNMT above TNMT, paired bootstrap p < 0.05)")
        paths += _write_texts(out, _md_csv("regime", header, rows, title))
    variants = [r for r in records if r.variant]
    if variants:
        header, rows = table2(variants)
        title = f"Table 2: research vs accelerated systems on the {eval_set} sets, profile {profile}"
        paths += _write_texts(out, {**_md_csv("table2", header, rows, title),
                                    "table2.tex": render.latex(header, rows, title)})
    breakdown = time_breakdown([r for r in records if not r.variant] + variants)
    if breakdown:
        header, rows = breakdown_table(breakdown)
        title = f"Figure 1: time breakdown (seconds) on the {eval_set} sets, profile {profile}"
        paths += _write_texts(out, _md_csv("figure1", header, rows, title))
        paths.append(plot_time_breakdown(breakdown, out / "figure1.png", title))
    write_json(out / "results.json", [asdict(r) for r in records])
    paths.append(out / "results.json")
    return paths
