"""`reproduce-table`: build (or resume) the Luigi DAG of the chosen tasks and systems, then write the tables.

Luigi re-checks what is complete, so a second run only reads the artifacts back (seconds). Defaults of the
shared parameters (profile, work folder, data folder) come from luigi.cfg's [lmbr] section.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import luigi
import luigi.configuration
from luigi.execution_summary import LuigiStatusCode

from pipeline import config as configs
from pipeline.data.resolver import CHECKOUT
from pipeline.deploy.system import KINDS, PRETRAINED_KINDS
from pipeline.errors import PipelineError
from pipeline.io import write_text
from pipeline.report.learning_curves import write_learning_curves
from pipeline.report.merge import INPUTS_FILE, ReportInputs, check_mergeable, load_inputs, merge, save_inputs
from pipeline.report.cell_provenance import cells_footer, with_task_fallback
from pipeline.report.comparison import write_comparison
from pipeline.report.provenance import build_span_seconds, footer, run_provenance
from pipeline.report.results_page import PUBLISHED
from pipeline.report.stage_times import task_times, write_stage_times
from pipeline.report.strength import write_strength_curve
from pipeline.report.tables import write_report
from pipeline.run_estimate import RunEstimate
from tasks.base import PipelineTask
from tasks.export import ExportSystem, copy_export
from tasks.pretrained import PretrainedModel
from tasks.report import EVAL_SET_ALIASES, TaskReport, resolve_eval_split
from tasks.worker_priority import prioritise, task_graph
from tasks.systems import ALL_SYSTEMS, PRETRAINED_SYSTEMS, SYSTEM_NOTES, TABLE_SYSTEMS, VARIANT_SYSTEMS
from tasks.run_estimate import describe_estimate, estimate_run
from tasks.strength import snapshot_points
from tasks.training_jobs import PackTrainingJob, models_to_train, waiting_jobs, waiting_message
log = logging.getLogger("reproduce-table")


def build_parser() -> argparse.ArgumentParser:
    """The command line of reproduce-table (docs/cli.md is generated from it: python -m tasks.cli_reference)."""
    p = argparse.ArgumentParser(prog="reproduce-table", description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--profile", help=f"scale profile ({', '.join(configs.available('profiles'))}); "
                                     "default: luigi.cfg [lmbr] profile")
    p.add_argument("--tasks", default="all", help="comma-separated translation tasks, or 'all'")
    p.add_argument("--systems", default="all",
                   help=f"comma-separated systems of {', '.join(TABLE_SYSTEMS)}, 'all', "
                        f"or 'none' (data and LM only); 'all' adds {', '.join(PRETRAINED_SYSTEMS)} for the tasks "
                        "with a pretrained model")
    p.add_argument("--pretrained-model", metavar="PATH",
                   help="a transformers translation model (a folder, or a hub name in the Hugging Face cache) for "
                        "every chosen task, in place of the task configs' [pretrained] model: the PNMT rows")
    p.add_argument("--table2-tasks", default="eng-ger",
                   help="tasks whose NMT systems are also decoded as the profile's [variants] (Table 2: research vs "
                        "accelerated; the paper's is eng-ger), 'all' or 'none'")
    p.add_argument("--eval-set", default="devtest",
                   help=f"evaluation set: {', '.join(EVAL_SET_ALIASES)} or a split name of the task configs")
    p.add_argument("--data-dir", help="data folder <pair>/<split>.<lang>.gz (default: $MT_DATA_DIR, else the profile's bundled data, data/<profile>)")
    p.add_argument("--work-dir", help="folder of all artifacts (default: luigi.cfg [lmbr] work_dir)")
    p.add_argument("--config-dir", help="folder of tasks/*.toml and profiles/*.toml (default: the checkout's configs)")
    p.add_argument("--out", help="folder for the tables and results.json (default: results/<profile>, or "
                                 "results/<profile>-<eval-set> for an evaluation set other than devtest; "
                                 "results/<profile>-local for a profile whose results are published); a run of "
                                 "some tasks or systems merges its cells into the tables already there")
    p.add_argument("--strength-curve", action="store_true",
                   help="also LMBR's gain against the NMT's strength: TNMT, LTNMT and TNMT-lat decoded and tuned from "
                   "each kept snapshot of the Transformer's training (training.snapshot_every), written to "
                   "strength_curve.{md,csv,png}")
    p.add_argument("--published", metavar="DIR",
                   help="the published report to compare this run with, cell by cell (comparison.{md,csv}; default: "
                   "the checkout's results/<profile> where the repository publishes the profile; none: no "
                   "comparison)")
    p.add_argument("--no-estimate", action="store_true",
                   help="skip the forecast before the build (a few seconds of probes of this machine's speed, then "
                   "the expected minutes of each task and the wall time, recorded beside the actual ones)")
    p.add_argument("--note", metavar="TEXT",
                   help="a sentence kept in this run's provenance of each of its tasks and written under every "
                   "table (what a reader of the numbers must know that the recorded fields cannot say: another load "
                   "on the machine, a resumed run); with --report-only, added to the notes of the report's tasks")
    p.add_argument("--train-jobs", metavar="DIR",
                   help="train the NMT models elsewhere: pack each model's training job into DIR and stop at the "
                   "training stage, saying which jobs to run where (`lmbr train-jobs train DIR/JOB`, a GPU where "
                   "there is one); run again once they are trained to adopt their results and finish the tables")
    p.add_argument("--workers", type=int, default=1, help="Luigi workers: tasks run in parallel")
    p.add_argument("--processes", type=int,
                   help="processes or threads one task may use (default: luigi.cfg [lmbr] processes with one "
                        "worker, else the machine's cores divided among the workers)")
    p.add_argument("--scheduler-host", help="central luigid host (default: a local scheduler in this process)")
    p.add_argument("--scheduler-port", type=int, default=8082, help="central luigid port")
    p.add_argument("--export", metavar="DIR",
                   help="also export every chosen system of every task (and Table 2 variant) into DIR/<task>/<system>"
                        "[-<variant>]/, for `lmbr translate --system` and `lmbr serve` (MBR is not exported)")
    p.add_argument("--report-only", action="store_true",
                   help="build nothing: write the tables of --out again from its report_inputs.json with this "
                        "version's report code (each task keeps the provenance of the run that produced it)")
    p.add_argument("--merge-report", metavar="DIR",
                   help="build nothing: merge the report folder DIR (another run's --out, e.g. from another machine) "
                        "into --out, its cells replacing the same cells, and write the tables")
    p.add_argument("--verbose", action="store_true", help="show Luigi's own log lines")
    return p


WAITING_FOR_TRAINING = 3  # the exit status of a run stopped at the training stage (--train-jobs)


def default_out(profile: str, eval_set: str) -> str:
    """results/<profile> for the devtest sets, results/<profile>-<eval_set> for another evaluation set; for a
    profile whose results the repository publishes, the user's own results/<profile>-local (the published folder
    changes only when named)."""
    base = f"results/{profile}" if eval_set == "devtest" else f"results/{profile}-{eval_set}"
    return f"{base}-local" if profile in PUBLISHED else base


def published_folder(profile: str, eval_set: str, out: Path, named: str | None) -> Path | None:
    """The published report to set beside this run's: --published (none: no comparison), else the checkout's
    results/<profile> for a published profile on the devtest sets; never `out` itself."""
    if named == "none":
        return None
    folder = Path(named) if named else (CHECKOUT / "results" / profile if profile in PUBLISHED and
                                        eval_set == "devtest" else None)
    if folder is None or not (folder / INPUTS_FILE).is_file() or folder.resolve() == out.resolve():
        return None
    return folder


def forecast_reference(profile: str) -> Path:
    """The run the forecast scales from: the published results/<profile>, else results/reference/<profile> (a run of
    an unpublished profile kept for the forecast alone); the first of them that holds a report."""
    candidates = [CHECKOUT / "results" / profile, CHECKOUT / "results" / "reference" / profile]
    return next((c for c in candidates if (c / INPUTS_FILE).is_file()), candidates[0])


def model_argument(value: str) -> str:
    """--pretrained-model as PretrainedModel's `model` takes it: a hub name (owner/name, not a folder here) as it
    is; a folder as an absolute path (so that a missing one is named as a folder)."""
    path = Path(value).expanduser()
    if not path.exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", value) and not value.startswith("."):
        return value
    return str(path.resolve())


def task_systems(task: str, systems: list[str], has_model: bool, every: bool) -> list[str]:
    """The systems of one task: the chosen ones, and with --systems all the pretrained ones when the task has a
    model; a pretrained system chosen by name for a task without one is refused."""
    if not has_model:
        named = [s for s in systems if s in PRETRAINED_SYSTEMS]
        if named:
            raise PipelineError(f"{', '.join(named)} need a pretrained model, and the task {task} names none: set "
                                "[pretrained] model in its config, or pass --pretrained-model")
        return list(systems)
    return list(systems) + [s for s in PRETRAINED_SYSTEMS if every and s not in systems]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def _choose(value: str, known: tuple[str, ...], default: tuple[str, ...], what: str) -> list[str]:
    if value == "none":
        return []
    chosen = list(default) if value == "all" else [v.strip() for v in value.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in known]
    if unknown:
        raise PipelineError(f"unknown {what} {', '.join(unknown)} (known: {', '.join(known)})")
    return chosen


def _progress(line: str) -> None:
    """One line of the run's progress on stderr, after the time of day (UTC)."""
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} {line}", file=sys.stderr, flush=True)


