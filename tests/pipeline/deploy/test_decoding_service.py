"""DecodingService: sentences of concurrent requests decoded together give the offline translations."""
from __future__ import annotations

import os
import random
import signal
import threading
import time

import pytest

from pipeline.deploy.decoding_service import Closed, DecodingService, Overloaded
from pipeline.deploy.system import load_system
from pipeline.deploy.translator import Translator


@pytest.mark.parametrize("name, processes, decoders", [("LNMT", 0, 0), ("TNMT-lat", 0, 0), ("PBMT", 0, 0),
                                                        ("LNMT", 2, 0), ("TNMT-lat", 1, 0), ("LNMT", 1, 2),
                                                        ("TNMT-lat", 0, 2), ("FNMT", 0, 1)])
def test_concurrent_requests_get_the_offline_translations(exported_systems, name, processes, decoders):
    exports, raw = exported_systems
    system = load_system(exports[name].folder())
    offline = dict(zip(raw, Translator(system).translate(raw)))
    service = DecodingService(Translator(system), pool_sentences=3, max_queue=1000, prepare_processes=processes,
                              decode_processes=decoders)
    rng = random.Random(4)
    requests = [rng.sample(raw, rng.randint(1, 4)) + ([""] if k % 3 == 0 else []) for k in range(24)]
    answers: dict[int, list[str]] = {}

    def client(k: int) -> None:
        answers[k] = service.submit(requests[k]).result(timeout=120)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    service.close()
    assert {k: answers[k] for k in range(len(requests))} == {
        k: [offline[line] if line else "" for line in lines] for k, lines in enumerate(requests)}
    with pytest.raises(Closed):
        service.submit(["Der Mann sieht ein Haus."])


def test_a_full_queue_refuses_and_close_finishes_what_was_accepted(exported_systems):
    exports, raw = exported_systems
    translator = Translator(load_system(exports["FNMT"].folder()))
    service = DecodingService(translator, pool_sentences=1, max_queue=len(raw))
    first = service.submit(raw)  # one sentence decodes at a time: the rest wait in the queue
    with pytest.raises(Overloaded, match="waiting"):
        service.submit(raw[:2])
    service.close()
    assert first.result(timeout=0) == list(Translator(load_system(exports["FNMT"].folder())).translate(raw))


def test_a_line_the_model_cannot_take_fails_its_request_only(exported_systems):
    exports, raw = exported_systems
    service = DecodingService(Translator(load_system(exports["TNMT"].folder())), pool_sentences=2)
    too_long = " ".join(["Haus"] * 5000)
    bad, good = service.submit([raw[0], too_long]), service.submit(raw[:2])
    with pytest.raises(Exception, match="positions"):
        bad.result(timeout=60)
    assert len(good.result(timeout=60)) == 2
    service.close()


def test_a_preparing_process_that_died_is_replaced(exported_systems):
    exports, raw = exported_systems
    system = load_system(exports["LNMT"].folder())
    offline = list(Translator(system).translate(raw[:2]))
    service = DecodingService(Translator(system), pool_sentences=2, prepare_processes=1)
    assert service.submit(raw[:2]).result(timeout=120) == offline
    first = service._preparers[0]._process
    first.kill()
    first.join()
    assert service.submit(raw[:2]).result(timeout=120) == offline
    assert service._preparers[0]._process.pid != first.pid
    service.close()


def test_a_decoding_process_that_died_fails_its_sentences_and_is_replaced(exported_systems):
    exports, raw = exported_systems
    system = load_system(exports["FNMT"].folder())
    offline = list(Translator(system).translate(raw[:3]))
    service = DecodingService(Translator(system), pool_sentences=2, decode_processes=1)
    assert service.submit(raw[:3]).result(timeout=120) == offline
    worker = service._workers[0]
    first = worker.decoder._process
    os.kill(first.pid, signal.SIGSTOP)  # it takes the request into its pipe and cannot answer: it dies holding it
    request = service.submit(raw[:1])
    while not worker.pending:
        time.sleep(0.01)
    first.kill()
    first.join()
    with pytest.raises(RuntimeError, match="decoding process ended"):
        request.result(timeout=120)
    assert service.submit(raw[:3]).result(timeout=120) == offline
    assert worker.decoder._process.pid != first.pid
    service.close()
    assert not worker.decoder._process.is_alive()
