"""`lmbr serve`: an exported system over HTTP (Starlette on uvicorn), in LibreTranslate's API so that its clients
work as they are.

    POST /translate   {"q": "text" | ["line", ...], "source": "de" | "auto", "target": "en",
                       "terms": "source term<TAB>target term<NEWLINE>..." | [["source term", "target term"], ...]}
                      (terms optional: terminology constraints, pipeline/deploy/terms.py)
                      -> {"translatedText": "..." | [...]}; errors -> {"error": "..."}; the header Server-Timing
                      gives the request's milliseconds per phase (queue, preprocess, pbmt, posteriors, nmt)
    GET  /languages   [{"code": source, "name": ..., "targets": [target]}]
    GET  /health      {"status": "ok", "system": ..., "queue": sentences waiting, "decoding": sentences in the pool,
                      "in_flight": requests accepted and not answered}
    GET  /metrics     Prometheus text: requests by status, sentences, words, queue length, latency histograms
    GET  /            a page to try it in a browser

Each line of `q` is a sentence; a request's sentences join the running decoder batch of the other requests
(pipeline/deploy/decoding_service.py), and the event loop only awaits their future. Answers: 400 for bad JSON, a missing or
mistyped field or another language pair (the message names the field); 413 for a request over `max_chars` or
`max_lines`; 503 with Retry-After while the queue is full or the server is shutting down.

Shutdown (`run_server`): on SIGTERM or SIGINT, whether sent to the server or to its whole process group, the server
stops taking connections and requests, answers what it accepted, or answers 503 for what is left after its shutdown
time, and exits; its worker processes leave the signals to it and are never started again once it began
(pipeline/deploy/workers.py).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from pipeline.deploy.decoding_service import Closed, DecodingService, Overloaded
from pipeline.deploy.terms import Terminology
from pipeline.errors import DataError

__all__ = ["ServerLimits", "create_app"]

PAGE = Path(__file__).with_name("page.html")


@dataclass(frozen=True)
class ServerLimits:
    """What one request may hold, and how long a client is asked to wait when the server is full."""

    max_chars: int = 5000
    max_lines: int = 100
    retry_after_seconds: int = 1


class _Metrics:
    """The server's Prometheus metrics, in a registry of its own (no process-global state)."""

    def __init__(self, service: DecodingService) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("lmbr_requests", "Translation requests answered, by HTTP status", ["status"],
                                registry=self.registry)
        self.sentences = Counter("lmbr_sentences", "Sentences translated", registry=self.registry)
        self.words = Counter("lmbr_source_words", "Source words translated (whitespace-separated)",
                             registry=self.registry)
        self.latency = Histogram("lmbr_request_seconds", "Latency of answered translation requests",
                                 buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
                                 registry=self.registry)
        queue = Gauge("lmbr_queue_sentences", "Sentences accepted and waiting for the decoder",
                      registry=self.registry)
        queue.set_function(lambda: service.queue_length)
        pool = Gauge("lmbr_decoding_sentences", "Sentences in the decoder's pool", registry=self.registry)
        pool.set_function(lambda: service.decoding)
        self.in_flight = 0  # requests accepted and not answered (changed on the event loop only)
        Gauge("lmbr_requests_in_flight", "Requests accepted and not answered yet",
              registry=self.registry).set_function(lambda: self.in_flight)


def _error(status: int, message: str, metrics: _Metrics, headers: dict | None = None) -> JSONResponse:
    metrics.requests.labels(str(status)).inc()
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _terminology(terms, translator) -> Terminology | None:
    """A request's `terms`: tab-separated text, or a list of [source, target] pairs."""
    if isinstance(terms, list):
        if not all(isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) and "\t" not in x
                                                                     and "\n" not in x for x in pair)
                   for pair in terms):
            raise TypeError("a list of terms holds [source term, target term] pairs of strings")
        terms = "\n".join("\t".join(pair) for pair in terms)
    if not isinstance(terms, str):
        raise TypeError("terms are tab-separated lines (a string) or a list of [source, target] pairs")
    return Terminology.parse(terms, translator.source.tokenizer.tokenize, origin="line") if terms.strip() else None


