"""A bounded load test of `lockstep serve` on loopback: N requests at concurrency C over D
distinct prompts (greedy; streamed and not), each answer checked against the same prompt
served alone, so a lost, failed or mixed-up response is counted. Prints p50/p99 latency
and throughput; exits 1 on any error or mismatch. It stops by itself: a fixed request
count, and a timeout on every request.

usage: load_test.py BINARY MODEL [--requests N] [--concurrency C] [--distinct D]
                    [--max-tokens T] [--mpi-np N] [--cancel-every K] [--slow-every K] [-- serve args...]
  --mpi-np N: the server as N pipeline stages under mpirun on this machine
  --cancel-every K: every K-th request is a stream its client hangs up after two events
  --slow-every K: every K-th request is a stream read slowly (50 ms per event), still checked
  A soak (issue 32): --requests 1000 --concurrency 16 --cancel-every 7 --slow-every 5 --max-tokens 16.
  The server's RSS before and after is printed; 503s (a full queue) are counted apart.
"""
import argparse
import os
import concurrent.futures as cf
import statistics
import sys
import time

from harness import Server, generate, gen_path, mpi_wrapper, normalise_stream


def main():
    argv = sys.argv[1:]
    serve_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, serve_args = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--distinct", type=int, default=20)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--mpi-np", type=int, default=0)
    ap.add_argument("--cancel-every", type=int, default=0)
    ap.add_argument("--slow-every", type=int, default=0)
    a = ap.parse_args(argv)
    binary = mpi_wrapper(a.binary, a.mpi_np) if a.mpi_np else a.binary

    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()
    prompts = [f"Request {i}: " + " ".join(words[(i * 7 + k) % len(words)] for k in range(3 + i % 9)) for i in range(a.distinct)]

    def req(i):
        chat = i % 2 == 1
        body = {"max_tokens": a.max_tokens, "temperature": 0}
        if chat:
            body["messages"] = [{"role": "user", "content": prompts[i % a.distinct]}]
        else:
            body["prompt"] = prompts[i % a.distinct]
        return body, chat

    with Server(binary, a.model, serve_args, see_loading=not a.mpi_np) as srv:
        ref = [generate(srv, *req(i), stream=False) for i in range(a.distinct)]

        def rss_mib():
            with open(f"/proc/{srv.proc.pid}/status") as f:
                return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:"))

        rss0 = rss_mib()

        def one(n):
            i = n % a.distinct
            body, chat = req(i)
            t0 = time.perf_counter()
            cancel = a.cancel_every and n % a.cancel_every == a.cancel_every - 1
            slow = a.slow_every and n % a.slow_every == a.slow_every - 1 and not cancel
            try:
                if cancel or slow:
                    sb = dict(body, stream=True, stream_options={"include_usage": True})
                    hang_up = lambda k, ev: k < 1  # noqa: E731 - two events, then the client leaves
                    read_slowly = lambda k, ev: time.sleep(0.05) or True  # noqa: E731
                    events, done = srv.stream(gen_path(chat), sb, on_chunk=hang_up if cancel else read_slowly)
                    if cancel:
                        return n, time.perf_counter() - t0, None, 0, "cancelled"
                    out = normalise_stream(events, chat)
                else:
                    out = generate(srv, body, chat, stream=(n // a.distinct) % 2 == 1)
            except Exception as e:  # noqa: BLE001 - counted
                if "HTTP 503" in repr(e) or "503" in repr(e)[:40]:
                    return n, time.perf_counter() - t0, None, 0, "refused"
                return n, time.perf_counter() - t0, f"error: {e!r}", 0, None
            dt = time.perf_counter() - t0
            if out != ref[i]:
                return n, dt, f"mismatch: {out} vs {ref[i]}", 0, None
            return n, dt, None, out["completion_tokens"], None

        t0 = time.perf_counter()
        with cf.ThreadPoolExecutor(a.concurrency) as ex:
            results = list(ex.map(one, range(a.requests)))
        wall = time.perf_counter() - t0
        m = srv.metrics()
        rss1 = rss_mib()

    lat = sorted(r[1] for r in results if not r[4])
    cancelled = sum(r[4] == "cancelled" for r in results)
    refused = sum(r[4] == "refused" for r in results)
    bad = [r for r in results if r[2]]
    gen = sum(r[3] for r in results)
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"load: {a.requests} requests at concurrency {a.concurrency} ({a.distinct} distinct prompts, {a.max_tokens} tokens, "
          f"server {' '.join(serve_args) or 'defaults'}{f', mpirun -np {a.mpi_np}' if a.mpi_np else ''}) in {wall:.1f} s: {len(bad)} errors or mismatches; "
          f"latency p50 {p(0.50) * 1000:.0f} ms, p99 {p(0.99) * 1000:.0f} ms, mean {statistics.mean(lat) * 1000:.0f} ms; "
          f"{a.requests / wall:.1f} requests/s, {gen / wall:.1f} generated tokens/s; "
          f"{int(m['lockstep_prompt_tokens_reused_total'])} prompt tokens reused; {cancelled} cancelled by their client, "
          f"{refused} refused with 503; server RSS {rss0:.0f} -> {rss1:.0f} MiB", flush=True)
    for r in bad[:5]:
        print("  request", r[0], r[2])
    if a.mpi_np:
        os.unlink(binary)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
