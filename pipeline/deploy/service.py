"""Concurrent requests decoded together: the decoder's streaming refill (ALGORITHMS.md section 6) across requests.

    service = DecodingService(translator, pool_sentences=16, max_queue=256)
    future = service.submit(["Ein Satz.", "Noch einer."])   # concurrent.futures.Future of the translations
    service.submit(lines, terms=Terminology.parse(...))     # with terminology constraints (terms.py)
    future.timings                                          # its seconds per phase: queue, preprocess, pbmt,
                                                            # posteriors, nmt (from its first sentence's start)
    service.close()                                         # finishes every accepted request, then stops

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
  default refill 0.25 lets sentences gather first (docs/RESULTS.md, serve_load). A request is answered when its
  last sentence ends; a sentence whose terms could not be met goes back to the front of the queue without them
  (Translator.missing_terms).

Each sentence follows the search it would follow alone (batch invariance, up to floating-point differences of
batched products), so the answers equal offline translation. The queue is bounded in sentences: `submit` refuses
a request that would overfill it (:class:`Overloaded`), and refuses everything after `close` (:class:`Closed`).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field

import torch

from pipeline.deploy.preparer import ProcessPreparer
from pipeline.deploy.terms import Terminology
from pipeline.deploy.translator import Prepared, Translator

__all__ = ["Closed", "DecodingService", "Overloaded"]


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

    def __post_init__(self) -> None:
        self.future.timings = {}  # seconds per phase, set before the result: queue, preprocess, pbmt, ...

    def done_one(self, k: int, text: str) -> None:
        self.texts[k] = text
        self.left -= 1
        if self.left == 0 and not self.future.done():
            if self.decoding_since is not None:
                self.future.timings["nmt"] = time.perf_counter() - self.decoding_since
            self.future.set_result(self.texts)


class DecodingService:
    """See the module docstring."""

    def __init__(self, translator: Translator, pool_sentences: int = 16, max_queue: int = 256,
                 refill: float = 0.25, prepare_processes: int = 0) -> None:
        if pool_sentences < 1 or max_queue < 1 or not 0 <= refill <= 1 or prepare_processes < 0:
            raise ValueError("pool_sentences and max_queue must be at least 1, refill in [0, 1], prepare_processes "
                             "at least 0")
        self.translator, self.pool_sentences, self.max_queue, self.refill = (translator, pool_sentences,
                                                                              max_queue, refill)
        self._lock = threading.Condition()
        self._requests: deque[_Request] = deque()          # waiting to be prepared
        self._ready: deque[tuple[_Request, int, Prepared]] = deque()  # prepared, waiting for the pool
        self._queued = 0                                    # sentences accepted and not yet in the pool
        self._decoding = 0                                  # sentences in the pool
        self._preparing = 0                                 # requests taken by the preparing thread, not handed on
        self._closing = False
        self._lines_seen = 0                                # lines taken for preparing (their numbers in warnings)
        self._preparers = [ProcessPreparer(translator.system.folder, translator.batch_lines)
                           for _ in range(prepare_processes)]
        self._threads = [threading.Thread(target=self._prepare_loop, args=(preparer,), name="lmbr-prepare",
                                          daemon=True) for preparer in self._preparers or [None]]
        if translator.models is not None:
            self._threads.append(threading.Thread(target=self._decode_loop, name="lmbr-decode", daemon=True))
        for thread in self._threads:
            thread.start()

    @property
    def queue_length(self) -> int:
        """Sentences accepted and not yet decoding."""
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
            if self._queued + len(lines) > self.max_queue:
                raise Overloaded(f"{self._queued} sentences are waiting (at most {self.max_queue})")
            request = _Request(list(lines), future, terms, [""] * len(lines), len(lines), time.perf_counter())
            if not lines:
                future.set_result([])
                return future
            self._queued += len(lines)
            self._requests.append(request)
            self._lock.notify_all()
        return future

    def close(self, timeout: float | None = None) -> None:
        """Accept nothing more; finish every accepted request; stop the threads."""
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        for thread in self._threads:
            thread.join(timeout)
        for preparer in self._preparers:
            preparer.close()

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
                self._lock.notify_all()
            requests[0].future.set_exception(e)
            return
        with self._lock:
            start = 0
            for request in requests:
                request.future.timings.update(spent)
                self._preparing -= 1
                for k, item in enumerate(prepared[start:start + len(request.lines)]):
                    if item.source_ids:
                        self._ready.append((request, k, item))
                    else:  # an empty line, or the PBMT system: nothing to decode
                        self._queued -= 1
                        request.done_one(k, item.pbmt if self.translator.models is None else "")
                start += len(request.lines)
            self._lock.notify_all()

    def _decode_loop(self) -> None:
        from pipeline.decode.beam_search import BeamBatch
        from pipeline.nmt.batching import pad_sequences
        from pipeline.nmt.interface import Ensemble

        translator = self.translator
        model, device = translator.models.ensemble, translator.models.device
        if isinstance(model, Ensemble) and len(model) == 1:  # as decode_sources does
            model = model.models[0]
        pool: list[tuple[BeamBatch, list[tuple[_Request, int, Prepared]]]] = []
        while True:
            with self._lock:
                while not pool and not self._ready and not self._finished():
                    self._lock.wait()
                if not pool and self._finished():
                    return
                entries = []
                if self._ready and self._decoding <= self.refill * self.pool_sentences:
                    while self._ready and len(entries) < self.pool_sentences - self._decoding:
                        entries.append(self._ready.popleft())
                    self._queued -= len(entries)
                    self._decoding += len(entries)
                    now = time.perf_counter()
                    for request, _, _ in entries:
                        if request.decoding_since is None:
                            request.decoding_since = now
            try:
                if entries:
                    items = [item for _, _, item in entries]
                    with torch.inference_mode():
                        src, lengths = pad_sequences([item.source_ids for item in items], model.pad_id)
                        limits = torch.tensor([item.limit for item in items], dtype=torch.long)
                        factory = translator.hooks(items)
                        hook = factory(list(range(len(items))), device) if factory is not None else None
                        pool.append((BeamBatch(model, src.to(device), lengths.to(device), limits.to(device),
                                               translator.settings, hook), entries))
                self._step(pool)
            except Exception as e:  # a failing batch fails its requests, and the service goes on
                self._fail([entry for _, batch_entries in pool for entry in batch_entries] + entries, e)
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

        _, entries, ended = step_pool(pool)
        for position, hyps in ended:
            request, k, item = entries[position]
            if self.translator.missing_terms(item, hyps):  # once more, without its terms, before anything else
                with self._lock:
                    self._decoding -= 1
                    self._queued += 1
                    self._ready.appendleft((request, k, item))
                continue
            text = self.translator.finish(item, hyps)
            with self._lock:
                self._decoding -= 1
                request.done_one(k, text)
