#!/usr/bin/env python3
"""kiln-bert eval --device emu: the eval command handed to the emu copy of the model.

A tiny model trained one step on cpu and saved is evaluated on 4 reviews by the cpu device
and by the emu device (the GPU code path, emulated). The emu copy computes the same forward
with the GPU kernels' tiling and reduction order, so the numbers agree to f32 rounding, not
bit for bit: every logit within 1e-4 absolute (they are of order 0.1-1; the differences seen
are around 1e-7), eval_loss within 1e-5 relative, the same accuracy and sample count.
Usage: eval_emu_test.py KILN_BERT VOCAB"""
import json
import os
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
check = kbtest.Checks()


def run(*args):
    r = subprocess.run([kb, *args], capture_output=True, text=True)
    check(r.returncode == 0, f"{' '.join(args[:1])} {args[-1]}: exit {r.returncode}: {r.stderr[-800:]}")
    return r


with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "imdb")
    kbtest.write_reviews(data, 2)
    model = os.path.join(tmp, "model")
    run("train", "--model", "tiny", "--data", data, "--vocab", vocab, "--steps", "1", "--batch",
        "4", "--seq-len", "16", "--dropout", "0", "--save", model, "--device", "cpu")
    out = {}
    for dev in ("cpu", "emu"):
        logits, log = os.path.join(tmp, f"{dev}.txt"), os.path.join(tmp, f"{dev}.jsonl")
        run("eval", "--model", model, "--data", os.path.join(data, "train"), "--vocab", vocab,
            "--batch", "4", "--seq-len", "16", "--dump-logits", logits, "--log", log,
            "--device", dev)
        rows = [list(map(float, x.split())) for x in open(logits)] if os.path.exists(logits) else []
        summary = json.loads(open(log).read()) if os.path.exists(log) else {}
        out[dev] = (rows, summary)
    (crow, cs), (erow, es) = out["cpu"], out["emu"]
    diff = max((abs(a - b) for r1, r2 in zip(crow, erow) for a, b in zip(r1, r2)), default=1.0)
    print(f"cpu eval_loss {cs.get('eval_loss')}, emu {es.get('eval_loss')}; largest logit "
          f"difference {diff:.3g}")
    check(len(crow) == 4 and len(erow) == 4, "4 rows of logits from each device")
    check(diff <= 1e-4, f"logits differ by {diff} > 1e-4")
    cl, el = cs.get("eval_loss"), es.get("eval_loss")
    check(cl is not None and el is not None and abs(cl - el) <= 1e-5 * abs(cl),
          f"eval_loss {cl} (cpu) vs {el} (emu)")
    check(cs.get("accuracy") == es.get("accuracy") and es.get("eval_samples") == 4,
          "the same accuracy over the same 4 samples")

print("all passed" if not check.fails else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
