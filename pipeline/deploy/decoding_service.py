"""Concurrent requests decoded together: the decoder's streaming refill (ALGORITHMS.md section 6) across requests.

    service = DecodingService(translator, pool_sentences=16, max_queue=256)
    future = service.submit(["Ein Satz.", "Noch einer."])   # concurrent.futures.Future of the translations
    service.submit(lines, terms=Terminology.parse(...))     # with terminology constraints (terms.py)
    future.timings                                          # its seconds per phase: queue, preprocess, pbmt,
                                                            # posteriors, nmt (from its first sentence's start)
    service.close()                                         # finishes every accepted request, then stops
    service.begin_shutdown(20)                              # the same, failing what is left after 20 s

Threads, so that the caller (the server's event loop) never waits on decoding:

- a preparing thread takes the waiting requests in arrival order, as many as fit the translator's `batch_lines`,
  and runs Translator.prepare on them in one call (preprocessing, and for the hybrids the PBMT lattices, posteriors,
  L and acceptors, whose fixed costs per call are then shared), then hands their sentences to the decoder. With
  `prepare_processes` N >= 1 there are N preparing threads, each calling its own worker process
  (pipeline/deploy/preparer.py), so that the Python-heavy PBMT search and posteriors run beside the decoding
  thread instead of holding its interpreter's lock, and N calls run at once; with 0, one thread prepares in this
  process;
- the decoding thread keeps a pool of BeamBatches (pipeline/decode/beam_search.py). When the sentences still
  decoding drop to `refill` x `pool_sentences`, the waiting sentences, of whichever requests, start a new batch,
  stepped with the others by decode_sources' streaming step (pipeline/decode/batching.py: step_pool). With a GRU
  (a model that joins at any step) the new batch joins the running one at once and shares its queries from its
  first step; with a Transformer it catches up alone, one small query per step, and joins at the same step. The
  default refill 0.25 lets sentences gather first (docs/benchmarks/serving.md). A request is answered when its
  last sentence ends; a sentence whose terms could not be met goes back to the front of the queue without them
  (Translator.missing_terms);
- or, with `decode_processes` N >= 1, N decoding processes (pipeline/deploy/decoder_process.py), each with a pool
  of its own stepped on one core, which is how a CPU server gets the most sentences through (a search stepped with
  two threads is far from twice as fast as with one). A feeding and a collecting thread per process: a process
  takes ready sentences when its pool is down to the refill point and no other's is smaller, up to an even share
  of all the sentences waiting or decoding; its n-best lists come back as its sentences end, and are finished
  here. A process that dies fails the sentences it held (their requests get the error) and is started again.

Shutdown (`begin_shutdown`, then `close`): nothing new is accepted, every accepted request is answered, or failed
with :class:`Closed` when the shutdown time runs out first, and no worker process is started again, whatever ends
it (pipeline/deploy/workers.py: the workers leave the stop signals to the server).

Each sentence follows the search it would follow alone (batch invariance, up to floating-point differences of
batched products), so the answers equal offline translation. A system that searches anchored (LMBR free and inside
the sentence's PBMT lattice, pipeline/decode/anchored.py) sends each line as two searches, which may decode in
different batches or processes; the better of the two answers, as in `Translator.translate`. The queue is bounded
in sentences: `submit` refuses a request that would overfill it (:class:`Overloaded`), and refuses everything after
`close` (:class:`Closed`).
"""
from __future__ import annotations

import sys
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Iterable, Iterator


from pipeline.deploy.decoder_process import ProcessDecoder
from pipeline.deploy.preparer import ProcessPreparer
from pipeline.deploy.terms import Terminology
from pipeline.deploy.translator import Prepared, Translator

__all__ = ["Closed", "DecodingService", "Overloaded", "translate_in_processes"]


class Overloaded(Exception):
    """The queue has no room for the request now; retry later."""


class Closed(Exception):
    """The service is shutting down and accepts nothing new."""