@luigi.Task.event_handler(luigi.Event.START)
def _started(task: luigi.Task) -> None:
    _progress(f"[start] {task}")


@luigi.Task.event_handler(luigi.Event.FAILURE)
def _failed(task: luigi.Task, exception: BaseException) -> None:
    _progress(f"[FAILED] {task}: {exception}")


@luigi.Task.event_handler(luigi.Event.PROCESSING_TIME)
def _finished(task: luigi.Task, seconds: float) -> None:
    _progress(f"[done] {task} ({seconds:.1f} s)")


def task_processes(processes: int | None, workers: int) -> int | None:
    """--processes, else with several workers the cores shared among them (None: luigi.cfg's setting)."""
    if processes is not None or workers <= 1:
        return processes
    return max(1, (os.cpu_count() or 1) // workers)


def share_the_scheduler() -> None:
    """With a central luigid, this worker stays while other workers run tasks it waits for (Luigi's keep_alive),
    and leaves after [lmbr] idle_minutes (default 10) with nothing to run, e.g. when another worker's task failed."""
    config = luigi.configuration.get_config()
    idle = config.get("lmbr", "idle_minutes", "10")
    config.set("worker", "keep_alive", "true")
    if not config.has_option("worker", "max_keep_alive_idle_duration"):
        config.set("worker", "max_keep_alive_idle_duration", f"{idle} minutes")


def artifact_graph(reports: list[luigi.Task]) -> dict[Path, list[Path]]:
    """{artifact folder: the artifact folders it is built from} over the reports' task graph (tasks without a
    folder of their own, such as the reports, pass their inputs through)."""
    stands_for: dict[str, set[Path]] = {}

    def folders(task: luigi.Task) -> set[Path]:
        if task.task_id not in stands_for:
            if isinstance(task, PipelineTask):
                stands_for[task.task_id] = {task.artifact_dir()}
            else:
                stands_for[task.task_id] = set().union(*map(folders, luigi.task.flatten(task.requires())))
        return stands_for[task.task_id]

    graph: dict[Path, list[Path]] = {}
    for task in task_graph(reports):
        if isinstance(task, PipelineTask):
            graph[task.artifact_dir()] = sorted(set().union(*map(folders, luigi.task.flatten(task.requires()))))
    return graph


def wall_clock_stops(reports: list[luigi.Task]) -> list[str]:
    """The models of the run whose training its declared wall-clock cap (budget_seconds) cut before their fixed
    number of updates, each with the update of the cut and its tuning-set BLEU there: such a model, and every score
    that uses it, depends on the machine's speed."""
    from tasks.nmt import TrainNMT

    stops = []
    for task in task_graph(reports):
        if isinstance(task, TrainNMT) and task.complete():
            stats = task.signature()["stats"]
            if stats.get("stop_reason") == "budget":
                training = task.arch_profile().training
                planned = f" of {training.max_updates}" if training.max_updates else ""
                bleu = (stats.get("validation") or {}).get("valid_bleu")
                stops.append(f"{task.task_name} {task.architecture} seed {task.seed}: cut at update "
                             f"{stats['updates']}{planned} by the cap of {training.budget_seconds:g} s "
                             f"({stats['updates']} updates in {stats['train_seconds']} s)"
                             + (f", tuning BLEU (greedy) {bleu:.2f} at the cut" if bleu is not None else ""))
    return sorted(stops)


def write_tables(out: Path, inputs: ReportInputs, workers: int) -> list[Path]:
    """Every table and figure of `inputs` into `out`, what produced them under each table, and the inputs themselves
    (report_inputs.json); their paths."""
    notes = {s: SYSTEM_NOTES[s] for s in inputs.systems if s in SYSTEM_NOTES}
    paths = write_report(out, inputs.records, inputs.tasks, inputs.systems, inputs.data_rows, inputs.profile,
                         inputs.eval_set, inputs.figures, inputs.significance, notes)
    paths += write_learning_curves(out, inputs.curves, inputs.profile, inputs.guard_stops)
    paths += write_strength_curve(out, inputs.strength, inputs.profile, inputs.eval_set)
    paths += write_stage_times(out, inputs.stage_times, inputs.tasks,
                               f"Build time of every stage per task, profile {inputs.profile}", workers)
    produced_by = footer(inputs.provenance, inputs.tasks)
    for path in paths:  # under each table: what produced it, and for a table of scores the build of each cell
        if path.suffix == ".md":
            write_text(path, path.read_text(encoding="utf-8").rstrip("\n") + "\n" + produced_by
                       + cells_footer(_table_cells(path.name, inputs), inputs.tasks))
    return paths + [save_inputs(out, inputs)]


SCORE_TABLES = {"table1": "", "table1_chrf": "", "finding": "", "regime": "", "significance": "", "table2": "variant"}


def _table_cells(name: str, inputs: ReportInputs) -> list[tuple[str, str, dict[str, Any]]]:
    """(task, system, run) of the cells a table of scores draws on (Table 2's: the variants'); [] for other files."""
    kind = SCORE_TABLES.get(name.removesuffix(".md"))
    if kind is None:
        return []
    return [(r.task, f"{r.system} {r.variant}".strip(), with_task_fallback(r.run, inputs.provenance.get(r.task)))
            for r in inputs.records if bool(r.variant) == (kind == "variant") and r.system != "ROUNDTRIP"]


def _saved_report(folder: Path, inputs: ReportInputs | None) -> ReportInputs:
    """`inputs` (load_inputs of `folder`), or a PipelineError when the folder holds no report."""
    if inputs is None or not inputs.profile:
        raise PipelineError(f"{folder} holds no {INPUTS_FILE}: no report to write the tables from")
    return inputs


def rewrite_report(out: Path, other: Path | None = None, note: str | None = None) -> int:
    """--report-only: the tables of `out` written again from its report_inputs.json by this version's report code;
    nothing is built, and each task keeps the provenance of the run that produced it. With --merge-report, the
    report in `other` (a run on another machine or in another work folder) is merged in first, its cells replacing
    the same cells of `out` as a run's would; `out` may then be new. With --note, the sentence joins the note of
    every task's provenance (what a reader must know of a run, added after it by command, not by hand)."""
    inputs = load_inputs(out)
    if other is None or inputs is not None:
        inputs = _saved_report(out, inputs)
    if other is not None:
        extra = _saved_report(other, load_inputs(other))
        check_mergeable(inputs, extra.profile, extra.eval_set, out)
        inputs = merge(inputs, extra, system_order=TABLE_SYSTEMS)
    if note:
        for provenance in inputs.provenance.values():
            if note not in provenance.get("note", ""):
                provenance["note"] = f"{provenance['note']} {note}" if provenance.get("note") else note
    workers = max((p.get("workers", 1) for p in inputs.provenance.values()), default=1)
    paths = write_tables(out, inputs, workers)
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def estimate_record(estimate: RunEstimate | None, task: str) -> dict[str, Any] | None:
    """What the provenance keeps of the forecast for one task: the run's expected wall time, the task's work."""
    if estimate is None:
        return None
    return {"wall_minutes": estimate.wall_minutes, "task_work_minutes": estimate.task_minutes.get(task, 0.0),
            "workers": estimate.workers, "machine": estimate.machine}


def check_strength_curve(reports: list[TaskReport]) -> None:
    """--strength-curve: refused before the build for a task whose Transformer keeps no snapshots."""
    bare = [r.task_name for r in reports if not snapshot_points(r)]
    if bare:
        raise PipelineError(f"--strength-curve: the Transformer of {', '.join(bare)} keeps no snapshots below its "
                            f"last update under profile {reports[0].profile} (set [nmt.transformer.training] "
                            "snapshot_every, a multiple of checkpoint_every, with max_updates)")


def stop_for_training_jobs(reports: list[luigi.Task], jobs_dir: Path, args: argparse.Namespace,
                           scheduler: dict) -> bool:
    """--train-jobs: pack the training job of every model not built yet (building the jobs' inputs first); True,
    after saying which jobs to run where, while any of them has no result to adopt."""
    models = models_to_train(reports)
    if not models:
        return False
    packs = [model.clone(PackTrainingJob) for model in models]
    luigi.build(packs, workers=args.workers, detailed_summary=True,
                log_level="INFO" if args.verbose else "WARNING", **scheduler)
    unpacked = [p for p in packs if not p.complete()]
    if unpacked:
        raise PipelineError(f"the training jobs of {', '.join(p.model().label() for p in unpacked)} could not be "
                            "packed: their inputs did not build (see the log above); rerun to resume")
    waiting = waiting_jobs(models)
    if waiting:
        print(waiting_message(waiting, jobs_dir), file=sys.stderr)
    return bool(waiting)


def run(args: argparse.Namespace) -> int:
    if args.report_only or args.merge_report:
        profile = args.profile or luigi.configuration.get_config().get("lmbr", "profile")
        return rewrite_report(Path(args.out or default_out(profile, args.eval_set)),
                              Path(args.merge_report) if args.merge_report else None, args.note)
    if args.workers < 1 or (args.processes is not None and args.processes < 1):
        raise PipelineError("--workers and --processes must be at least 1")
    config_dir = Path(args.config_dir or luigi.configuration.get_config().get("lmbr", "config_dir",
                                                                              str(configs.CONFIG_DIR)))
    known = tuple(configs.available("tasks", config_dir))
    tasks = _choose(args.tasks, known, known, "task(s)")
    systems = _choose(args.systems, TABLE_SYSTEMS, ALL_SYSTEMS, "system(s)")
    for task in tasks:
        resolve_eval_split(configs.load_task(task, config_dir), args.eval_set)
    if args.pretrained_model:
        luigi.configuration.get_config().set("lmbr", "pretrained_model", model_argument(args.pretrained_model))
    with_model = {t for t in tasks if args.pretrained_model or configs.load_task(t, config_dir).pretrained.model}
    per_task = {t: task_systems(t, systems, t in with_model, args.systems == "all") for t in tasks}
    systems = [s for s in TABLE_SYSTEMS if any(s in chosen for chosen in per_task.values())]
    shared = {k: v for k, v in (("profile", args.profile), ("work_dir", args.work_dir), ("data_dir", args.data_dir),
                                ("config_dir", args.config_dir),
                                ("processes", task_processes(args.processes, args.workers))) if v is not None}
    profile = args.profile or luigi.configuration.get_config().get("lmbr", "profile")
    variants = tuple(configs.load_profile(profile, config_dir).variants)
    table2 = _choose(args.table2_tasks, known, tuple(tasks), "Table 2 task(s)")
    reports = [TaskReport(task_name=t, eval_set=args.eval_set, systems=tuple(per_task[t]),
                          variants=variants if t in table2 else (), strength_curve=args.strength_curve, **shared)
               for t in tasks]
    if args.strength_curve:
        check_strength_curve(reports)
    for report in reports:  # a model that is not there: refused now, naming it and where it is named
        if any(s in PRETRAINED_SYSTEMS for s in report.systems):
            report.clone(PretrainedModel).folder()
    out = Path(args.out or default_out(profile, args.eval_set))
    previous = load_inputs(out)
    check_mergeable(previous, profile, args.eval_set, out)  # before the build, not after it

    started = time.time()
    prioritise(reports)
    estimate = None if args.no_estimate else estimate_run(reports, args.workers, forecast_reference(profile))
    if estimate is not None:
        print(describe_estimate(estimate), file=sys.stderr, flush=True)
    if args.scheduler_host:
        share_the_scheduler()
    scheduler = ({"scheduler_host": args.scheduler_host, "scheduler_port": args.scheduler_port}
                 if args.scheduler_host else {"local_scheduler": True})
    if args.train_jobs:
        luigi.configuration.get_config().set("TrainNMT", "jobs_dir", str(Path(args.train_jobs).resolve()))
        if stop_for_training_jobs(reports, Path(args.train_jobs).resolve(), args, scheduler):
            return WAITING_FOR_TRAINING
    result = luigi.build(reports, workers=args.workers, detailed_summary=True,
                         log_level="INFO" if args.verbose else "WARNING", **scheduler)
    # with a shared luigid, tasks that other workers ran count as "not run" here: the artifacts decide
    done = result.status in (LuigiStatusCode.SUCCESS, LuigiStatusCode.SUCCESS_WITH_RETRY)
    if not done and not (result.status == LuigiStatusCode.NOT_RUN and all(r.complete() for r in reports)):
        print(result.summary_text, file=sys.stderr)
        print(f"reproduce-table: the run did not complete ({result.status.name}); rerun to resume", file=sys.stderr)
        return 1

    if args.export:
        exports = [ExportSystem(task_name=r.task_name, system=system, split=r.eval_split(), variant=variant, **shared)
                   for r in reports for system in r.systems if system in KINDS or system in PRETRAINED_KINDS
                   for variant in ("", *(v for v in r.variants if system in VARIANT_SYSTEMS))]
        result = luigi.build(exports, workers=args.workers, detailed_summary=True,
                             log_level="INFO" if args.verbose else "WARNING", **scheduler)
        if not all(task.complete() for task in exports):
            print(result.summary_text, file=sys.stderr)
            print("reproduce-table: the export did not complete; rerun to resume", file=sys.stderr)
            return 1
        for task in exports:
            name = f"{task.system}-{task.variant}" if task.variant else task.system
            print(f"exported {copy_export(task.folder(), Path(args.export) / task.task_name / name)}")

    guard_stops = wall_clock_stops(reports)
    graph = artifact_graph(reports)
    provenance = {task: run_provenance(CHECKOUT, profile, time.time() - started,
                                       build_span_seconds(f for f in graph if task in f.parts), args.workers,
                                       estimate_record(estimate, task))
                  | ({"note": args.note} if args.note else {}) for task in tasks}
    this_run = ReportInputs(
        profile=profile, eval_set=args.eval_set, tasks=tasks, systems=systems,
        records=[record for report in reports for record in report.records()],
        data_rows=[report.data_row() for report in reports],
        significance=[record for report in reports for record in report.significance()],
        figures=[figure for report in reports for figure in report.speed_figures()],
        curves={label: curve for report in reports for label, curve in report.learning_curves().items()},
        guard_stops=guard_stops, graph=graph, provenance=provenance, stage_times=task_times(graph, tasks),
        strength=[row for report in reports for row in report.strength_rows()])
    merged = merge(previous, this_run, system_order=TABLE_SYSTEMS)
    if previous is not None and not previous.profile:
        print(f"reproduce-table: {out} has no report_inputs.json (an earlier version's report): its scores and "
              "figures are kept, its other tables hold this run's tasks", file=sys.stderr)
    paths = write_tables(out, merged, args.workers)
    published = published_folder(profile, args.eval_set, out, args.published)
    if published is not None:
        paths += write_comparison(out, merged, _saved_report(published, load_inputs(published)), published)
    print((out / "table1.md").read_text(encoding="utf-8"))
    for stop in guard_stops:
        print(f"reproduce-table: warning: a declared wall-clock cap cut training before max_updates ({stop}): "
              "this model and its scores depend on the machine's speed", file=sys.stderr)
    print(f"wrote {', '.join(str(p) for p in paths)} in {time.time() - started:.1f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return run(args)
    except PipelineError as e:
        print(f"reproduce-table: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