def create_app(service: DecodingService, limits: ServerLimits = ServerLimits(),
               shutdown_seconds: float | None = None) -> Starlette:
    """The ASGI app of a running DecodingService, closed by the app's shutdown: what it accepted is answered, or
    failed after `shutdown_seconds` (None: however long it takes)."""
    system = service.translator.system
    source, target = system.source, system.target
    metrics = _Metrics(service)

    async def translate(request: Request) -> Response:
        started = time.perf_counter()
        try:
            body = json.loads(await request.body() or b"null")
        except (ValueError, UnicodeDecodeError) as e:
            return _error(400, f"the body is not valid JSON ({e})", metrics)
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object with the fields q, source and target", metrics)
        q = body.get("q")
        if q is None:
            return _error(400, "missing field q: the text to translate (a string or a list of strings)", metrics)
        single = isinstance(q, str)
        if not single and not (isinstance(q, list) and all(isinstance(x, str) for x in q)):
            return _error(400, "field q must be a string or a list of strings", metrics)
        for field, expected, allowed in (("source", source, (source, "auto")), ("target", target, (target,))):
            value = body.get(field)
            if value is None:
                return _error(400, f"missing field {field}: this server translates {source} to {target}", metrics)
            if value not in allowed:
                return _error(400, f"field {field}: this server translates {source} to {target}, not "
                                   f"{value!r} (give {expected!r})", metrics)
        terms = body.get("terms")
        if terms is not None:
            try:
                terms = _terminology(terms, service.translator)
            except (TypeError, DataError) as e:
                return _error(400, f"field terms: {e}", metrics)
        lines = q.split("\n") if single else list(q)
        chars = sum(len(line) for line in lines)
        if chars > limits.max_chars:
            return _error(413, f"field q: {chars} characters, over the limit of {limits.max_chars}", metrics)
        if len(lines) > limits.max_lines:
            return _error(413, f"field q: {len(lines)} lines, over the limit of {limits.max_lines}", metrics)
        try:
            future = service.submit(lines, terms)
        except (Overloaded, Closed) as e:
            return _error(503, f"the server is busy ({e}): retry later", metrics,
                          {"Retry-After": str(limits.retry_after_seconds)})
        metrics.in_flight += 1
        try:
            texts = await asyncio.wrap_future(future)
        except DataError as e:
            return _error(400, f"field q: {e}", metrics)
        except Closed as e:  # the shutdown time ran out before it was translated
            return _error(503, str(e), metrics)
        except Exception as e:  # noqa: BLE001 - a decoding process died with it: the client is told, the server goes on
            return _error(500, f"translation failed: {e}", metrics)
        finally:
            metrics.in_flight -= 1
        metrics.requests.labels("200").inc()
        metrics.sentences.inc(len(lines))
        metrics.words.inc(sum(len(line.split()) for line in lines))
        metrics.latency.observe(time.perf_counter() - started)
        timing = ", ".join(f"{phase};dur={seconds * 1000:.2f}" for phase, seconds in future.timings.items())
        return JSONResponse({"translatedText": "\n".join(texts) if single else texts},
                            headers={"Server-Timing": timing})

    async def languages(request: Request) -> Response:
        return JSONResponse([{"code": source, "name": source, "targets": [target]}])

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "system": system.name, "task": system.manifest["task"],
                             "source": source, "target": target, "queue": service.queue_length,
                             "decoding": service.decoding, "in_flight": metrics.in_flight})

    async def metrics_page(request: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def page(request: Request) -> Response:
        html = PAGE.read_text(encoding="utf-8")
        return HTMLResponse(html.replace("{{system}}", system.name).replace("{{source}}", source)
                            .replace("{{target}}", target))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        await asyncio.get_running_loop().run_in_executor(None, service.close, shutdown_seconds)
        for end in service.worker_ends:  # how each decoding process ended, for whoever reads the server's log
            print(f"lmbr serve: decoding process {end['worker']} (pid {end['pid']}) ended with exit code "
                  f"{end['exitcode']}: {end['cause']}", file=sys.stderr, flush=True)

    return Starlette(routes=[Route("/translate", translate, methods=["POST"]),
                             Route("/languages", languages, methods=["GET"]),
                             Route("/health", health, methods=["GET"]),
                             Route("/metrics", metrics_page, methods=["GET"]),
                             Route("/", page, methods=["GET"])],
                     lifespan=lifespan)


def run_server(app: Starlette, service: DecodingService, sock, shutdown_seconds: float) -> None:
    """Serve `app` on the bound socket `sock` until SIGTERM or SIGINT. At the signal the service takes nothing new
    and fails what it has not answered after `shutdown_seconds`; uvicorn closes the listening socket, waits for the
    answers (a few seconds past the shutdown time at most), and the app's shutdown closes the service."""
    import signal

    import uvicorn

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame) -> None:
            service.begin_shutdown(shutdown_seconds)
            super().handle_exit(sig, frame)

    server = _Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=shutdown_seconds + 5))
    # uvicorn raises the signal again after its shutdown, under the handler it found: no-ops here, so that a server
    # stopped by a signal after answering its requests exits with status 0
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    server.run(sockets=[sock])
