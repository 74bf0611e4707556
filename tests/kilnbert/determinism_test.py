#!/usr/bin/env python3
"""kiln-bert train on the cpu device is bit for bit the same at any thread count: every
reduction of the trainer's kernels adds in an order fixed by the data, the shapes and the
library's configs, never by which worker thread runs which program (docs/trainer.md,
"Reproducibility"). The same run (the tiny model, dropout on, several steps) with
KILN_CPU_THREADS = 1, 2 and 5, in fp32, fp16 and bf16, must log the same losses and gradient
norms (their %.9g text) and save byte-identical model.safetensors and optimizer.safetensors.
A float atomic_add coming back into a kernel the step runs (the embedding backward's, the
gradient norm's, as before) makes the sums' order the threads' and fails this within a few steps.
Usage: determinism_test.py KILN_BERT VOCAB"""
import json
import os
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
check = kbtest.Checks()
STEPS = 6
THREADS = ("1", "2", "5")


def train(tmp, prec, threads):
    """The run's step records (loss and norm as logged) and its checkpoint folder."""
    name = f"{prec}-t{threads}"
    log, save = os.path.join(tmp, f"{name}.jsonl"), os.path.join(tmp, name)
    env = dict(os.environ, KILN_CPU_THREADS=threads)
    r = subprocess.run([kb, "train", "--model", "tiny", "--data", os.path.join(tmp, "imdb"),
                        "--vocab", vocab, "--device", "cpu", "--precision", prec, "--steps",
                        str(STEPS), "--batch", "8", "--seq-len", "32", "--dropout", "0.1",
                        "--lr", "1e-3", "--seed", "3", "--log", log, "--save", save],
                       capture_output=True, text=True, env=env)
    check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr[-400:]}")
    text = open(log).read().splitlines() if os.path.exists(log) else []
    steps = [(x["loss"], x["grad_norm"]) for x in map(json.loads, text) if "step" in x]
    # the exact text: %.9g of the f32 loss is the float itself
    raw = [line for line in text if line.startswith('{"step"')]
    return steps, raw, save


def read(path):
    return open(path, "rb").read() if os.path.exists(path) else None


with tempfile.TemporaryDirectory() as tmp:
    kbtest.write_reviews(os.path.join(tmp, "imdb"), 12)
    for prec in ("fp32", "fp16", "bf16"):
        steps1, raw1, save1 = train(tmp, prec, THREADS[0])
        check(len(steps1) == STEPS, f"{prec}: {len(steps1)} step records, expected {STEPS}")
        print(f"{prec}: losses {[x[0] for x in steps1]}")
        for t in THREADS[1:]:
            steps, raw, save = train(tmp, prec, t)
            check(raw == raw1, f"{prec}: {t} threads log other steps than 1 thread:\n  " +
                  "\n  ".join(f"{a} | {b}" for a, b in zip(raw, raw1) if a != b))
            for f in ("model.safetensors", "optimizer.safetensors"):
                a, b = read(os.path.join(save, f)), read(os.path.join(save1, f))
                check(a is not None and a == b,
                      f"{prec}: {t} threads save another {f} than 1 thread")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
