#!/usr/bin/env python3
"""kiln-bert train --replicas N (data-parallel copies of the model, runtime/bert/bert_replicas.h)
and --accumulate A (gradient accumulation, the same shards in turn on one model)
end to end on synthetic aclImdb-layout folders made here (tiny model, one cpu thread each).

replicas: with dropout 0 and no shuffling, 2 and 3 replicas train the same run as one model: 12
     samples in batches of 8, so the second step's batch is partial (4 samples: shards of 2 and
     2, or 2, 1 and 1; in fp32 also 5 replicas, one of them with nothing to run), in fp32,
     fp16 and bf16; every step's loss and gradient norm and the
     saved parameters agree with the single model's within the tolerances below. The replicas'
     own agreement (parameters, moments and loss scale bit for bit) is checked by kiln-bert
     itself at every save and at the end, so every run here exiting 0 is that check passing.
     With dropout a replicated run is reproducible bit for bit; a run saved with 2 replicas and
     resumed with 1 goes on as the uninterrupted 2-replica run (same tolerances); the memory
     check counts one plan per replica in the host's memory (refused one byte short of two
     plans, accepted at exactly two); --replicas beyond --batch and beyond 64 are refused.
replicas_emu: 2 replicas on the emu device against 2 on the cpu.
accumulate: --accumulate A (gradient accumulation: each replica's part of a batch as A
     micro-batches in turn, runtime/bert/bert_model.h's gradient stash) runs shard i A + j of the
     replicas x A shards as replica i's micro-batch j, with shard g's dropout seed, so with one
     replica it is the --replicas A run bit for bit (every step record and the saved parameters;
     the stash sums micro-batches in rank order, as the all-reduce sums replicas), in fp32,
     fp16 and bf16, with dropout and shuffling: A = 2, 3 and 5 (the partial batch of 4 leaves
     the fifth micro-batch empty). 2 replicas of 2 micro-batches each train the one-model run
     within the replicas' tolerances (their sums are associated otherwise). The memory check
     counts the stash (its bytes named; refused one byte short, accepted at exactly the plan;
     the refusal suggests twice the micro-batches),
     and A beyond the batch or 4096 is refused.
accumulate_emu: --accumulate 2 on the emu device against the cpu (grad_accumulate on emu).

Tolerances. Sharding changes which rows each gemm and each sum over batch rows (bias and
LayerNorm gradients, the loss mean) sees, and the all-reduce adds the shards' gradients (each
the mean over the whole batch's rows) in f32, so the sums are reordered, not changed: fp32's losses within 2e-5
relative (measured 1.2e-7 after 4 steps) and its gradient norms within 1e-4 (5e-7). fp16 and
bf16 round activations to 11 and 8 bits, and a reordered f32 sum can round to the other
neighbour: losses within 4e-3 relative (one bf16 ulp; measured 3.8e-4 in bf16, 7e-5 in fp16),
norms within 2e-2. The parameters after 4 AdamW steps at lr 1e-3: on average within 1e-8 in
fp32 (measured 8e-11) and 1e-5 in fp16/bf16 (1.2e-6); each within 2 lr a step (ADAM_BOUND:
measured up to 4.9e-6 in fp32 and 3.2e-3 in bf16, on parameters whose gradient is noise).
Usage: replicas_test.py KILN_BERT VOCAB replicas|replicas_emu|accumulate|accumulate_emu"""
import json
import os
import re
import subprocess
import sys
import tempfile

import kbtest

kb, vocab, mode = sys.argv[1], sys.argv[2], sys.argv[3]
check = kbtest.Checks()
STEPS = 4
# (loss relative, gradient norm relative, mean parameter difference) per precision
TOL = {"fp32": (2e-5, 1e-4, 1e-8), "fp16": (4e-3, 2e-2, 1e-5), "bf16": (4e-3, 2e-2, 1e-5)}
ENV = dict(os.environ, KILN_CPU_THREADS="1")
# AdamW moves a parameter by about lr a step at most (|m / sqrt(v)| <= 1 when beta1^2 <= beta2),
# so two runs can differ by 2 lr a step where a gradient is rounding noise (a key bias's
# gradient is zero in exact arithmetic: softmax ignores a shift along the keys)
ADAM_BOUND = 2 * 1e-3


def train(tmp, name, *args, device="cpu", replicas=1, accumulate=1, ok=True):
    """(losses, norms, step records' text, save folder, the run) of a training run."""
    log, save = os.path.join(tmp, f"{name}.jsonl"), os.path.join(tmp, name)
    cmd = [kb, "train", "--model", "tiny", "--data", os.path.join(tmp, "imdb"), "--vocab", vocab,
           "--device", device, "--batch", "8", "--seq-len", "32", "--lr", "1e-3", "--seed", "3",
           "--replicas", str(replicas), "--accumulate", str(accumulate), "--log", log,
           "--save", save] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if ok:
        check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr[-600:]}")
    text = open(log).read().splitlines() if r.returncode == 0 and os.path.exists(log) else []
    recs = [x for x in map(json.loads, text) if "step" in x]
    raw = [line for line in text if line.startswith('{"step"')]
    return [x["loss"] for x in recs], [x["grad_norm"] for x in recs], raw, save, r


