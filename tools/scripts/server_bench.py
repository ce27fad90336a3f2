#!/usr/bin/env python3
"""Serving speed of `lockstep serve` against llama.cpp's `llama-server` on the same GGUF file,
in one run, the two alternating round by round (shared machines are noisy; ratios are taken
within a round). Stdlib only.

Per round and server:
  * aggregate generated tokens/s with 1, 4 and 8 concurrent streams (servers with -np 4, and
    -np 8 for 8 streams): each stream a distinct prompt, greedy, N tokens (ignore_eos);
  * time to first token of a request (a 147-token prompt) that arrives while three others
    decode (-np 4).

usage: server_bench.py --lockstep BIN --llama-server BIN --model GGUF [--rounds 2] [--tokens 64]
                       [--backend cuda] [--gpu-layers 99] [--only 8]
--backend is lockstep's backend and --gpu-layers llama-server's -ngl (a GPU comparison names
both); --only 8 runs the 8-stream test alone.
"""
import argparse
import ctypes
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Proc:
    def __init__(self, cmd, port):
        self.port = port
        self.log = open(f"/tmp/server-bench-{port}.log", "w")
        libc = ctypes.CDLL("libc.so.6")
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                  preexec_fn=lambda: libc.prctl(1, signal.SIGKILL))  # dies with this script
        t0 = time.time()
        while True:
            if self.p.poll() is not None:
                raise RuntimeError(f"{cmd[0]} exited: see {self.log.name}")
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.time() - t0 > 300:
                raise RuntimeError(f"{cmd[0]} not ready: see {self.log.name}")
            time.sleep(0.1)

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()


def stream(port, prompt, n, first_token=None):
    """Streams a completion; returns (tokens generated, seconds to first text, seconds)."""
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = {"prompt": prompt, "max_tokens": n, "temperature": 0, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}}
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.read()
    ttft, usage = None, None
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        if line == b"data: [DONE]":
            break
        ev = json.loads(line[6:])
        if ev.get("usage"):
            usage = ev["usage"]
        if ttft is None and any(ch.get("text") for ch in ev.get("choices", [])):
            ttft = time.perf_counter() - t0
            if first_token is not None:
                first_token.set()
    c.close()
    return (usage or {}).get("completion_tokens", n), ttft, time.perf_counter() - t0


PROMPTS = [f"Story {i}: once upon a time there was a {w} who lived by the" for i, w in
           enumerate("king queen fox baker sailor painter miller farmer".split())]
LONG = "Summarise the following notes. " + " ".join(f"Note {i}: the meeting on day {i} covered item {i * 3}." for i in range(9))


def aggregate(port, streams, n):
    out = [None] * streams
    t0 = time.perf_counter()
    th = [threading.Thread(target=lambda i=i: out.__setitem__(i, stream(port, PROMPTS[i], n))) for i in range(streams)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return sum(o[0] for o in out) / (time.perf_counter() - t0)


def ttft_under_load(port, n):
    started = [threading.Event() for _ in range(3)]
    th = [threading.Thread(target=lambda i=i: stream(port, PROMPTS[i], n, started[i])) for i in range(3)]
    for t in th:
        t.start()
    for e in started:
        e.wait()
    time.sleep(0.2)  # the three are decoding
    _, ttft, _ = stream(port, LONG, 4)
    for t in th:
        t.join()
    return ttft


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lockstep", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--gpu-layers", type=int, default=0)
    ap.add_argument("--only", type=int, default=0, help="only the test of this many streams")
    a = ap.parse_args()
    ctx = 1024

    def launch(kind, np_):
        port = free_port()
        if kind == "lockstep":
            cmd = [a.lockstep, "serve", "-m", a.model, "--port", str(port), "-np", str(np_), "-c", str(ctx), "-t", str(a.threads),
                   "--backend", a.backend]
        else:  # llama-server's -c is the whole cache, shared by the slots
            cmd = [a.llama_server, "-m", a.model, "--port", str(port), "-np", str(np_), "-c", str(ctx * np_), "-t", str(a.threads),
                   "-tb", str(a.threads), "--no-webui", "-ngl", str(a.gpu_layers)]
        p = Proc(cmd, port)
        stream(port, "warm up", 4)
        return p

    tests = [("tg aggregate, 1 stream (-np 4)", 4, lambda port: aggregate(port, 1, a.tokens), "t/s"),
             ("tg aggregate, 4 streams (-np 4)", 4, lambda port: aggregate(port, 4, a.tokens), "t/s"),
             ("tg aggregate, 8 streams (-np 8)", 8, lambda port: aggregate(port, 8, a.tokens), "t/s"),
             ("time to first token beside 3 decoding (-np 4)", 4, lambda port: ttft_under_load(port, a.tokens), "s")]
    if a.only:
        tests = [t for t in tests if t[0].startswith(f"tg aggregate, {a.only} stream")]
    rows = {name: {"lockstep": [], "llama-server": []} for name, *_ in tests}
    for rnd in range(a.rounds):
        for kind in ("lockstep", "llama-server") if rnd % 2 == 0 else ("llama-server", "lockstep"):
            by_np = {}
            for name, np_, fn, unit in tests:
                if np_ not in by_np:
                    for p in by_np.values():
                        p.stop()
                    by_np = {np_: launch(kind, np_)}
                v = fn(by_np[np_].port)
                rows[name][kind].append(v)
                print(f"round {rnd + 1} {kind:12s} {name}: {v:.3f} {unit}", flush=True)
            for p in by_np.values():
                p.stop()
    print("\n| test | lockstep | llama-server | ratio (higher is better for lockstep) |\n|---|---:|---:|---:|")
    for name, _, _, unit in tests:
        ls_v = sum(rows[name]["lockstep"]) / a.rounds
        ll_v = sum(rows[name]["llama-server"]) / a.rounds
        ratio = ls_v / ll_v if unit == "t/s" else ll_v / ls_v
        print(f"| {name} | {ls_v:.3f} {unit} | {ll_v:.3f} {unit} | {ratio:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())
