#!/usr/bin/env python3
"""kiln-bert train on the emu device against the cpu device, in one precision: the trainer's emu
copy (model.c and train.c built against the kernel libraries generated with --device emu, the
GPU code path run by the emulator) trains 2 steps of 2 x 16 tokens of a small model (a
config.json the test writes: 2 layers, hidden 32, 2 heads of 16, FFN 64, vocabulary 66) at
dropout 0.1, and its log must match the cpu run's in the same precision: the same Philox masks
on both (one rand, lowered two ways), the same data order, so only rounding differs (other
tiles, other summation orders).

Tolerances, relative, per step. fp32: each loss 1e-5 and each gradient norm 1e-4. The cpu test
of the model (kilnbert.model) bounds the f32 error of loss and gradients against double at
~1e-6 and 1e-4 of each tensor's largest gradient; two f32 runs differ by at most the sum of
their errors, and step 2 also carries the AdamW update of step 1 (lr 5e-5, near lr sign(g) per
element). Measured: step 1 losses equal, step 2 9e-8 relative, norms <= 1.7e-7 relative.
fp16 and bf16: both devices round the same f32 results to T, and those differ by f32 rounding
only, so a stored value differs by at most one unit in the last place of T, and only where the
f32 value lies next to a rounding boundary; the loss (f32, a mean of smooth functions of the
logits) and the gradient norm then move by at most a few unit roundoffs u of T (2^-11 for fp16,
2^-8 for bf16): each loss within 2u and each gradient norm within 4u (the norm sums T
gradients widened to f32, each within an ulp). fp16 also logs the loss scale of 65536 and no
skipped step on both devices.
The small model keeps the emulator's step at ~15 s on a loaded 2-core machine (BERT-tiny's
4M-parameter AdamW and embedding tables take ~110 s).
Usage: train_emu_test.py KILN_BERT VOCAB [fp32|fp16|bf16]"""
import json
import os
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
precision = sys.argv[3] if len(sys.argv) > 3 else "fp32"
# (loss, grad norm) relative tolerances; see above
TOL = {"fp32": (1e-5, 1e-4), "fp16": (2 * 2**-11, 4 * 2**-11), "bf16": (2 * 2**-8, 4 * 2**-8)}
loss_tol, norm_tol = TOL[precision]
check = kbtest.Checks()


with tempfile.TemporaryDirectory() as tmp:
    kbtest.write_reviews(os.path.join(tmp, "imdb"), 2)
    model = os.path.join(tmp, "small")
    os.makedirs(model)
    with open(os.path.join(model, "config.json"), "w") as f:
        json.dump({"vocab_size": 66, "hidden_size": 32, "num_hidden_layers": 2,
                   "num_attention_heads": 2, "intermediate_size": 64,
                   "max_position_embeddings": 32, "type_vocab_size": 2, "num_labels": 2}, f)

    def run(device):
        log = os.path.join(tmp, f"{device}.jsonl")
        r = subprocess.run([kb, "train", "--model", model, "--data", os.path.join(tmp, "imdb"),
                            "--vocab", vocab, "--device", device, "--precision", precision,
                            "--steps", "2", "--batch", "2", "--seq-len", "16", "--dropout", "0.1",
                            "--seed", "7", "--log", log],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"{device}: exit {r.returncode}: {r.stderr}")
        if not os.path.exists(log):
            return []
        return [x for x in map(json.loads, open(log)) if "step" in x]

    cpu, emu = run("cpu"), run("emu")
    for c, e in zip(cpu, emu):
        print(f"{precision} step {c['step']}: loss cpu {c['loss']:.9g} emu {e['loss']:.9g} "
              f"(rel {abs(c['loss'] - e['loss']) / abs(c['loss']):.2g}); grad norm cpu "
              f"{c['grad_norm']:.9g} emu {e['grad_norm']:.9g} "
              f"(rel {abs(c['grad_norm'] - e['grad_norm']) / abs(c['grad_norm']):.2g})")
    check(len(cpu) == 2 and len(emu) == 2, f"2 steps each: {len(cpu)}, {len(emu)}")
    for c, e in zip(cpu, emu):
        check(abs(c["loss"] - e["loss"]) <= loss_tol * abs(c["loss"]),
              f"step {c['step']}: loss {e['loss']} on emu, {c['loss']} on cpu")
        check(abs(c["grad_norm"] - e["grad_norm"]) <= norm_tol * abs(c["grad_norm"]),
              f"step {c['step']}: grad norm {e['grad_norm']} on emu, {c['grad_norm']} on cpu")
        want_scale = 65536 if precision == "fp16" else 1
        check(c["scale"] == want_scale and e["scale"] == want_scale,
              f"step {c['step']}: scale {c['scale']} on cpu, {e['scale']} on emu")
        check(not c["skipped"] and not e["skipped"], f"step {c['step']}: skipped")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
