#!/usr/bin/env python3
"""kiln-bert eval --precision fp16|bf16 on synthetic aclImdb-layout folders made here, the tiny
model on the cpu device.

- A model trained in fp16 (bf16) for 4 steps of 8 and saved (--save: the f32 masters) evaluates,
  with `eval --precision fp16` (bf16) in batches of the same 8 rows, to the training run's own
  end-of-run evaluation bit for bit: eval_loss and accuracy equal. The training model's half
  weights are AdamW's rounding of the masters, eval's the cast of the saved masters: the same
  round-to-nearest-even of the same f32 numbers, so the forward is the same computation.
- The same checkpoint evaluated in fp32 is the same model with f32 weights and activations:
  its eval_loss within 0.2% of the half-precision one (measured: 2e-5 in fp16, 1e-4 in bf16;
  the losses are near ln 2, where they move by about half the logits' change), so a
  half-precision eval that computed something else (the wrong weights, unscaled logits) fails.
- --tf32 with fp16 is refused, exit 64, naming --tf32.
Usage: eval_precision_test.py KILN_BERT VOCAB"""
import json
import os
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
check = kbtest.Checks()
ENV = dict(os.environ, KILN_CPU_THREADS="1")


def run(*args):
    return subprocess.run([kb] + list(args), capture_output=True, text=True, env=ENV)


def evaluate(tmp, model, prec, name):
    log = os.path.join(tmp, f"{name}.jsonl")
    r = run("eval", "--model", model, "--data", os.path.join(tmp, "imdb"), "--vocab", vocab,
            "--batch", "8", "--seq-len", "16", "--precision", prec, "--log", log)
    check(r.returncode == 0, f"eval {name}: exit {r.returncode}: {r.stderr[-600:]}")
    return json.loads(open(log).read()) if r.returncode == 0 else {}


with tempfile.TemporaryDirectory() as tmp:
    root = os.path.join(tmp, "imdb")
    kbtest.write_reviews(root, 8)
    kbtest.write_reviews(root, 6, split="test")
    for prec in ("fp16", "bf16"):
        save = os.path.join(tmp, f"model-{prec}")
        log = os.path.join(tmp, f"train-{prec}.jsonl")
        r = run("train", "--model", "tiny", "--data", root, "--vocab", vocab, "--batch", "8",
                "--seq-len", "16", "--steps", "4", "--lr", "1e-3", "--seed", "3", "--dropout",
                "0", "--precision", prec, "--save", save, "--log", log)
        check(r.returncode == 0, f"train {prec}: exit {r.returncode}: {r.stderr[-600:]}")
        if r.returncode != 0:
            continue
        summ = next(json.loads(x) for x in open(log) if '"summary"' in x)
        half = evaluate(tmp, save, prec, f"{prec}-{prec}")
        full = evaluate(tmp, save, "fp32", f"{prec}-fp32")
        print(f"{prec}: train's eval {summ.get('eval_loss')} {summ.get('accuracy')}; "
              f"eval --precision {prec} {half.get('eval_loss')} {half.get('accuracy')}; "
              f"fp32 {full.get('eval_loss')}")
        check((half.get("eval_loss"), half.get("accuracy")) ==
              (summ.get("eval_loss"), summ.get("accuracy")),
              f"{prec}: eval gives {half.get('eval_loss')}, {half.get('accuracy')}; the training "
              f"run's evaluation {summ.get('eval_loss')}, {summ.get('accuracy')}")
        if half.get("eval_loss") and full.get("eval_loss"):
            rel = abs(half["eval_loss"] - full["eval_loss"]) / full["eval_loss"]
            check(rel <= 2e-3, f"{prec}: eval_loss {half['eval_loss']} is {rel:.3g} from fp32's "
                  f"{full['eval_loss']}")
    r = run("eval", "--model", os.path.join(tmp, "model-fp16"), "--data", root, "--vocab", vocab,
            "--precision", "fp16", "--tf32")
    check(r.returncode == 64 and "--tf32" in r.stderr,
          f"eval --precision fp16 --tf32: exit {r.returncode}: {r.stderr[-300:]}")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
