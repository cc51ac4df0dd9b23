"""`lmbr serve` as a real process on loopback, with real HTTP clients (httpx)."""
from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time

import httpx
import pytest

from pipeline.deploy.system import load_system
from pipeline.deploy.translator import Translator

CHROMIUM = "/usr/bin/chromium"  # Debian's (scripts/install-system.sh); the flags keep it off the network
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Server:
    """`lmbr serve` in a subprocess on a free loopback port."""

    def __init__(self, folder, *options: str, own_group: bool = False) -> None:
        """`own_group`: the server leads a process group of its own (its workers join it), as under systemd."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli.lmbr", "serve", "--system", str(folder), "--port", "0",
             "--threads", "1", *options], stderr=subprocess.PIPE, text=True, env={**os.environ, "TQDM_DISABLE": "1"},
            start_new_session=own_group)
        line = self.process.stderr.readline()
        match = re.search(r"on (http://[\d.]+:\d+)/", line)
        assert match, line
        self.url = match.group(1)
        for _ in range(100):
            try:
                if httpx.get(f"{self.url}/health", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("the server did not come up")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=120)


@pytest.fixture
def lnmt(exported_systems):
    exports, raw = exported_systems
    folder = exports["LNMT"].folder()
    server = Server(folder, "--pool-sentences", "4")
    yield server, raw, dict(zip(raw, Translator(load_system(folder)).translate(raw)))
    server.stop()


def request(q, source="de", target="en"):
    return {"q": q, "source": source, "target": target}


async def twelve_in_flight(client: httpx.AsyncClient, raw: list[str]) -> list[asyncio.Task]:
    """Twelve requests of three lines each, posted and waited for until the server has accepted all of them."""
    tasks = [asyncio.create_task(client.post("/translate", json=request(raw[k % len(raw):][:3]))) for k in range(12)]
    while (await client.get("/health")).json()["in_flight"] < 12:
        await asyncio.sleep(0.005)
    return tasks


def test_concurrent_clients_get_the_offline_translations_and_metrics_count_them(lnmt):
    server, raw, offline = lnmt

    async def clients():
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            async def one(k):
                lines = raw[k % len(raw): k % len(raw) + 1 + k % 3]
                answer = await client.post("/translate", json=request(lines if k % 2 else "\n".join(lines)))
                assert answer.status_code == 200, answer.text
                assert re.fullmatch(r"queue;dur=[\d.]+, preprocess;dur=[\d.]+, pbmt;dur=[\d.]+, "
                                    r"posteriors;dur=[\d.]+, nmt;dur=[\d.]+", answer.headers["Server-Timing"])
                got = answer.json()["translatedText"]
                return (got if k % 2 else got.split("\n")) == [offline[line] for line in lines]
            return await asyncio.gather(*(one(k) for k in range(16)))

    assert all(asyncio.run(clients()))
    metrics = httpx.get(f"{server.url}/metrics").text
    assert re.search(r'^lmbr_requests_total\{status="200"\} 16\.0$', metrics, re.M), metrics
    assert re.search(r"^lmbr_request_seconds_count 16\.0$", metrics, re.M)
    assert "lmbr_queue_sentences 0.0" in metrics
    health = httpx.get(f"{server.url}/health").json()
    assert health["status"] == "ok" and health["system"] == "LNMT"
    assert httpx.get(f"{server.url}/languages").json() == [{"code": "de", "name": "de", "targets": ["en"]}]
    assert "<textarea" in httpx.get(server.url + "/").text
    assert server.stop() == 0


BAD_REQUESTS = [
    (b"{not json", 400, "not valid JSON"),
    (b'["a list"]', 400, "a JSON object"),
    (b'{"source": "de", "target": "en"}', 400, "missing field q"),
    (b'{"q": 3, "source": "de", "target": "en"}', 400, "field q must be a string"),
    (b'{"q": "Hallo", "target": "en"}', 400, "missing field source"),
    (b'{"q": "Hallo", "source": "fr", "target": "en"}', 400, "field source: this server translates de to en"),
    (b'{"q": "Hallo", "source": "auto", "target": "ja"}', 400, "field target"),
    (b'{"q": "' + b"x" * 5001 + b'", "source": "de", "target": "en"}', 413, "over the limit of 5000"),
    (b'{"q": ["a", "b", "c"], "source": "de", "target": "en"}', 413, "3 lines, over the limit of 2"),
]


def test_bad_requests_get_clear_answers_and_the_server_keeps_serving(exported_systems):
    exports, raw = exported_systems
    server = Server(exports["PBMT"].folder(), "--max-lines", "2")
    expected = Translator(load_system(exports["PBMT"].folder())).translate_batch(raw[:1])
    assert expected[0]
    try:
        for body, status, message in BAD_REQUESTS:
            answer = httpx.post(f"{server.url}/translate", content=body, headers={"Content-Type": "application/json"})
            assert (answer.status_code, message in answer.json()["error"]) == (status, True), (body[:40], answer.text)
            good = httpx.post(f"{server.url}/translate", json=request(raw[0], "auto"))
            assert good.status_code == 200 and good.json()["translatedText"] == expected[0]
        metrics = httpx.get(f"{server.url}/metrics").text
        assert re.search(r'^lmbr_requests_total\{status="400"\} 7\.0$', metrics, re.M)
        assert re.search(r'^lmbr_requests_total\{status="413"\} 2\.0$', metrics, re.M)
    finally:
        assert server.stop() == 0


def test_overload_is_503_with_retry_after(exported_systems):
    exports, raw = exported_systems
    lines = (raw * 10)[:90]  # one sentence decodes at a time: most of them wait in the queue for a while
    server = Server(exports["FNMT"].folder(), "--pool-sentences", "1", "--max-queue", "90")

    async def run():
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            first = asyncio.create_task(client.post("/translate", json=request(lines)))
            while (await client.get("/health")).json()["queue"] < 80:
                await asyncio.sleep(0.005)
            busy = await client.post("/translate", json=request(lines[:50]))  # fits only once 40 have finished
            return busy, await first

    busy, first = asyncio.run(run())
    assert busy.status_code == 503 and busy.headers["Retry-After"] == "1" and "retry later" in busy.json()["error"]
    assert first.status_code == 200 and len(first.json()["translatedText"]) == len(lines)
    assert server.stop() == 0


def test_sigterm_finishes_every_accepted_request(exported_systems):
    exports, raw = exported_systems
    folder = exports["LNMT"].folder()
    offline = dict(zip(raw, Translator(load_system(folder)).translate(raw)))
    server = Server(folder, "--pool-sentences", "1")  # one sentence at a time: all 12 requests are accepted first

    async def run():
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            tasks = await twelve_in_flight(client, raw)
            server.process.send_signal(signal.SIGTERM)
            return await asyncio.gather(*tasks)

    answers = asyncio.run(run())
    assert [a.status_code for a in answers] == [200] * 12
    assert [a.json()["translatedText"] for a in answers] == [[offline[line] for line in raw[k % len(raw):][:3]]
                                                             for k in range(12)]
    assert server.process.wait(timeout=120) == 0


def test_the_page_translates_what_is_typed_in_a_real_browser(exported_systems):
    """Headless Chromium (Debian's, driven by Playwright): type a sentence, press Translate, read the translation."""
    from playwright.sync_api import sync_playwright

    exports, raw = exported_systems
    folder = exports["LNMT"].folder()  # (L keeps the test's barely trained models from empty outputs)
    sentence, expected = next((line, text) for line, text in zip(raw, Translator(load_system(folder)).translate(raw))
                              if text)
    server = Server(folder)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            page = browser.new_page()
            page.goto(server.url + "/")
            assert "LNMT: de" in page.inner_text("h1")
            page.fill("#source", sentence)
            page.click("#translate")
            page.wait_for_function("document.getElementById('target').textContent.length > 0", timeout=60000)
            assert page.inner_text("#target") == expected and page.inner_text("#status") == ""
            page.fill("#source", "x" * 5001)  # an error is shown, not a translation
            page.click("#translate")
            page.wait_for_function("document.getElementById('status').textContent.includes('limit')", timeout=60000)
            browser.close()
    finally:
        assert server.stop() == 0


def test_terms_in_a_request_appear_in_its_translation_and_bad_terms_are_400(lnmt, exported_systems):
    from tests.pipeline.deploy.test_terms import TOKENIZE_DE, has_term, seeded_terms

    server, raw, offline = lnmt
    pairs = seeded_terms(exported_systems[0], raw, count=4)
    lines = [line for line in raw[:4] if any(s in TOKENIZE_DE(line) for s, _ in pairs)]
    answer = httpx.post(f"{server.url}/translate", json={**request(lines), "terms": [list(p) for p in pairs]},
                        timeout=120)
    assert answer.status_code == 200, answer.text
    for line, text in zip(lines, answer.json()["translatedText"]):
        assert all(has_term(text, t) for s, t in pairs if s in TOKENIZE_DE(line)), (line, text)
    for terms, message in (("Haus house", "field terms: line:1: expected 'source term<TAB>target term'"),
                           ([["Haus"]], "field terms: a list of terms holds [source term, target term] pairs"),
                           (7, "field terms: terms are tab-separated lines")):
        bad = httpx.post(f"{server.url}/translate", json={**request(raw[0]), "terms": terms})
        assert (bad.status_code, message in bad.json()["error"]) == (400, True), bad.text
    plain = httpx.post(f"{server.url}/translate", json=request(raw[0]), timeout=120)
    assert plain.json()["translatedText"] == offline[raw[0]]


def group_pids(group: int) -> set[int]:
    """The live processes of a process group (from /proc; zombies excluded)."""
    pids = set()
    for stat in os.listdir("/proc"):
        if stat.isdigit():
            try:
                fields = open(f"/proc/{stat}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                pids.add(int(stat))
    return pids


def stop_and_watch(server: Server, signum: int, to_group: bool, limit: float = 30.0) -> tuple[int, float, set[int]]:
    """Sends the signal (to the server or its whole group); waits for the server to exit. Returns its exit status,
    the seconds it took, and the processes that appeared in its group meanwhile (a worker started again)."""
    group = server.process.pid
    before = group_pids(group)
    started = time.monotonic()
    (os.killpg if to_group else os.kill)(group, signum)
    appeared: set[int] = set()
    while server.process.poll() is None and time.monotonic() - started < limit:
        appeared |= group_pids(group) - before
        time.sleep(0.05)
    seconds = time.monotonic() - started
    if server.process.poll() is None:
        os.killpg(group, signal.SIGKILL)
        raise AssertionError(f"the server was still running {limit:.0f} s after the signal")
    return server.process.wait(), seconds, appeared


def wait_for_group_to_empty(group: int, seconds: float = 10.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while group_pids(group) and time.monotonic() < deadline:
        time.sleep(0.05)
    return group_pids(group)


@pytest.mark.parametrize("to_group", [False, True], ids=["pid", "group"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_idle_server_stops_on_a_signal_to_it_or_its_group(exported_systems, signum, to_group):
    exports, raw = exported_systems
    server = Server(exports["LNMT"].folder(), "--pool-sentences", "4", own_group=True)
    assert httpx.post(f"{server.url}/translate", json=request(raw[:2]), timeout=60).status_code == 200
    status, seconds, appeared = stop_and_watch(server, signum, to_group)
    assert status == 0 and seconds < 30
    assert not appeared, f"processes started during shutdown: {appeared}"
    assert not wait_for_group_to_empty(server.process.pid), "processes left in the server's group"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_loaded_server_answers_or_fails_every_request_when_its_group_is_stopped(exported_systems, signum):
    """12 requests accepted (one sentence decoded at a time), then the signal to the whole group, with a 3 s
    shutdown time: every request gets the offline translation or a 503, nothing is left running, and no worker is
    started again (the workers would die of a group SIGTERM and be restarted before this was fixed)."""
    exports, raw = exported_systems
    folder = exports["LNMT"].folder()
    offline = dict(zip(raw, Translator(load_system(folder)).translate(raw)))
    server = Server(folder, "--pool-sentences", "1", "--shutdown-timeout", "3", own_group=True)
    watched = {}

    async def run():
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            tasks = await twelve_in_flight(client, raw)
            loop = asyncio.get_running_loop()
            watch = loop.run_in_executor(None, stop_and_watch, server, signum, True)
            answers = await asyncio.gather(*tasks, return_exceptions=True)
            watched["result"] = await watch
            return answers

    answers = asyncio.run(run())
    status, seconds, appeared = watched["result"]
    assert status == 0 and seconds < 30
    assert not appeared, f"processes started during shutdown: {appeared}"
    assert not wait_for_group_to_empty(server.process.pid), "processes left in the server's group"
    assert all(isinstance(a, httpx.Response) for a in answers), answers  # every request got an answer
    for k, answer in enumerate(answers):
        assert answer.status_code in (200, 503), answer.text
        if answer.status_code == 200:
            assert answer.json()["translatedText"] == [offline[line] for line in raw[k % len(raw):][:3]]
        else:
            assert "shut down" in answer.json()["error"]


def newest_child(group: int, server: int) -> int:
    """The worker of the group started last (by its start time in /proc)."""
    start = lambda pid: int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19])  # noqa: E731
    return max(group_pids(group) - {server}, key=start)


def test_a_group_sigterm_while_a_worker_restarts_stops_the_server_cleanly(exported_systems):
    """12 requests accepted by a server with one preparing and one decoding process; the decoding process is killed,
    and while the server starts it again (spawn, imports, the system loaded), SIGTERM goes to the whole group. The
    starting worker does not die of it (the signals are blocked from before it is spawned until it ignores them),
    the restart finishes without a traceback, the server exits within 30 s with nothing left in its group, and every
    accepted request is answered: its offline translation, or an error for the sentences the killed worker held
    (500) or that the 3 s shutdown time left (503). The service's record of how each decoding process ended (on
    the server's log) shows the restarted one closed with exit code 0, not killed by the signal."""
    exports, raw = exported_systems
    folder = exports["LNMT"].folder()
    offline = dict(zip(raw, Translator(load_system(folder)).translate(raw)))
    server = Server(folder, "--pool-sentences", "1", "--prepare-processes", "1", "--decode-processes", "1",
                    "--shutdown-timeout", "3", own_group=True)
    group = server.process.pid
    watched = {}

    def restart_then_stop() -> tuple[int, float, set[int]]:
        decoder = newest_child(group, group)  # started after the preparing process
        before = group_pids(group)
        os.kill(decoder, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not group_pids(group) - before and time.monotonic() < deadline:  # the new worker is spawned
            time.sleep(0.005)
        assert group_pids(group) - before, "the decoding process was not started again"
        watched["killed"], watched["restarted"] = decoder, group_pids(group) - before
        return stop_and_watch(server, signal.SIGTERM, True)

    async def run():
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            tasks = await twelve_in_flight(client, raw)
            watch = asyncio.get_running_loop().run_in_executor(None, restart_then_stop)
            answers = await asyncio.gather(*tasks, return_exceptions=True)
            watched["result"] = await watch
            return answers

    answers = asyncio.run(run())
    status, seconds, _ = watched["result"]
    log = server.process.stderr.read()
    assert status == 0 and seconds < 30, log
    assert "Traceback" not in log, log
    assert not wait_for_group_to_empty(group), "processes left in the server's group"
    # how each decoding process ended, as the service recorded it: the killed one of SIGKILL, and the one started
    # again closed by the server at shutdown with exit code 0, not killed by the group's SIGTERM (-15)
    ends = {int(pid): (int(code), cause) for pid, code, cause in re.findall(
        r"decoding process 0 \(pid (\d+)\) ended with exit code (-?\d+): ([a-z ]+)", log)}
    assert ends.get(watched["killed"]) == (-signal.SIGKILL, "died"), log
    restarted = [pid for pid in ends if pid != watched["killed"]]
    assert len(restarted) == 1 and restarted[0] in watched["restarted"], log
    assert ends[restarted[0]] == (0, "closed"), log
    assert all(isinstance(a, httpx.Response) for a in answers), answers  # every accepted request got an answer
    for k, answer in enumerate(answers):
        assert answer.status_code in (200, 500, 503), answer.text
        if answer.status_code == 200:
            assert answer.json()["translatedText"] == [offline[line] for line in raw[k % len(raw):][:3]]
