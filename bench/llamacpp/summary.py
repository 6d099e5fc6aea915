#!/usr/bin/env python3
"""Medians over rounds of run.sh's results, one row per weight format.

    bench/llamacpp/summary.py WORK

Reads WORK/llama.csv (llama-bench CSV lines prefixed by round=R) and
WORK/gelo-R-F.txt / gelo-R-F-d8.txt (gelo bench, masks suite), and prints
prefill tok/s (n = 128, 512) and decode tok/s at B = 1 from an empty
context (gelo: after an 8-token prompt) and after 512 tokens, with the
bandwidth gelo's probe measured in each run and decode as a share of that
bound, and (where gelo printed it) the bare read of the decode's own weights
timed beside its steps, with the step as a share of that read.
"""
import csv
import glob
import os
import re
import statistics
import sys

work = sys.argv[1] if len(sys.argv) > 1 else "/tmp/gelo-llamacpp"
# llama-bench's model_type ends with the file type ("all F32", "BF16", "Q4_K - Small", ...).
fmt_of = {"all F32": "f32", "BF16": "bf16", "Q8_0": "q8_0", "Q4_0": "q4_0", "Q4_K": "q4_k"}
# gelo formats compared with another llama.cpp file: the bf16 dot product
# against llama.cpp's bf16 (which rounds its activations to bf16 too).
llama_of = {"bf16dot": "bf16"}


def llama():
    out = {}  # (format, test) -> [tok/s]
    path = os.path.join(work, "llama.csv")
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for row in csv.reader(fh):
            row = row[1:]  # drop round=R; then llama-bench's columns
            mtype = row[6]
            f = next((v for k, v in fmt_of.items() if k in mtype), None)
            if f is None:
                continue
            n_prompt, n_gen, n_depth, ts = int(row[-8]), int(row[-7]), int(row[-6]), float(row[-2])
            test = f"pp{n_prompt}" if n_prompt else f"tg{n_gen}"
            out.setdefault((f, f"{test}@d{n_depth}"), []).append(ts)
    return out


def gelo():
    out = {}  # (format, key) -> [value]
    for path in glob.glob(os.path.join(work, "gelo-*-*.txt")):
        m = re.match(r"gelo-(\d+)-([a-z0-9_]+?)(-d8)?\.txt$", os.path.basename(path))
        if not m:
            continue
        f, d8 = m.group(2), m.group(3) is not None
        text = open(path).read()
        bw = re.search(r"read bandwidth ([\d.]+) GB/s", text)
        if bw:
            out.setdefault((f, "bw"), []).append(float(bw.group(1)))
        bound = re.search(r"decode bound \(B=1, plain\) ([\d.]+) tok/s", text)
        # (the TTFT/TPOT table; the tables after it have rows named by
        # level too)
        lines = text.partition("\ndecode against a bare read")[0].splitlines()
        # The bare read of the decode's weights beside its steps (gelo
        # bench prints it since 2026-12-04): its GB/s and the step's share.
        _, _, reads = text.partition("decode against a bare read of its weights")
        for l in reads.split("\n\n")[0].splitlines()[2:]:
            parts = l.split()
            if d8 and len(parts) >= 7 and parts[0] == "exact":
                out.setdefault((f, "read GB/s@d8"), []).append(float(parts[4]))
                out.setdefault((f, "of read@d8"), []).append(float(parts[5]) / 100)
        hdr = next((l for l in lines if l.startswith("mask ") and "TPOT" in l), None)
        if hdr is None:
            continue
        ns = [int(x) for x in re.findall(r"TTFT n=(\d+)", hdr)]
        for l in lines:
            parts = l.split()
            if not parts or parts[0] not in ("none", "exact") or len(parts) < len(ns) + 3:
                continue
            level = parts[0]
            ttfts = [dur(x) for x in parts[1:1 + len(ns)]]
            tps = float(parts[2 + len(ns)])
            if d8:
                out.setdefault((f, f"{level} tg@d8"), []).append(tps)
                if bound:
                    out.setdefault((f, f"{level} bound@d8"), []).append(tps / float(bound.group(1)))
            else:
                out.setdefault((f, f"{level} tg@d512"), []).append(tps)
                for n, t in zip(ns, ttfts):
                    out.setdefault((f, f"{level} pp{n}"), []).append(n / t)
    return out


def dur(s):
    m = re.match(r"([\d.]+)(ns|µs|us|ms|s|m)$", s)
    if not m:
        return float("nan")
    v, u = float(m.group(1)), m.group(2)
    return v * {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[u]


def med(d, key):
    v = d.get(key)
    return statistics.median(v) if v else float("nan")


L, G = llama(), gelo()
order = list(fmt_of.values()) + list(llama_of)
formats = sorted({k[0] for k in list(L) + list(G)}, key=lambda f: order.index(f) if f in order else 99)
print("medians over rounds; tok/s (gelo: the exact level, the default; none in parentheses)")
print(f"{'format':6} {'probe GB/s':>10} | {'prefill n=128':>24} | {'prefill n=512':>24} | {'decode from empty':>28} | {'decode after 512':>24}")
print(f"{'':6} {'':>10} | {'gelo':>11} {'llama.cpp':>9} x | {'gelo':>11} {'llama.cpp':>9} x | {'gelo':>11} {'llama.cpp':>9} x {'%bound':>6} {'read GB/s':>9} {'%read':>5} | {'gelo':>11} {'llama.cpp':>9} x")
for f in formats:
    cells = [f"{f:6} {med(G, (f, 'bw')):10.1f}"]
    for gk, lk in (("pp128", "pp128@d0"), ("pp512", "pp512@d0"), ("tg@d8", "tg64@d0"), ("tg@d512", "tg64@d512")):
        g, gn, l = med(G, (f, "exact " + gk)), med(G, (f, "none " + gk)), med(L, (llama_of.get(f, f), lk))
        c = f"{g:5.1f} ({gn:5.1f}) {l:9.1f} {g / l:4.2f}"
        if gk == "tg@d8":
            c += f" {100 * med(G, (f, 'exact bound@d8')):5.0f}% {med(G, (f, 'read GB/s@d8')):9.1f} {100 * med(G, (f, 'of read@d8')):4.0f}%"
        cells.append(c)
    print(" | ".join(cells))
