"""The own HTTP/1.1 reply reader against httpx's transport, at the request rate of a fast GPU server.

The server is the loopback fake in its own process (deterministic obedient
answers after ``--latency``, 5 ms by default: a GPU server on short replies).
Each run is a fresh client process: one :class:`OpenAICompatibleModel` at
``--concurrency`` ``--in-flight`` (128), and as many threads each calling
``complete`` in a loop, until ``--requests`` calls have been answered (after
an untimed warm-up that opens the connections and teaches the patience).
Two clients, in interleaved pairs (the order alternates: AB, BA, ...):

- ``reader``: the stack as shipped, with :class:`lits.lm.http.lean_transport.LeanHTTPTransport`
  (own keep-alive stack and HTTP/1.1 reply reader; hedged calls sent inline);
- ``httpx``: the same stack over :class:`httpx.HTTPTransport` (httpx's pool
  and httpcore's reader; hedged calls sent from copy threads, as a transport
  that cannot cut a request short needs).

Printed per client: median wall seconds, calls per second and client CPU
milliseconds per call (this process only; the server is another), each with
its range; and per pair the wall-time ratio reader/httpx, median and range.
The decision rule (issue 42 item 7): the reader stays only if its wall-time
gain is beyond the run-to-run spread.  (The server prints a reset traceback
for each hedged copy cut short: send stderr to /dev/null.)

    python benchmarks/transport.py [--latency 0.005] [--in-flight 128] [--requests 4000] [--pairs 5]
        [--hedge-share 0.1] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from lits.testing.servers.openai_compat import obedient_server_process as loopback_server

CLIENTS = ("reader", "httpx")


def use_httpx_transport(model: Any, concurrency: int) -> None:
    """Put httpx's own transport where the lean one sits at the bottom of the model's stack (as
    :func:`lits.lm.http.stack.wire_transport` built it before the reader)."""
    import httpx

    limits = httpx.Limits(max_connections=max(100, concurrency * 2), max_keepalive_connections=max(20, concurrency))
    hedging = model._transport.hedging
    gated = hedging.inner
    gated.inner.close()
    gated.inner = httpx.HTTPTransport(limits=limits, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    hedging.interruptible = lambda request: False


def one_client(client: str, base_url: str, requests: int, in_flight: int, warmup: int) -> dict[str, Any]:
    """Runs in its own process: ``requests`` calls from ``in_flight`` threads; wall and CPU of the timed part."""
    from lits.lm.openai_compat import OpenAICompatibleModel

    model = OpenAICompatibleModel("bench", base_url, concurrency=in_flight)
    if client == "httpx":
        use_httpx_transport(model, in_flight)
    counter = iter(range(10**9))
    lock = threading.Lock()

    def work(total: int) -> None:
        while True:
            with lock:
                i = next(counter)
            if i >= total:
                return
            model.complete(f"question {i}", max_tokens=8)

    def wave(total: int) -> None:
        nonlocal counter
        counter = iter(range(total))
        threads = [threading.Thread(target=work, args=(total,)) for _ in range(in_flight)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    wave(warmup)
    before = model.fault_stats()
    started, cpu = time.perf_counter(), time.process_time()
    wave(requests)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    after = model.fault_stats()
    model.close()
    return {
        "client": client,
        "wall_s": round(wall, 3),
        "calls_per_s": round(requests / wall, 1),
        "cpu_ms_per_call": round(1000 * cpu / requests, 3),
        "server_requests": after["server_requests"] - before["server_requests"],
        "retries": after["retries"] - before["retries"],
        "hedged": after.get("hedged_calls", 0) - before.get("hedged_calls", 0),
    }


def run_client(client: str, base_url: str, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "LITS_HEDGE_SHARE": str(args.hedge_share)}
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            client,
            "--base-url",
            base_url,
            "--requests",
            str(args.requests),
            "--in-flight",
            str(args.in_flight),
            "--warmup",
            str(args.warmup),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def spread(values: list[float], digits: int = 3) -> str:
    """The median with the range."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.005, help="the server's reply time (seconds)")
    parser.add_argument("--in-flight", type=int, default=128, help="calls in flight (and --concurrency)")
    parser.add_argument("--requests", type=int, default=4000, help="timed calls per run")
    parser.add_argument("--warmup", type=int, default=512, help="untimed calls first, per run")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--hedge-share", type=float, default=0.1, help="LITS_HEDGE_SHARE of both clients")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    parser.add_argument("--child", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_client(args.child, args.base_url, args.requests, args.in_flight, args.warmup)))
        return

    runs: list[dict[str, Any]] = []
    with loopback_server(args.latency) as base_url:
        for pair in range(args.pairs):
            order = CLIENTS if pair % 2 == 0 else CLIENTS[::-1]
            for client in order:
                figures = {"pair": pair, **run_client(client, base_url, args)}
                print(json.dumps(figures), flush=True)
                runs.append(figures)
    by = {client: [run for run in runs if run["client"] == client] for client in CLIENTS}
    ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(by["reader"], by["httpx"])]
    print(
        f"\n{args.pairs} pairs, {args.requests} calls each, {args.in_flight} in flight, "
        f"{args.latency * 1000:g} ms replies, load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    print(f"{'client':8} {'wall s':>24} {'calls/s':>26} {'client CPU ms/call':>24}")
    for client in CLIENTS:
        rows = by[client]
        print(
            f"{client:8} {spread([r['wall_s'] for r in rows]):>24} "
            f"{spread([r['calls_per_s'] for r in rows], 0):>26} "
            f"{spread([r['cpu_ms_per_call'] for r in rows]):>24}"
        )
    print(f"wall reader/httpx per pair: {spread(ratios)}")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "runs": runs,
                    "wall_ratio_reader_to_httpx": ratios,
                    "settings": {k: v for k, v in vars(args).items() if k not in ("out", "child", "base_url")},
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