@dataclass
class _Request:
    lines: list[str]
    future: Future
    terms: Terminology | None = None
    texts: list[str] = field(default_factory=list)
    left: int = 0
    submitted: float = 0.0
    decoding_since: float | None = None
    # anchored search: line k's prepared sentence, its searches, and their n-best lists (None until each ends)
    searches: dict[int, tuple[Prepared, list[Prepared], list]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.future.timings = {}  # seconds per phase, set before the result: queue, preprocess, pbmt, ...

    def done_one(self, k: int, text: str) -> None:
        self.texts[k] = text
        self.left -= 1
        if self.left == 0 and not self.future.done():
            if self.decoding_since is not None:
                self.future.timings["nmt"] = time.perf_counter() - self.decoding_since
            self.future.set_result(self.texts)


@dataclass
class _Worker:
    """A decoding process and the sentences it holds, by key."""

    decoder: ProcessDecoder
    pending: dict[int, tuple[_Request, int, Prepared]] = field(default_factory=dict)
    closed: bool = False       # its feeding thread has ended and closed it
    starting: bool = False     # being started again after it died: it takes nothing meanwhile
    gone: bool = False         # it died during shutdown and is not started again: it takes nothing more


class DecodingService:
    """See the module docstring."""

    def __init__(self, translator: Translator, pool_sentences: int = 16, max_queue: int = 256,
                 refill: float = 0.25, prepare_processes: int = 0, decode_processes: int = 0) -> None:
        if pool_sentences < 1 or max_queue < 1 or not 0 <= refill <= 1 or prepare_processes < 0 \
                or decode_processes < 0:
            raise ValueError("pool_sentences and max_queue must be at least 1, refill in [0, 1], prepare_processes "
                             "and decode_processes at least 0")
        self.translator, self.pool_sentences, self.max_queue, self.refill = (translator, pool_sentences,
                                                                              max_queue, refill)
        self._lock = threading.Condition()
        self._requests: deque[_Request] = deque()          # waiting to be prepared
        self._ready: deque[tuple[_Request, int, Prepared]] = deque()  # prepared, waiting for the pool
        self._queued = 0                                    # sentences accepted and not yet in the pool
        self._decoding = 0                                  # sentences in the pool
        self._preparing = 0                                 # requests taken by the preparing thread, not handed on
        self._closing = False
        self._aborted = False                               # the shutdown time ran out: what was left has failed
        self._accepted: list[_Request] = []                 # requests accepted and maybe not answered yet
        self._lines_seen = 0                                # lines taken for preparing (their numbers in warnings)
        self._preparers = [ProcessPreparer(translator.system.folder, translator.batch_lines)
                           for _ in range(prepare_processes)]
        self._threads = [threading.Thread(target=self._prepare_loop, args=(preparer,), name="lmbr-prepare",
                                          daemon=True) for preparer in self._preparers or [None]]
        self._keys = 0                                      # the last key given to a sentence sent to a worker
        self.worker_ends: list[dict] = []                   # every decoding process that ended (`worker_end`)
        self._workers = [_Worker(ProcessDecoder(translator.system.folder))
                         for _ in range(decode_processes if translator.models is not None else 0)]
        for worker in self._workers:
            self._threads += [threading.Thread(target=self._feed_loop, args=(worker,), name="lmbr-feed", daemon=True),
                              threading.Thread(target=self._collect_loop, args=(worker,), name="lmbr-collect",
                                               daemon=True)]
        if translator.models is not None and not self._workers:
            self._threads.append(threading.Thread(target=self._decode_loop, name="lmbr-decode", daemon=True))
        for thread in self._threads:
            thread.start()

    @property
    def queue_length(self) -> int:
        """Sentences accepted and not yet decoding (under anchored search, each line's two searches count)."""
        return self._queued

    @property
    def decoding(self) -> int:
        """Sentences in the decoder's pool."""
        return self._decoding

    def submit(self, lines: list[str], terms: Terminology | None = None) -> Future:
        """The future translations of `lines` (one string per line), under the terminology `terms` if given."""
        future: Future = Future()
        with self._lock:
            if self._closing:
                raise Closed("the service is shutting down")
            if self._workers and all(w.gone for w in self._workers):
                raise Closed("no decoding process is left (none could be started again)")
            if self._queued + len(lines) > self.max_queue:
                raise Overloaded(f"{self._queued} sentences are waiting (at most {self.max_queue})")
            request = _Request(list(lines), future, terms, [""] * len(lines), len(lines), time.perf_counter())
            if not lines:
                future.set_result([])
                return future
            self._queued += len(lines)
            self._requests.append(request)
            self._accepted = [r for r in self._accepted if not r.future.done()] + [request]
            self._lock.notify_all()
        return future

    def begin_shutdown(self, seconds: float | None = None) -> None:
        """Accept nothing more and start no worker process again; the threads end once every accepted request is
        answered. After `seconds` (None: never), whatever is still unanswered fails with Closed."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            for preparer in self._preparers:
                preparer.restarts = False
            self._lock.notify_all()
        if seconds is not None:
            timer = threading.Timer(seconds, self.abort)
            timer.daemon = True
            timer.start()

    def abort(self) -> None:
        """Fail every accepted request not answered yet (Closed) and let every thread end now."""
        error = Closed("the server shut down before this request was translated")
        with self._lock:
            self._closing = self._aborted = True
            left = [r for r in self._accepted if not r.future.done()]
            self._requests.clear()
            self._ready.clear()
            for worker in self._workers:
                worker.pending.clear()
            self._queued = self._decoding = 0
            for request in left:  # under the lock, as every answer is given: none is answered twice
                request.future.set_exception(error)
            self._lock.notify_all()

    def close(self, timeout: float | None = None) -> None:
        """Accept nothing more; finish every accepted request, failing what is left after `timeout` seconds (None:
        wait however long it takes); stop the threads and the worker processes."""
        self.begin_shutdown()
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in self._threads):
            self.abort()
            for thread in self._threads:
                thread.join(5)
        for preparer in self._preparers:
            preparer.close()
        for worker in self._workers:
            worker.decoder.close(timeout=5 if self._aborted else 30)
        for thread in self._threads:  # the collecting threads record how their processes ended (`worker_ends`)
            thread.join(5)

    # ------------------------------------------------------------------------------------------------- threads
    def _finished(self) -> bool:
        """Closing, and nothing accepted is left anywhere but in the pool (the caller checks the pool)."""
        return self._closing and not self._requests and not self._preparing and not self._ready

    def _prepare_loop(self, preparer: ProcessPreparer | None) -> None:
        while True:
            with self._lock:
                while not self._requests and not self._closing:
                    self._lock.wait()
                if not self._requests:
                    self._lock.notify_all()
                    return
                requests = [self._requests.popleft()]  # and every waiting request that fits one prepare call
                lines = len(requests[0].lines)
                while self._requests and lines + len(self._requests[0].lines) <= self.translator.batch_lines:
                    lines += len(self._requests[0].lines)
                    requests.append(self._requests.popleft())
                self._preparing += len(requests)
                first_line = self._lines_seen + 1
                self._lines_seen += lines
            self._prepare(requests, first_line, preparer)

    def _prepare(self, requests: list[_Request], first_line: int, preparer: ProcessPreparer | None) -> None:
        """Prepares the requests in one call (PBMT, posteriors and L have fixed costs per call), and hands their
        sentences to the decoder. If the call fails, each request is prepared alone, so a bad line fails only its
        own request."""
        now = time.perf_counter()
        for request in requests:
            request.future.timings["queue"] = now - request.submitted
        lines = [line for request in requests for line in request.lines]
        terms = [request.terms for request in requests for _ in request.lines]
        try:
            prepared, spent = (preparer or self.translator).prepare_timed(lines, terms, first_line)
        except Exception as e:
            if len(requests) > 1:
                for request in requests:
                    self._prepare([request], first_line, preparer)
                    first_line += len(request.lines)
                return
            with self._lock:
                self._queued -= len(requests[0].lines)
                self._preparing -= 1
                if not requests[0].future.done():  # (an aborted shutdown may have failed it already)
                    requests[0].future.set_exception(e)
                self._lock.notify_all()
            return
        with self._lock:
            start = 0
            for request in requests:
                request.future.timings.update(spent)
                self._preparing -= 1
                for k, item in enumerate(prepared[start:start + len(request.lines)]):
                    if item.source_ids:
                        self._enqueue(request, k, item)
                    else:  # an empty line, or the PBMT system: nothing to decode
                        self._queued -= 1
                        request.done_one(k, item.pbmt if self.translator.models is None else "")
                start += len(request.lines)
            self._lock.notify_all()

    def _enqueue(self, request: _Request, k: int, item: Prepared, front: bool = False) -> None:
        """Line k's searches (one; two under anchored search, free and inside its lattice, the better answers) join
        the queue, at its end or its front; the line itself was counted when its request was accepted (called under
        the lock)."""
        searches = self.translator.searches(item)
        if len(searches) > 1:
            request.searches[k] = (item, searches, [None] * len(searches))
        entries = [(request, k, search) for search in searches]
        self._queued += len(entries) - 1
        if front:
            self._ready.extendleft(reversed(entries))
        else:
            self._ready.extend(entries)

    def _take(self, room: int) -> list[tuple[_Request, int, Prepared]]:
        """Up to `room` ready sentences, moved from the queue to the pool (called under the lock)."""
        entries = []
        while self._ready and len(entries) < room:
            entries.append(self._ready.popleft())
        self._queued -= len(entries)
        self._decoding += len(entries)
        now = time.perf_counter()
        for request, _, _ in entries:
            if request.decoding_since is None:
                request.decoding_since = now
        return entries

    def _decode_loop(self) -> None:
        translator = self.translator
        model = translator.decoding_model()
        pool: list[tuple[object, list[tuple[_Request, int, Prepared]]]] = []
        while True:
            with self._lock:
                while not pool and not self._ready and not self._finished():
                    self._lock.wait()
                if self._aborted or (not pool and self._finished()):
                    return
                entries = []
                if self._ready and self._decoding <= self.refill * self.pool_sentences:
                    entries = self._take(self.pool_sentences - self._decoding)
            try:
                if entries:
                    pool.append((translator.beam_batch([item for _, _, item in entries], model), entries))
                self._step(pool)
            except Exception as e:  # a failing batch fails its requests, and the service goes on
                held = [entry for _, batch_entries in pool for entry in batch_entries if entry is not None]
                self._fail(held + entries, e)  # (None: a sentence already answered)
                pool.clear()

    def _fail(self, entries: list[tuple[_Request, int, Prepared]], error: Exception) -> None:
        with self._lock:
            self._decoding = 0
            for request, _, _ in entries:
                if not request.future.done():
                    request.future.set_exception(error)

    def _step(self, pool: list) -> None:
        """One step of the pool (pipeline/decode/batching.py: step_pool)."""
        from pipeline.decode.batching import step_pool

        for entry, hyps in step_pool(pool):
            self._ended(entry, hyps)

    def _ended(self, entry: tuple[_Request, int, Prepared], hyps: list) -> None:
        """A search's n-best list is in. Once every search of its line has ended (under anchored search, the free
        one and the lattice copy: the better wins), the line's text goes to its request; or, when its terms were not
        met, it goes back to the front of the queue without them (Translator.missing_terms)."""
        request, k, item = entry
        if k in request.searches:
            with self._lock:
                item, searches, found = request.searches[k]
                found[next(j for j, search in enumerate(searches) if search is entry[2])] = hyps
                if any(result is None for result in found):  # the other search is still on its way
                    self._decoding -= 1
                    self._lock.notify_all()
                    return
                del request.searches[k]
            hyps = self.translator.better_search(item, found)
        if self.translator.missing_terms(item, hyps):
            with self._lock:
                self._decoding -= 1
                self._queued += 1
                self._enqueue(request, k, item, front=True)
                self._lock.notify_all()
            return
        text = self.translator.finish(item, hyps)
        with self._lock:
            self._decoding -= 1
            request.done_one(k, text)
            self._lock.notify_all()

    # ------------------------------------------------------------------------------------ decoding processes
    def _ready_for(self, worker: _Worker) -> bool:
        """Whether `worker` takes ready sentences now: its pool is down to the refill point, and no other worker's
        is smaller (called under the lock)."""
        held, running = len(worker.pending), [w for w in self._workers if not w.starting and not w.gone]
        return bool(self._ready) and not worker.starting and not worker.gone and \
            held <= self.refill * self.pool_sentences and held == min(len(w.pending) for w in running)

    def _share(self, worker: _Worker) -> int:
        """How many ready sentences `worker` takes: up to an even share of all the sentences waiting or decoding,
        within its pool (called under the lock)."""
        running = [w for w in self._workers if not w.gone]
        total = len(self._ready) + sum(len(w.pending) for w in running)
        even = -(-total // len(running))
        return min(self.pool_sentences - len(worker.pending), max(1, even - len(worker.pending)))

    def _feed_loop(self, worker: _Worker) -> None:
        """Hands ready sentences to one decoding process; when everything accepted is answered, closes it."""
        while True:
            with self._lock:
                while not self._ready_for(worker) and not (self._finished() and not self._decoding) \
                        and not worker.gone and not self._aborted:
                    self._lock.wait()
                if not self._ready_for(worker):
                    worker.closed = True
                    break
                keyed = []
                for entry in self._take(self._share(worker)):
                    self._keys += 1
                    worker.pending[self._keys] = entry
                    keyed.append((self._keys, entry[2]))
            try:
                worker.decoder.send(keyed)
            except OSError as e:  # it died: these sentences fail now (its collecting thread restarts it)
                self._lost(worker, [key for key, _ in keyed], e)
        worker.decoder.close()

    def _collect_loop(self, worker: _Worker) -> None:
        """Takes one decoding process's n-best lists as its sentences end; restarts it if it dies."""
        while True:
            message = worker.decoder.receive()
            if message is None:  # it exited: closed, or died (during shutdown: it is not started again)
                with self._lock:
                    closed, keys = worker.closed, list(worker.pending)
                    worker.gone = not closed and self._closing
                    worker.starting = not closed and not worker.gone
                    self._lock.notify_all()
                self._record_end(worker, closed)
                if keys:
                    self._lost(worker, keys, RuntimeError(f"the decoding process ended (exit code "
                                                          f"{worker.decoder.exitcode})"))
                if closed or worker.gone or not self._restart(worker):
                    self._fail_stranded()
                    return
                continue
            if message[0] == "error":
                self._lost(worker, message[1], message[2])
                continue
            with self._lock:
                ended = [(worker.pending.pop(key), hyps) for key, hyps in message[1] if key in worker.pending]
            for entry, hyps in ended:
                self._ended(entry, hyps)

    def _record_end(self, worker: _Worker, closed: bool, cause: str = "") -> None:
        """Keeps how a decoding process ended (`worker_ends`): its pid, its exit code (negative: the signal that
        killed it), and whether the service had closed it or it died (started again, unless shutting down)."""
        decoder = worker.decoder
        deadline = time.monotonic() + 5
        while decoder.exitcode is None and time.monotonic() < deadline:  # its pipe closes before it is reaped, by
            decoder.join(0.05)                                            # this thread or the one closing it
        with self._lock:
            cause = cause or ("closed" if closed else "died during shutdown" if worker.gone else "died")
            self.worker_ends.append({"worker": self._workers.index(worker), "pid": decoder.pid,
                                     "exitcode": decoder.exitcode, "cause": cause})

    def _restart(self, worker: _Worker) -> bool:
        """Starts a dead decoding process again. False when it could not start (it died while loading, or the system
        would not load): the worker is then gone, and said so on stderr unless the server is shutting down."""
        try:
            worker.decoder.start()
        except RuntimeError as e:
            self._record_end(worker, closed=False, cause="died while starting")
            with self._lock:
                worker.gone = True
                if not self._closing:
                    print(f"lmbr serve: {e}; it is not started again", file=sys.stderr, flush=True)
            return False
        finally:
            with self._lock:
                worker.starting = False
                self._lock.notify_all()
        return True

    def _fail_stranded(self) -> None:
        """With every decoding process gone (closed at shutdown, or dead and not started again): the sentences
        waiting for one fail their requests."""
        with self._lock:
            if not self._workers or any(not w.gone and not w.closed for w in self._workers) or not self._ready:
                return
            stranded = list(self._ready)
            self._ready.clear()
            self._queued -= len(stranded)
            error = Closed("the server shut down (its decoding processes ended) before this request was translated"
                           if self._closing else "no decoding process is left to translate this request")
            for request, _, _ in stranded:
                if not request.future.done():
                    request.future.set_exception(error)
            self._lock.notify_all()

    def _lost(self, worker: _Worker, keys: list[int], error: Exception) -> None:
        """The sentences `keys` of `worker` fail their requests (each at most once)."""
        with self._lock:
            entries = [worker.pending.pop(key) for key in keys if key in worker.pending]
            self._decoding -= len(entries)
            for request, _, _ in entries:
                if not request.future.done():
                    request.future.set_exception(error)
            self._lock.notify_all()


def translate_in_processes(translator: Translator, lines: Iterable[str], decode_processes: int,
                           ahead: int = 4) -> Iterator[str]:
    """Offline translation through a DecodingService with `decode_processes` decoding processes: `lines` in batches
    of the translator's batch_lines, at most `ahead` batches submitted and not yet given back (memory stays
    bounded), translations in input order. The lines are prepared in this process, under the translator's terms.
    An error of a batch (a bad line) is raised when its turn comes, after the batches before it."""
    decode = translator.system.settings.decode
    service = DecodingService(translator, pool_sentences=decode.get("batch_sentences", 16),
                              max_queue=translator.batch_lines * (ahead + 1), decode_processes=decode_processes)
    submitted: deque[Future] = deque()
    try:
        batch: list[str] = []
        for line in lines:
            batch.append(line)
            if len(batch) == translator.batch_lines:
                submitted.append(service.submit(batch, translator.terms))
                batch = []
                if len(submitted) >= ahead:
                    yield from submitted.popleft().result()
        if batch:
            submitted.append(service.submit(batch, translator.terms))
        while submitted:
            yield from submitted.popleft().result()
    finally:
        service.close()
