#!/usr/bin/env python3
"""lockstep's perplexity on tiny models that llama.cpp's llama-quantize wrote (every i-quant
and ternary type, and MXFP4) equals llama.cpp's own llama-perplexity on the same file within
0.5% (tests/data/llama_quantize/README.md says how the files and figures were made).

usage: peer_perplexity.py LOCKSTEP MAKE_TEST_MODEL SOURCE_DIR
"""
import os
import re
import subprocess
import sys
import tempfile

BOUND = 0.005


def main():
    lockstep, make_model, src = sys.argv[1:4]
    data = os.path.join(src, "tests", "data", "llama_quantize")
    text = os.path.join(src, "tests", "data", "GPL-3.txt")
    rows = [l.split("\t") for l in open(os.path.join(data, "peer_ppl.tsv")).read().splitlines()[1:] if l.strip()]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        # The MXFP4 model is written here: llama-quantize only writes MXFP4 for MoE experts.
        subprocess.run([make_model, "--out", os.path.join(tmp, "tiny_mxfp4.gguf"), "--layers", "2", "--embd", "256",
                        "--heads", "4", "--kv-heads", "1", "--head-dim", "64", "--ff", "512", "--vocab", "1024",
                        "--window", "256", "--ctx", "512", "--type", "mxfp4", "--seed", "5"],
                       check=True, stdout=subprocess.DEVNULL)
        print(f"{'file':<20} {'llama.cpp':>10} {'lockstep':>10} {'diff':>8}")
        for name, want in rows:
            path = os.path.join(data, name)
            if not os.path.exists(path):
                path = os.path.join(tmp, name)
            out = subprocess.run([lockstep, "perplexity", "-m", path, "-f", text, "-c", "128", "--chunks", "8", "-t", "2"],
                                 capture_output=True, text=True)
            m = re.search(r"Final estimate: PPL = ([0-9.]+)", out.stdout + out.stderr)
            if out.returncode != 0 or not m:
                print(f"{name}: lockstep perplexity failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
                failed += 1
                continue
            got, ref = float(m.group(1)), float(want)
            rel = got / ref - 1
            ok = abs(rel) <= BOUND
            failed += not ok
            print(f"{name:<20} {ref:>10.4f} {got:>10.4f} {100 * rel:>+7.3f}%{'' if ok else '  > 0.5%: FAIL'}")
    print(f"{len(rows) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
