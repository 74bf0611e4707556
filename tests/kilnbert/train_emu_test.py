#!/usr/bin/env python3
"""kiln-bert train on the emu device against the cpu device: the trainer's emu copy (model.c and
train.c built against the kernel libraries generated with --device emu, the GPU code path run
by the emulator) trains 2 steps of 2 x 16 tokens of a small model (a config.json the test
writes: 2 layers, hidden 32, 2 heads of 16, FFN 64, vocabulary 66) at dropout 0.1, and its log
must match the cpu run's: the same Philox masks on both (one rand, lowered two ways), the same
data order, so only f32 rounding differs (other tiles, other summation orders).

Tolerances: each loss 1e-5 relative and each gradient norm 1e-4 relative. The cpu test of the
model (kilnbert.model) bounds the f32 error of loss and gradients against double at ~1e-6 and
1e-4 of each tensor's largest gradient; two f32 runs differ by at most the sum of their errors,
and step 2 also carries the AdamW update of step 1 (lr 5e-5, near lr sign(g) per element).
Measured: step 1 losses equal, step 2 9e-8 relative, norms <= 1.7e-7 relative. The small
model keeps the emulator's step at ~15 s on a loaded 2-core machine (BERT-tiny's 4M-parameter
AdamW and embedding tables take ~110 s).
Usage: train_emu_test.py KILN_BERT VOCAB"""
import json
import os
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
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
                            "--vocab", vocab, "--device", device, "--steps", "2", "--batch", "2",
                            "--seq-len", "16", "--dropout", "0.1", "--seed", "7", "--log", log],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"{device}: exit {r.returncode}: {r.stderr}")
        if not os.path.exists(log):
            return []
        return [x for x in map(json.loads, open(log)) if "step" in x]

    cpu, emu = run("cpu"), run("emu")
    for c, e in zip(cpu, emu):
        print(f"step {c['step']}: loss cpu {c['loss']:.9g} emu {e['loss']:.9g}; "
              f"grad norm cpu {c['grad_norm']:.9g} emu {e['grad_norm']:.9g}")
    check(len(cpu) == 2 and len(emu) == 2, f"2 steps each: {len(cpu)}, {len(emu)}")
    for c, e in zip(cpu, emu):
        check(abs(c["loss"] - e["loss"]) <= 1e-5 * abs(c["loss"]),
              f"step {c['step']}: loss {e['loss']} on emu, {c['loss']} on cpu")
        check(abs(c["grad_norm"] - e["grad_norm"]) <= 1e-4 * abs(c["grad_norm"]),
              f"step {c['step']}: grad norm {e['grad_norm']} on emu, {c['grad_norm']} on cpu")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
