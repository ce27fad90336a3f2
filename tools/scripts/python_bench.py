#!/usr/bin/env python3
"""Generation speed of the Python package against `lockstep run` and llama-cpp-python.

Each round runs every implementation once, in turn, each in a process of its own (A B C A B C
...), so a machine's drift hits all alike; each process loads the model, then streams a greedy
completion and times the tokens after the first (the decode loop and, for the Python ones,
the per-token work of the binding: detokenizing, building each chunk, the iterator). Prints
per implementation the median tokens/s and the ratios of the medians.

  tools/scripts/python_bench.py --model M [-n 256] [--threads 1] [--rounds 5]
      [--lockstep-python PY] [--llama-cpp-python PY] [--cli build/lockstep]

--lockstep-python: an interpreter that imports `lockstep` (pip install ./python); --llama-cpp-python:
one that imports `llama_cpp` (llama-cpp-python, built beside the project; not part of it). An
implementation whose interpreter or binary is not given is left out. `lockstep run` runs with
--spec off (the Python API's generate does not speculate), so the three decode alike.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

PROMPT = "The history of the printing press"


def child(impl, model, n, threads):
    """In the child process: load, stream once, print 'tok/s X'."""
    if impl == "lockstep":
        from lockstep import Llama
    else:
        from llama_cpp import Llama
    llm = Llama(model_path=model, n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False, seed=1)
    t_first, count = None, 0
    for chunk in llm.create_completion(PROMPT, max_tokens=n, temperature=0.0, stream=True):
        if chunk["choices"][0]["text"] is None:
            continue
        count += 1
        if t_first is None:
            t_first = time.perf_counter()
    t_end = time.perf_counter()
    print(f"tok/s {(count - 1) / (t_end - t_first):.3f} chunks {count}", flush=True)


def run_once(impl, args):
    if impl == "run":
        out = subprocess.run([args.cli, "run", "-m", args.model, "-p", PROMPT, "-n", str(args.n), "--temp", "0", "-t", str(args.threads),
                              "--spec", "off"], capture_output=True, text=True, check=True)
        m = re.search(r"generation: (\d+) tokens in ([\d.]+) s \(([\d.]+) tokens/s\)", out.stderr)
        if not m:
            sys.exit(f"no timing line from lockstep run:\n{out.stderr}")
        return float(m.group(3))
    py = args.lockstep_python if impl == "lockstep" else args.llama_cpp_python
    out = subprocess.run([py, os.path.abspath(__file__), "--child", impl, "--model", args.model, "-n", str(args.n), "--threads", str(args.threads)],
                         capture_output=True, text=True, check=True)
    m = re.search(r"tok/s ([\d.]+)", out.stdout)
    if not m:
        sys.exit(f"no timing line from {impl}:\n{out.stdout}\n{out.stderr}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("-n", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cli", default="")
    ap.add_argument("--lockstep-python", default="")
    ap.add_argument("--llama-cpp-python", default="")
    ap.add_argument("--child", default="")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.model, args.n, args.threads)
        return
    impls = [i for i, given in (("lockstep", args.lockstep_python), ("run", args.cli), ("llama_cpp", args.llama_cpp_python)) if given]
    if not impls:
        sys.exit("give at least one of --lockstep-python, --cli, --llama-cpp-python")
    got = {i: [] for i in impls}
    for r in range(args.rounds):
        for i in impls:
            got[i].append(run_once(i, args))
        print(f"round {r + 1}: " + ", ".join(f"{i} {got[i][-1]:.1f}" for i in impls), flush=True)
    med = {i: statistics.median(v) for i, v in got.items()}
    print(f"model {os.path.basename(args.model)}, {args.n} tokens, {args.threads} thread(s), {args.rounds} rounds, median tokens/s:")
    for i in impls:
        print(f"  {i:10s} {med[i]:8.2f}  (min {min(got[i]):.2f}, max {max(got[i]):.2f})")
    for a in impls:
        for b in impls:
            if a < b:
                print(f"  {a} / {b}: {med[a] / med[b]:.3f}")


if __name__ == "__main__":
    main()