def close(a, b, tol):
    return abs(a - b) <= tol * abs(a)


def same_run(what, want, got, prec, steps=STEPS):
    """got's losses, norms and saved parameters against want's, within prec's tolerances."""
    loss_tol, norm_tol, param_tol = TOL[prec]
    (wl, wn, _, wsave, _), (gl, gn, _, gsave, _) = want, got
    check(len(wl) == steps and len(gl) == steps, f"{what}: {len(gl)} steps, expected {steps}")
    for k, (a, b) in enumerate(zip(wl, gl)):
        check(close(a, b, loss_tol), f"{what}: step {k + 1} loss {b} against {a}")
    for k, (a, b) in enumerate(zip(wn, gn)):
        check(close(a, b, norm_tol), f"{what}: step {k + 1} grad norm {b} against {a}")
    wp = kbtest.read_safetensors_f32(check, os.path.join(wsave, "model.safetensors"))
    gp = kbtest.read_safetensors_f32(check, os.path.join(gsave, "model.safetensors"))
    check(wp.keys() == gp.keys(), f"{what}: other tensors saved")
    diffs = [(abs(x - y), name) for name in wp if name in gp for x, y in zip(wp[name], gp[name])]
    worst, mean = max(diffs), sum(d for d, _ in diffs) / max(1, len(diffs))
    check(worst[0] <= ADAM_BOUND * steps, f"{what}: parameter {worst[1]} off by {worst[0]}")
    check(mean <= param_tol, f"{what}: parameters off by {mean} on average")
    print(f"{what}: losses {gl}, parameters off by {mean:.3g} on average, at most {worst[0]:.3g}")


def cpu_cases(tmp):
    for prec in ("fp32", "fp16", "bf16"):
        base = ("--precision", prec, "--dropout", "0", "--no-shuffle", "--steps", str(STEPS))
        one = train(tmp, f"{prec}-r1", *base)
        # 5 replicas: the partial batch of 4 leaves one shard empty (that replica adds zeros)
        for n in (2, 3, 5) if prec == "fp32" else (2, 3):
            same_run(f"{prec}, {n} replicas", one, train(tmp, f"{prec}-r{n}", *base, replicas=n),
                     prec)

    # dropout: each replica draws its own masks; the run is reproducible bit for bit
    drop = ("--dropout", "0.1", "--steps", str(STEPS))
    a, b = train(tmp, "drop-a", *drop, replicas=2), train(tmp, "drop-b", *drop, replicas=2)
    check(a[2] and a[2] == b[2], "dropout, 2 replicas: a rerun logs other steps")

    # saved with 2 replicas after step 2, resumed with 1: the uninterrupted 2-replica run
    flags = ("--dropout", "0", "--steps", str(STEPS))
    whole = train(tmp, "whole", *flags, replicas=2)
    train(tmp, "part", *flags, "--stop-after", "2", replicas=2)
    resumed = train(tmp, "resumed", *flags, "--resume", os.path.join(tmp, "part"))
    check(len(resumed[0]) == STEPS - 2, f"resumed: {len(resumed[0])} steps, expected 2")
    same_run("resumed with 1 of 2 replicas", (whole[0][2:], whole[1][2:]) + whole[2:], resumed,
             "fp32", STEPS - 2)

    # the host's memory holds every replica's plan
    r = train(tmp, "mem", "--steps", "1", "--max-device-bytes", "1K", replicas=2, ok=False)[4]
    m = re.search(r"2 copies of a batch of 4 x 32 tokens .* \((\d+) bytes\) of cpu", r.stderr)
    check(r.returncode != 0 and m, f"1K for 2 replicas: exit {r.returncode}: {r.stderr[-400:]}")
    check("fewer --replicas" in r.stderr, "the refusal does not suggest fewer replicas")
    if m:
        need = int(m.group(1))
        r = train(tmp, "mem-short", "--steps", "1", "--max-device-bytes", str(need - 1),
                  replicas=2, ok=False)[4]
        check(r.returncode != 0, f"{need - 1} bytes for plans of {need}: exit 0")
        train(tmp, "mem-exact", "--steps", "1", "--max-device-bytes", str(need), replicas=2)

    for n, batch, want in ((9, "8", "more replicas than the --batch of 8"),
                           (65, "80", "--replicas 65: at most 64")):
        r = subprocess.run([kb, "train", "--model", "tiny", "--data", os.path.join(tmp, "imdb"),
                            "--vocab", vocab, "--batch", batch, "--replicas", str(n)],
                           capture_output=True, text=True, env=ENV)
        check(r.returncode != 0 and want in r.stderr,
              f"--replicas {n} --batch {batch}: exit {r.returncode}: {r.stderr[-300:]}")


