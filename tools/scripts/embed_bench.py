#!/usr/bin/env python3
"""Speed of /v1/embeddings: inputs per second (and prompt tokens per second) of lockstep serve
against a peer server speaking llama-server's API (started with --embedding), on the same model
and pooling, requests alternating so that the machine's drift falls on both alike. Each request
carries --batch inputs (sentences of 20 to 80 words); --clients requests are in flight at once.
Prints medians and ratios.

usage: embed_bench.py LOCKSTEP MODEL [--peer PEER_SERVER_BINARY] [--pooling mean] [--rounds N]
                      [--batch N] [--clients N]"""
import argparse
import json
import random
import statistics
import threading
import time
import urllib.request

from structured_bench import free_port, start

WORDS = ("the a cat dog river mountain city light music paper stone garden window winter summer engine "
         "language history science market bridge forest ocean quiet bright ancient modern small large").split()


def texts(n, seed):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 80))) + "." for _ in range(n)]


def post(port, inputs):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings", data=json.dumps({"input": inputs}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        resp = json.load(r)
    assert len(resp["data"]) == len(inputs), resp
    return resp["usage"]["prompt_tokens"]


def rate(port, batch, clients, seed):
    """(inputs/s, tokens/s) of `clients` concurrent requests of `batch` inputs each."""
    tokens = [0] * clients

    def one(i):
        tokens[i] = post(port, texts(batch, seed * 100 + i))

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - t0
    return batch * clients / took, sum(tokens) / took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lockstep")
    ap.add_argument("model")
    ap.add_argument("--peer")
    ap.add_argument("--pooling", default="mean")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--clients", type=int, default=4)
    a = ap.parse_args()
    np_ = str(a.clients)
    servers = {}
    port = free_port()
    servers["lockstep"] = (start([a.lockstep, "serve", "-m", a.model, "--port", str(port), "-np", np_, "-c", str(512 * a.clients),
                                  "--pooling", a.pooling], port), port)
    if a.peer:
        port = free_port()
        servers["peer"] = (start([a.peer, "-m", a.model, "--port", str(port), "-np", np_, "-c", str(512 * a.clients), "--embedding",
                                  "--pooling", a.pooling], port), port)
    rates = {name: [] for name in servers}
    try:
        for name, (_, port) in servers.items():  # warm-up
            rate(port, 2, 1, 0)
        for r in range(a.rounds):
            for name, (_, port) in servers.items():
                rates[name].append(rate(port, a.batch, a.clients, 1 + r))
    finally:
        for proc, _ in servers.values():
            proc.terminate()
    med = {name: (statistics.median(x for x, _ in v), statistics.median(t for _, t in v)) for name, v in rates.items()}
    for name, v in rates.items():
        print(f"{name:9s} median {med[name][0]:7.1f} inputs/s, {med[name][1]:8.1f} tokens/s  "
              f"({', '.join(f'{x:.1f}' for x, _ in v)} inputs/s)")
    if a.peer:
        print(f"embeddings lockstep / peer: {med['lockstep'][0] / med['peer'][0]:.3f}x (inputs/s)")


if __name__ == "__main__":
    main()
