#!/usr/bin/env python3
"""kiln-bert train with dropout, end to end: the tiny model on a synthetic aclImdb-layout folder
(as train_test.py), 3 steps of 4. The masks are drawn from (--seed, step), so two runs with the
same seed log the same losses and another seed other ones; without --dropout the config's
hidden_dropout_prob (0.1 for the presets) applies, the same as --dropout 0.1; and dropout 0.1
differs from dropout 0. "The same": step 1 bit for bit (one forward from the same weights and
masks), later steps within 1e-5 relative, since the cpu device's thread pool adds the atomics
of the gradient norm and of the embedding backward in any order, so the weights after a step
may differ in their last bits. Other masks move the loss by ~1e-3 or more. The numbers
themselves are checked against the reference in test_model_dropout.c.
Usage: train_dropout_test.py KILN_BERT VOCAB"""
import json
import os
import subprocess
import sys
import tempfile

kb, vocab = sys.argv[1], sys.argv[2]
fails = 0


def check(cond, what):
    global fails
    if not cond:
        print("FAIL", what)
        fails += 1


with tempfile.TemporaryDirectory() as tmp:
    for label, text in (("pos", "the movie was great ! i love it , great great"),
                        ("neg", "the movie was naive . i want un ##want walk")):
        os.makedirs(os.path.join(tmp, "imdb", "train", label))
        for i in range(4):
            with open(os.path.join(tmp, "imdb", "train", label, f"{i}_5.txt"), "w") as f:
                f.write(f"{text} {i}\n")

    def losses(name, *extra):
        log = os.path.join(tmp, f"{name}.jsonl")
        r = subprocess.run([kb, "train", "--model", "tiny", "--data", os.path.join(tmp, "imdb"),
                            "--vocab", vocab, "--steps", "3", "--batch", "4", "--seq-len", "16",
                            "--lr", "1e-3", "--log", log, *extra], capture_output=True, text=True)
        check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
        if not os.path.exists(log):
            return []
        recs = [json.loads(line) for line in open(log)]
        return [x["loss"] for x in recs if "step" in x]

    a = losses("a", "--dropout", "0.1", "--seed", "3")
    b = losses("b", "--dropout", "0.1", "--seed", "3")
    c = losses("c", "--dropout", "0.1", "--seed", "4")
    d = losses("d", "--seed", "3")
    z = losses("z", "--dropout", "0", "--seed", "3")
    print("dropout 0.1 seed 3:", a, "\nseed 4:", c, "\ndropout 0:", z)
    def same(x, y):
        return (len(x) == 3 and len(y) == 3 and x[0] == y[0] and
                all(abs(p - q) <= 1e-5 * abs(p) for p, q in zip(x, y)))

    def apart(x, y):
        return len(x) == 3 and len(y) == 3 and abs(x[0] - y[0]) > 1e-4 * abs(x[0])

    check(same(a, b), f"the same seed gave other losses: {a} vs {b}")
    check(apart(a, c), f"seeds 3 and 4 gave the same first loss: {a} vs {c}")
    check(same(a, d), f"the config's dropout (0.1) is not --dropout 0.1: {d} vs {a}")
    check(apart(a, z), f"dropout 0 and 0.1 gave the same first loss: {z} vs {a}")

print("all passed" if fails == 0 else f"{fails} failed")
sys.exit(1 if fails else 0)