def emu_cases(tmp, what="2 replicas", **split):
    """A short run split as `split` says (2 replicas by default) on emu against the cpu."""
    split = split or {"replicas": 2}
    flags = ("--dropout", "0", "--no-shuffle", "--steps", "2", "--batch", "4", "--seq-len", "16")
    cpu = train(tmp, "cpu-split", *flags, **split)
    emu = train(tmp, "emu-split", *flags, device="emu", **split)
    same_run(f"{what} on emu against cpu", cpu, emu, "fp32", 2)


def bit_equal(what, want, got):
    """got's step records and saved parameters are want's, byte for byte."""
    (_, _, wraw, wsave, _), (_, _, graw, gsave, _) = want, got
    check(wraw and wraw == graw, f"{what}: the step records differ")
    same = open(os.path.join(wsave, "model.safetensors"), "rb").read() == \
        open(os.path.join(gsave, "model.safetensors"), "rb").read()
    check(same, f"{what}: the saved parameters differ")
    print(f"{what}: {len(graw)} steps, the same bits" if wraw == graw and same else "")


def accumulate_cases(tmp):
    # one replica of A micro-batches is --replicas A, bit for bit, with dropout and shuffling
    for prec in ("fp32", "fp16", "bf16"):
        base = ("--precision", prec, "--dropout", "0.1", "--steps", str(STEPS))
        for a in (2, 3, 5) if prec == "fp32" else (2, 3):
            bit_equal(f"{prec}, --accumulate {a} against --replicas {a}",
                      train(tmp, f"{prec}-r{a}", *base, replicas=a),
                      train(tmp, f"{prec}-a{a}", *base, accumulate=a))
    # 2 replicas of 2 micro-batches: the one-model run within rounding
    base = ("--dropout", "0", "--no-shuffle", "--steps", str(STEPS))
    same_run("2 replicas of 2 micro-batches", train(tmp, "one", *base),
             train(tmp, "r2a2", *base, replicas=2, accumulate=2), "fp32")

    # the memory check counts the stash: --accumulate 2 over batch 8 plans 4 rows and the stash
    r = train(tmp, "mem", "--steps", "1", "--max-device-bytes", "1K", accumulate=2, ok=False)[4]
    m = re.search(r"a batch of 4 x 32 tokens .* \((\d+) bytes\) of cpu", r.stderr)
    check(r.returncode != 0 and m and "the gradient stash" in r.stderr,
          f"1K for --accumulate 2: exit {r.returncode}: {r.stderr[-400:]}")
    check("or --accumulate 4 (each step's batch in micro-batches)" in r.stderr,
          "the refusal of --accumulate 2 does not suggest more micro-batches")
    plain = train(tmp, "mem-plain", "--steps", "1", "--batch", "4", "--max-device-bytes", "1K",
                  ok=False)[4]
    p = re.search(r"a batch of 4 x 32 tokens .* \((\d+) bytes\) of cpu", plain.stderr)
    if m and p:
        need, stash = int(m.group(1)), int(m.group(1)) - int(p.group(1))
        # one f32 per parameter of the tiny model (4.4M of them)
        check(4e6 * 4 < stash < 5e6 * 4, f"the stash counts {stash} bytes")
        r = train(tmp, "mem-short", "--steps", "1", "--max-device-bytes", str(need - 1),
                  accumulate=2, ok=False)[4]
        check(r.returncode != 0, f"{need - 1} bytes for a plan of {need}: exit 0")
        train(tmp, "mem-exact", "--steps", "1", "--max-device-bytes", str(need), accumulate=2)

    for n, reps, want in ((9, 1, "more micro-batches (9 over 1 replica(s)) than the --batch of 8"),
                          (5, 2, "more micro-batches (10 over 2 replica(s))"),
                          (4097, 1, "--accumulate 4097: at most 4096")):
        r = train(tmp, f"bad-{n}", "--steps", "1", replicas=reps, accumulate=n, ok=False)[4]
        check(r.returncode != 0 and want in r.stderr,
              f"--accumulate {n} --replicas {reps}: exit {r.returncode}: {r.stderr[-300:]}")


CASES = {"replicas": cpu_cases, "replicas_emu": emu_cases, "accumulate": accumulate_cases,
         "accumulate_emu": lambda tmp: emu_cases(tmp, "--accumulate 2", accumulate=2)}
with tempfile.TemporaryDirectory() as tmp:
    kbtest.write_reviews(os.path.join(tmp, "imdb"), 6)
    CASES[mode](tmp)

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
