#!/usr/bin/env python3
"""lockstep bench against llama.cpp's llama-bench on the same GPU and the same GGUF files, in
one run, the two alternating model by model and round by round (ratios are taken within a
round, so a drifting clock or a neighbour's load hits both sides alike). Stdlib only.

Per model and round: pp512 and tg128 from an empty context, and tg128 after 4096 and 16384
tokens already in the context (llama-bench's -d; llama.cpp with -fa 1, as its fast path).

usage: gpu_compare.py --lockstep BIN --backend cuda|vulkan --peer LLAMA_BENCH --models A.gguf,B.gguf@4096
                      [--rounds 2] [--reps 2] [--depths 4096,16384] [--out table.md]
A model written FILE@D1:D2 is run at those depths instead of --depths (FILE@ at none).
Without --peer, lockstep alone (the table then has no ratio column).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def table_rows(text):
    """{test: t/s} from a llama-bench-style markdown table (lockstep bench prints the same)."""
    rows, cols = {}, None
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if "test" in cells and "t/s" in cells:
            cols = (cells.index("test"), cells.index("t/s"))
            continue
        if cols and len(cells) > max(cols) and not cells[0].startswith("-"):
            try:
                rows[cells[cols[0]]] = float(cells[cols[1]].split("±")[0])
            except ValueError:
                pass
    return rows


def run(cmd, env, log, limit):
    """The command's rows; none (logged) when it ran past `limit` seconds: a lease is short, and
    one slow point (lockstep's deep prompt fills, 415 s on an H200 once) must not take it all."""
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=limit)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        log.write(f"$ {' '.join(cmd)}  (stopped after {limit} s)\n{out}\n")
        log.flush()
        print(f"  {os.path.basename(cmd[0])}: stopped after {limit} s", flush=True)
        return table_rows(out)
    log.write(f"$ {' '.join(cmd)}  ({time.time() - t0:.1f} s, exit {p.returncode})\n{p.stdout}\n")
    log.flush()
    if p.returncode != 0:
        tail = "\n".join(p.stdout.splitlines()[-15:])
        raise RuntimeError(f"{cmd[0]} failed (exit {p.returncode}):\n{tail}")
    return table_rows(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lockstep", required=True)
    ap.add_argument("--backend", default="cuda", choices=["cuda", "vulkan", "cpu"])
    ap.add_argument("--peer", default="", help="llama-bench built for this GPU (CUDA or Vulkan to match --backend)")
    ap.add_argument("--models", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--depths", default="4096,16384")
    ap.add_argument("--log", default="gpu_compare.log")
    ap.add_argument("--limit", type=int, default=90, help="seconds one bench command may run (its rows are then missing)")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    default_depths = [int(d) for d in a.depths.split(",") if d]
    env = dict(os.environ)
    models, depths_of = [], {}
    for spec in (m for m in a.models.split(",") if m):
        path, at, ds = spec.partition("@")
        models.append(path)
        depths_of[path] = [int(d) for d in ds.split(":") if d] if at else default_depths
    engines = ["lockstep"] + (["llama.cpp"] if a.peer else [])

    def cmds(engine, model):
        depths = depths_of[model]
        ctx = str(max(depths + [0]) + 512 + 128 + 256)
        if engine == "lockstep":
            base = [a.lockstep, "bench", "-m", model, "--backend", a.backend, "-r", str(a.reps), "-c", ctx]
            deep = base + ["-p", "0", "-n", "128", "-d", ",".join(map(str, depths))]
        else:
            base = [a.peer, "-m", model, "-ngl", "99", "-fa", "1", "-r", str(a.reps)]
            deep = base + ["-p", "0", "-n", "128", "-d", ",".join(map(str, depths))]
        return [base + ["-p", "512", "-n", "128"]] + ([deep] if depths else [])

    all_depths = sorted({d for m in models for d in depths_of[m]})
    tests = ["pp512", "tg128"] + [f"tg128 @ d{d}" for d in all_depths]
    got = {}  # (model, test, engine) -> [t/s per round]
    with open(a.log, "a") as log:
        for rnd in range(a.rounds):
            for model in models:
                order = engines if rnd % 2 == 0 else engines[::-1]
                for engine in order:
                    rows = {}
                    for cmd in cmds(engine, model):
                        rows.update(run(cmd, env, log, a.limit))
                    for t in tests:
                        if t in rows:
                            got.setdefault((model, t, engine), []).append(rows[t])
                    print(f"round {rnd + 1} {os.path.basename(model)} {engine}: " +
                          ", ".join(f"{t} {rows[t]:.1f}" for t in tests if t in rows), flush=True)

    head = f"| model | test | lockstep {a.backend} t/s |"
    sep = "|---|---|---:|"
    if a.peer:
        head += f" llama.cpp {a.backend} t/s | ratio (per round) |"
        sep += "---:|---|"
    lines = [head, sep]
    for model in models:
        for t in tests:
            ls_v = got.get((model, t, "lockstep"), [])
            if not ls_v:
                continue
            row = f"| {os.path.basename(model)} | {t} | {statistics.median(ls_v):.1f} |"
            if a.peer:
                pe = got.get((model, t, "llama.cpp"), [])
                ratios = [x / y for x, y in zip(ls_v, pe) if y > 0]
                row += f" {statistics.median(pe):.1f} |" if pe else " - |"
                row += (f" **{statistics.median(ratios):.2f}x** ({', '.join(f'{r:.2f}' for r in ratios)}) |" if ratios else " - |")
            lines.append(row)
    text = "\n".join(lines)
    print("\n" + text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
