"""Benchmark: `lmbr serve` under 1, 4, 16 and 64 concurrent clients on loopback, against offline translation.

The server runs as its own process (`lmbr serve --system DIR --port 0`). Each client sends one sentence per request
(`q` a string), round-robin over the input lines, until the level's --requests or --seconds run out. Every answer is
compared with the offline translation of its sentence (the same system through `Translator.translate` in this
process, timed for the offline words per minute); a request that fails, times out or comes back different is
counted. Reported per level: requests, p50/p95/p99 latency, words per minute (source words answered / wall time),
the server's peak and final resident memory (VmHWM, VmRSS, its preparing and decoding processes included), and the median
of each phase of the Server-Timing headers. Then the latency of one --probe-words sentence at 1 client, per phase.
Prints a table and writes JSON.

    .venv/bin/python benchmarks/serve_load.py --system systems/eng-ger/LNMT \\
        --input work/medium/eng-ger/tokenized/newstest2016-*/raw.en.gz --sentences 1000 --threads 2
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine  # noqa: E402
from pipeline.io import read_lines, write_json  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def memory_kib(pid: int) -> dict[str, int]:
    """VmHWM (peak) and VmRSS in KiB of a process plus its child processes (the server's preparing workers): each
    process's own peak, summed."""
    total = {"VmHWM": 0, "VmRSS": 0}
    for process in [pid, *descendants(pid)]:
        try:
            status = Path(f"/proc/{process}/status").read_text()
        except OSError:  # ended meanwhile
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        for key in total:
            total[key] += int(fields[key].split()[0])
    return total


def descendants(pid: int) -> list[int]:
    """The process ids below `pid` (from /proc/<pid>/task/*/children)."""
    found = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            for child in map(int, children.read_text().split()):
                found += [child, *descendants(child)]
        except OSError:
            continue
    return found


def start_server(args) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli.lmbr", "serve", "--system", args.system, "--port", "0", "--threads",
         str(args.threads), "--max-queue", str(args.max_queue), "--refill", str(args.refill),
         *(["--pool-sentences", str(args.pool_sentences)] if args.pool_sentences else []),
         *(["--prepare-processes", str(args.prepare_processes)] if args.prepare_processes is not None else []),
         *(["--decode-processes", str(args.decode_processes)] if args.decode_processes is not None else [])],
        stderr=subprocess.PIPE, text=True, cwd=REPO, env={**os.environ, "TQDM_DISABLE": "1"})
    match = re.search(r"on (http://[\d.]+:\d+)/", process.stderr.readline())
    if not match:
        process.kill()
        raise SystemExit("serve_load: the server did not start")
    return process, match.group(1)


def phases(header: str) -> dict[str, float]:
    """Server-Timing `name;dur=ms, ...` -> {name: seconds}."""
    found = re.findall(r"(\w+);dur=([\d.]+)", header or "")
    return {name: float(ms) / 1000 for name, ms in found}


async def load(url: str, lines: list[str], offline: dict[str, str], clients: int, requests: int,
               seconds: float, source: str, target: str) -> dict:
    import httpx

    latencies, timings, words = [], [], 0
    failed = wrong = 0
    sent = 0
    reasons: Counter[str] = Counter()  # why requests failed: HTTP status or exception class
    deadline = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        async def worker() -> None:
            nonlocal sent, failed, wrong, words
            while sent < requests and time.perf_counter() < deadline:
                line = lines[sent % len(lines)]
                sent += 1
                started = time.perf_counter()
                try:
                    answer = await client.post("/translate", json={"q": line, "source": source, "target": target})
                except httpx.HTTPError as e:
                    failed += 1
                    reasons[type(e).__name__] += 1
                    continue
                latencies.append(time.perf_counter() - started)
                if answer.status_code != 200:
                    failed += 1
                    reasons[f"HTTP {answer.status_code}"] += 1
                    continue
                timings.append(phases(answer.headers.get("Server-Timing", "")))
                words += len(line.split())
                if answer.json()["translatedText"] != offline[line]:
                    wrong += 1

        begun = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - begun
    names = sorted({name for t in timings for name in t})
    return {"clients": clients, "requests": sent, "answered": len(timings), "failed": failed,
            "failed_because": dict(reasons), "different": wrong,
            "wall_seconds": round(wall, 3), "words_per_minute": round(60 * words / max(wall, 1e-9), 1),
            "latency_seconds": {f"p{q}": round(percentile(latencies, q), 4) for q in (50, 95, 99)},
            "phase_median_seconds": {n: round(statistics.median(t.get(n, 0.0) for t in timings), 4) for n in names}}


