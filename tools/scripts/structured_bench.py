#!/usr/bin/env python3
"""Speed of constrained generation: tokens/s of one stream answering with a JSON schema
against the same stream unconstrained, on lockstep serve, and the same on a peer server
speaking llama-server's API (its `json_schema` field), requests alternating so that the
machine's drift falls on both alike. Prints medians and ratios.

usage: structured_bench.py LOCKSTEP MODEL [--peer PEER_SERVER_BINARY] [--rounds N] [--tokens N]
The schema asks for one long string (minLength 400; llama-server refuses 4000), so both constrained and free answers run
to --tokens; the free answer ignores end of generation."""
import argparse
import json
import statistics
import subprocess
import time
import urllib.request

from server_bench import free_port

SCHEMA = {"type": "object", "properties": {"story": {"type": "string", "minLength": 400}}, "required": ["story"]}
PROMPT = "Q: Tell me a long story about a cat, as JSON.\nA:"


def start(cmd, port):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return proc
        except Exception:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"server did not start: {cmd}")


def rate(port, constrained, tokens, seed):
    body = {"prompt": PROMPT, "max_tokens": tokens, "n_predict": tokens, "temperature": 0.8, "top_k": 40, "top_p": 0.95,
            "min_p": 0.05, "seed": seed}
    if constrained:
        body["json_schema"] = SCHEMA
    else:
        body["ignore_eos"] = True
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=600) as r:
        resp = json.load(r)
    took = time.monotonic() - t0
    n = resp["usage"]["completion_tokens"]
    if constrained:
        text = resp["choices"][0]["text"]
        assert text.startswith('{'), text[:80]
    return n / took, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lockstep")
    ap.add_argument("model")
    ap.add_argument("--peer")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=128)
    a = ap.parse_args()
    servers = {}
    port = free_port()
    servers["lockstep"] = (start([a.lockstep, "serve", "-m", a.model, "--port", str(port), "-np", "1", "-c", "2048"], port), port)
    if a.peer:
        port = free_port()
        servers["peer"] = (start([a.peer, "-m", a.model, "--port", str(port), "-np", "1", "-c", "2048"], port), port)
    rates = {(name, c): [] for name in servers for c in (False, True)}
    try:
        for name, (_, port) in servers.items():  # warm-up
            rate(port, False, 16, 0), rate(port, True, 16, 0)
        for r in range(a.rounds):
            for name, (_, port) in servers.items():
                for c in (False, True):
                    tps, n = rate(port, c, a.tokens, 100 + r)
                    rates[(name, c)].append(tps)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
    med = {k: statistics.median(v) for k, v in rates.items()}
    for (name, c), v in rates.items():
        print(f"{name:9s} {'json_schema' if c else 'free':12s} median {med[(name, c)]:7.1f} t/s  ({', '.join(f'{x:.1f}' for x in v)})")
    print(f"lockstep json_schema / free: {med[('lockstep', True)] / med[('lockstep', False)]:.3f}x")
    if a.peer:
        print(f"peer json_schema / free: {med[('peer', True)] / med[('peer', False)]:.3f}x")
        print(f"json_schema lockstep / peer: {med[('lockstep', True)] / med[('peer', True)]:.3f}x")
        print(f"free lockstep / peer: {med[('lockstep', False)] / med[('peer', False)]:.3f}x")


if __name__ == "__main__":
    main()
