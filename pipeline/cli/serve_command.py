"""`lmbr serve --system DIR`: an exported system as an HTTP translation service (pipeline/deploy/http_server.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.cli.arguments import positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="serve an exported system over HTTP (LibreTranslate's /translate API)")
    p.add_argument("--system", required=True, help="an exported system folder (ExportSystem, reproduce-table "
                                                   "--export)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=5000, help="port (default 5000; 0: any free port, printed)")
    p.add_argument("--pool-sentences", type=positive_int,
                   help="sentences decoded together across requests (default: the system's batch_sentences)")
    p.add_argument("--refill", type=float, default=0.25,
                   help="start waiting sentences when those decoding drop to this fraction of --pool-sentences "
                        "(default 0.25; 1: whenever there is room; see docs/benchmarks/serving.md)")
    p.add_argument("--max-queue", type=positive_int, default=256,
                   help="sentences accepted and waiting; past it, requests get 503 with Retry-After (default 256)")
    p.add_argument("--max-chars", type=positive_int, default=5000, help="characters per request (413 past it)")
    p.add_argument("--max-lines", type=positive_int, default=100, help="lines per request (413 past it)")
    p.add_argument("--prepare-processes", type=int,
                   help="worker processes running the PBMT search, posteriors and L of the hybrids beside the decoder "
                        "(default: 1 for systems with lattices, 0 otherwise; 0: in the server's own process)")
    p.add_argument("--decode-processes", type=int,
                   help="decoding processes of one thread each, each with a pool of its own (default on a CPU: "
                        "--threads, or torch's thread count; 0: one pool stepped with --threads threads in the "
                        "server's own process, the default on a GPU; docs/benchmarks/serving.md)")
    p.add_argument("--shutdown-timeout", type=float, default=20.0,
                   help="seconds after SIGTERM or SIGINT (to the server or its process group) within which accepted "
                        "requests are answered; what is left then gets 503 and the server exits (default 20)")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when there is a GPU, else cpu)")
    p.add_argument("--threads", type=positive_int, help="CPU threads of torch (default: torch's)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import socket

    import torch

    from pipeline.deploy.http_server import ServerLimits, create_app, run_server
    from pipeline.deploy.decoding_service import DecodingService
    from pipeline.deploy.system import load_system
    from pipeline.deploy.translator import Translator

    if args.threads:
        torch.set_num_threads(args.threads)
    system = load_system(Path(args.system))
    processes = args.prepare_processes
    if processes is None:
        processes = 1 if system.kind.needs_lattices and system.kind.models else 0
    if processes < 0:
        raise SystemExit("lmbr serve: --prepare-processes must be at least 0")
    # with preparing processes, this one never runs the PBMT: it does not load it
    translator = Translator(system, device=args.device, decode_only=processes > 0)
    decode = translator.system.settings.decode
    decoders = args.decode_processes
    if decoders is None:
        on_cpu = translator.models is not None and translator.models.device.type == "cpu"
        decoders = torch.get_num_threads() if on_cpu else 0
    if decoders < 0:
        raise SystemExit("lmbr serve: --decode-processes must be at least 0")
    service = DecodingService(translator, pool_sentences=args.pool_sentences or decode.get("batch_sentences", 16),
                              max_queue=args.max_queue, refill=args.refill, prepare_processes=processes,
                              decode_processes=decoders)
    if args.shutdown_timeout <= 0:
        raise SystemExit("lmbr serve: --shutdown-timeout must be above 0")
    app = create_app(service, ServerLimits(max_chars=args.max_chars, max_lines=args.max_lines),
                     shutdown_seconds=5.0)
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)  # clients that connect once the address is announced wait in the backlog, not refused
    host, port = sock.getsockname()[:2]
    print(f"lmbr serve: {translator.system.name} ({translator.system.source}-{translator.system.target}) on "
          f"http://{host}:{port}/", file=sys.stderr, flush=True)
    run_server(app, service, sock, args.shutdown_timeout)
    print("lmbr serve: stopped", file=sys.stderr)
    return 0