async def soak(url: str, lines: list[str], offline: dict[str, str], args, pid: int, source: str,
               target: str) -> dict:
    """--soak seconds of load at --soak-clients, with the server's resident memory sampled as it runs."""
    samples: list[tuple[float, int]] = []
    begun = time.perf_counter()

    async def sample() -> None:
        while True:
            samples.append((round(time.perf_counter() - begun, 1), memory_kib(pid)["VmRSS"]))
            await asyncio.sleep(args.soak_every)

    sampler = asyncio.ensure_future(sample())
    level = await load(url, lines, offline, args.soak_clients, 10 ** 9, args.soak, source, target)
    sampler.cancel()
    samples.append((round(time.perf_counter() - begun, 1), memory_kib(pid)["VmRSS"]))
    rss = [kib for _, kib in samples]
    half = len(rss) // 2
    level.update({"rss_samples_kib": samples, "rss_first_kib": rss[0], "rss_last_kib": rss[-1],
                  "rss_max_kib": max(rss), "rss_median_first_half_kib": statistics.median(rss[:max(half, 1)]),
                  "rss_median_second_half_kib": statistics.median(rss[half:])})
    print(f"soak: {level['answered']}/{level['requests']} answered, {level['failed']} failed, {level['different']} "
          f"different over {level['wall_seconds']:.0f} s at {args.soak_clients} clients; RSS first "
          f"{rss[0] / 1024:.0f} MiB, medians of the halves {level['rss_median_first_half_kib'] / 1024:.0f} and "
          f"{level['rss_median_second_half_kib'] / 1024:.0f} MiB, last {rss[-1] / 1024:.0f} MiB, max "
          f"{max(rss) / 1024:.0f} MiB", flush=True)
    return level


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--system", required=True, help="an exported system folder")
    p.add_argument("--input", required=True, help="raw source sentences (.gz allowed)")
    p.add_argument("--sentences", type=int, default=1000, help="the first N input lines (non-empty)")
    p.add_argument("--clients", default="1,4,16,64", help="concurrency levels")
    p.add_argument("--requests", type=int, default=1000, help="requests per level (at most)")
    p.add_argument("--seconds", type=float, default=300, help="seconds per level (at most)")
    p.add_argument("--pool-sentences", type=int, help="the server's --pool-sentences (default: the system's)")
    p.add_argument("--refill", type=float, default=0.25, help="the server's --refill")
    p.add_argument("--max-queue", type=int, default=1024)
    p.add_argument("--probe-words", type=int, default=25, help="the one-sentence latency probe's length")
    p.add_argument("--probe-requests", type=int, default=30)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prepare-processes", type=int, help="the server's --prepare-processes (default: the server's)")
    p.add_argument("--decode-processes", type=int, help="the server's --decode-processes (default: the server's)")
    p.add_argument("--soak", type=float, default=0,
                   help="after the levels, seconds of load at --soak-clients, sampling the server's memory every "
                        "--soak-every seconds (0: no soak)")
    p.add_argument("--soak-clients", type=int, default=16)
    p.add_argument("--soak-every", type=float, default=10)
    p.add_argument("--json", default="results/benchmarks-local/serve_load.json")
    args = p.parse_args(argv)

    import torch

    from pipeline.deploy.system import load_system
    from pipeline.deploy.translator import Translator

    torch.set_num_threads(args.threads)
    system = load_system(Path(args.system))
    lines = [line for line in read_lines(Path(args.input)) if line.strip()][:args.sentences]
    probe = min(lines, key=lambda line: (abs(len(line.split()) - args.probe_words), line))
    started = time.perf_counter()
    translator = Translator(system)
    offline_texts = list(translator.translate(lines))
    offline_seconds = time.perf_counter() - started
    offline = dict(zip(lines, offline_texts))
    offline[probe] = offline.get(probe) or translator.translate_batch([probe])[0]
    source_words = sum(len(line.split()) for line in lines)
    report = {"machine": machine(args.threads), "system": system.name, "task": system.manifest["task"],
              "server": {"refill": args.refill, "pool_sentences": args.pool_sentences, "max_queue": args.max_queue,
                         "prepare_processes": args.prepare_processes, "decode_processes": args.decode_processes},
              "sentences": len(lines), "offline": {"seconds": round(offline_seconds, 3),
                                                   "words_per_minute": round(60 * source_words / offline_seconds, 1),
                                                   "phase_seconds": {k: round(v, 3)
                                                                     for k, v in translator.timings.items()}},
              "levels": []}
    del translator
    process, url = start_server(args)
    try:
        for clients in (int(c) for c in args.clients.split(",")):
            level = asyncio.run(load(url, lines, offline, clients, args.requests, args.seconds, system.source,
                                     system.target))
            level["server_memory_kib"] = memory_kib(process.pid)
            level["vs_offline"] = round(level["words_per_minute"] / report["offline"]["words_per_minute"], 3)
            report["levels"].append(level)
            print(f"{clients:3d} clients: {level['answered']}/{level['requests']} answered, {level['failed']} failed, "
                  f"{level['different']} different; {level['words_per_minute']:.0f} wpm ({level['vs_offline']:.2f}x "
                  f"offline); latency p50 {level['latency_seconds']['p50']:.3f} s, p95 "
                  f"{level['latency_seconds']['p95']:.3f} s; peak RSS {level['server_memory_kib']['VmHWM'] / 1024:.0f}"
                  " MiB", flush=True)
        single = asyncio.run(load(url, [probe], offline, 1, args.probe_requests, args.seconds, system.source,
                                  system.target))
        if args.soak > 0:
            report["soak"] = asyncio.run(soak(url, lines, offline, args, process.pid, system.source, system.target))
        report["probe"] = {"words": len(probe.split()), "sentence": probe, **single}
        print(f"one {len(probe.split())}-word sentence at 1 client: p50 {single['latency_seconds']['p50']:.3f} s, "
              f"p95 {single['latency_seconds']['p95']:.3f} s; phases (median s): {single['phase_median_seconds']}")
    finally:
        process.send_signal(signal.SIGTERM)
        report["server_exit_status"] = process.wait(timeout=300)
    base = report["levels"][0]["words_per_minute"] if report["levels"] else float("nan")
    report["throughput_vs_one_client"] = {str(level["clients"]): round(level["words_per_minute"] / base, 3)
                                          for level in report["levels"]}
    print(f"offline: {report['offline']['words_per_minute']:.0f} wpm; throughput vs 1 client: "
          f"{report['throughput_vs_one_client']}")
    write_json(Path(args.json), report)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
