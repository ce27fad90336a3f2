#!/usr/bin/env python3
"""`lockstep embed` on the tiny qwen3 model (tests/data/qwen3_tiny.gguf, no pooling_type key):
the output formats agree and hold L2-normalized vectors, -f reads one text a line, the same text
gives the same bytes from -p and -f, --embd-normalize -1 gives the raw pooled vector, and each
error exits non-zero naming its cause.

usage: cli_embed.py LOCKSTEP_BINARY SOURCE_DIR
"""
import json
import math
import os
import subprocess
import sys
import tempfile


def main():
    binary, src = sys.argv[1], sys.argv[2]
    model = os.path.join(src, "tests", "data", "qwen3_tiny.gguf")
    fails = []

    def run(*args):
        p = subprocess.run([binary, "embed", "-m", model, "-t", "2"] + list(args), capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout, p.stderr

    def check(cond, what, out=""):
        if not cond:
            fails.append(what)
            print("FAIL:", what, out[:2000], flush=True)

    texts = ["The history of the printing press", "second text", "a third, longer text that runs on for a while"]
    rc, out, err = run("--pooling", "last", "-p", texts[0], "-p", texts[1], "--embd-output-format", "array")
    check(rc == 0, "array run failed", err)
    arr = json.loads(out) if rc == 0 else [[], []]
    check(len(arr) == 2 and len(arr[0]) == 64, "array: not two vectors of 64", out)
    for v in arr:
        check(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5, "array: a vector is not L2-normalized")
    check(arr[0] != arr[1], "two texts gave the same vector")
    rc, out, err = run("--pooling", "last", "-p", texts[0], "-p", texts[1], "--embd-output-format", "json")
    check(rc == 0, "json run failed", err)
    js = json.loads(out) if rc == 0 else {"data": []}
    check([d["embedding"] for d in js["data"]] == arr and [d["index"] for d in js["data"]] == [0, 1], "json differs from array", out)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(texts) + "\n\n")
        path = f.name
    rc, out, err = run("--pooling", "last", "-f", path)
    check(rc == 0, "-f run failed", err)
    lines = [[float(x) for x in l.split()] for l in out.splitlines()]
    check(len(lines) == 3 and lines[:2] == arr, "-f: not three vectors, or the first two differ from -p's", out)
    check("3 texts" in err and "embeddings/s" in err, "-f: no summary line", err)
    rc, out, err = run("--pooling", "last", "-p", texts[0], "--embd-normalize", "-1", "--embd-output-format", "array")
    raw = json.loads(out)[0] if rc == 0 else [1.0]
    n = math.sqrt(sum(x * x for x in raw))
    check(rc == 0 and abs(n - 1) > 1e-3 and all(abs(a - x / n) < 1e-6 for a, x in zip(arr[0], raw)),
          "--embd-normalize -1: not the raw vector that 2 normalizes", err)
    rc, out, err = run("--pooling", "mean", "-p", texts[0], "--embd-output-format", "array")
    check(rc == 0 and json.loads(out)[0] != arr[0], "mean pooling gave last pooling's vector", err)

    for args, code, words in [
        (["-p", "x"], 1, "no pooling"),
        ([], 2, "-p TEXT"),
        (["--pooling", "max", "-p", "x"], 2, "--pooling must be"),
        (["--pooling", "last", "-p", "x", "--embd-output-format", "csv"], 2, "--embd-output-format must be"),
        (["--pooling", "last", "-p", "x", "--embd-normalize", "-2"], 2, "--embd-normalize must be"),
        (["--pooling", "last", "-f", "/nonexistent/file.txt"], 1, "cannot read"),
        (["--pooling", "last", "-p", "x " * 100, "-c", "16"], 1, "more than the context"),
    ]:
        rc, out, err = run(*args)
        check(rc == code and words in err, f"{args}: exit {rc} (want {code}), stderr lacks {words!r}", err)
    os.unlink(path)
    if fails:
        print(f"{len(fails)} failed")
        sys.exit(1)
    print("cli_embed: ok")


if __name__ == "__main__":
    main()
