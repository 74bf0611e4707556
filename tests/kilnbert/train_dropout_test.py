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
Then, with the trainer's other features:
  - fp16 and bf16 with --dropout 0.1: finite losses, different from the same precision's
    --dropout 0 run (the masks are applied);
  - --resume of a run with dropout stopped after step 1 (--stop-after 1 --save) logs steps 2
    and 3 of the uninterrupted run bit for bit (one cpu thread, KILN_CPU_THREADS=1, so that the
    atomics add in one order): the masks are keyed on (seed, global step);
  - the end-of-run evaluation of a run trained with dropout 0.1 runs with dropout off: its
    eval_loss and accuracy equal those of `kiln-bert eval` of the saved weights (a fresh model,
    which never had dropout).
Usage: train_dropout_test.py KILN_BERT VOCAB"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
check = kbtest.Checks()


with tempfile.TemporaryDirectory() as tmp:
    kbtest.write_reviews(os.path.join(tmp, "imdb"), 4)

    # the same texts as a test split too, for the end-of-run evaluation
    for label in ("pos", "neg"):
        for split in ("train", "test"):
            shutil.copytree(os.path.join(tmp, "imdb", "train", label),
                            os.path.join(tmp, "imdbt", split, label))

    def records(name, *extra, data="imdb", env=None):
        log = os.path.join(tmp, f"{name}.jsonl")
        r = subprocess.run([kb, "train", "--model", "tiny", "--data", os.path.join(tmp, data),
                            "--vocab", vocab, "--steps", "3", "--batch", "4", "--seq-len", "16",
                            "--lr", "1e-3", "--log", log, *extra], capture_output=True, text=True,
                           env=env)
        check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
        if not os.path.exists(log):
            return []
        return [json.loads(line) for line in open(log)]

    def losses(name, *extra, **kw):
        return [x["loss"] for x in records(name, *extra, **kw) if "step" in x]

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

    # every precision trains with dropout
    for prec in ("fp16", "bf16"):
        hp = losses(f"{prec}-drop", "--dropout", "0.1", "--seed", "3", "--precision", prec)
        hz = losses(f"{prec}-zero", "--dropout", "0", "--seed", "3", "--precision", prec)
        print(f"{prec}: dropout 0.1: {hp}, dropout 0: {hz}")
        check(len(hp) == 3 and all(isinstance(x, float) and math.isfinite(x) for x in hp),
              f"{prec} with dropout: losses {hp}")
        check(apart(hp, hz), f"{prec}: dropout 0 and 0.1 gave the same first loss: {hz} vs {hp}")

    # a resumed run draws the uninterrupted run's masks
    one = dict(os.environ, KILN_CPU_THREADS="1")
    ckpt = os.path.join(tmp, "ckpt")
    full = losses("full", "--dropout", "0.1", "--seed", "5", env=one)
    losses("part1", "--dropout", "0.1", "--seed", "5", "--stop-after", "1", "--save", ckpt,
           env=one)
    rest = losses("part2", "--dropout", "0.1", "--resume", ckpt, env=one)
    print("uninterrupted:", full, "resumed after step 1:", rest)
    check(len(full) == 3 and rest == full[1:],
          f"the resumed run's losses {rest} are not steps 2, 3 of the uninterrupted {full}")

    # the end-of-run evaluation runs with dropout off
    saved = os.path.join(tmp, "saved")
    recs = records("evald", "--dropout", "0.1", "--seed", "3", "--save", saved, data="imdbt")
    s = next((x for x in recs if x.get("summary")), {})
    r = subprocess.run([kb, "eval", "--model", saved, "--data", os.path.join(tmp, "imdbt"),
                        "--vocab", vocab, "--batch", "4", "--seq-len", "16", "--json"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"eval: exit {r.returncode}: {r.stderr}")
    e = {}
    try:
        e = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        check(False, f"eval --json printed {r.stdout!r}")
    print("end-of-run evaluation:", s.get("eval_loss"), s.get("accuracy"),
          "kiln-bert eval:", e.get("eval_loss"), e.get("accuracy"))
    check(s.get("eval_loss") is not None and s.get("eval_loss") == e.get("eval_loss") and
          s.get("accuracy") == e.get("accuracy"),
          f"the run's evaluation {s} is not eval's of the saved weights {e}")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
