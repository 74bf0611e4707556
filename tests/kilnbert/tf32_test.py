#!/usr/bin/env python3
"""kiln-bert --precision fp32 --tf32 against plain fp32 on one device (cpu or emu): the f32 model
whose gemm calls go through the libraries built with -D TF32=1 (gemm.kiln's dot rounds A and B
to TF32 before the products; docs/trainer.md, "TF32").

A small model (the config.json of train_emu_test.py: 2 layers, hidden 32, 2 heads of 16, FFN 64,
vocabulary 66) trains 3 steps of 2 x 16 tokens at dropout 0 with the same seed and data, once in
fp32 and once with --tf32 (that run also with --profile and KILN_BERT_LAUNCH_LOG). Checks:
  1. each step's loss and gradient norm within the tolerances below of fp32's;
  2. the runs are NOT bit-identical (some loss or norm differs): the flag took effect;
  3. every gemm launch of the --tf32 run names the pins T=f32 EPI=k TF32=1, in the launch log
     and in the --profile records, and no other kernel has TF32; the launches are what
     `kiln-bert tune --list --tf32` lists (the tuner tunes the calls the run makes);
  4. --tf32 with --precision fp16 (train) and bf16 (tune) is refused with a message naming
     --tf32 and the exit status of any invalid argument (that of --precision fp64);
  5. (cpu) eval --tf32 of the fp32 run's saved model: logits within the tolerance of eval
     without it, and not all equal.

Tolerances. TF32 keeps 10 of f32's 23 mantissa bits, rounding to nearest: each gemm operand
gets a relative error of at most u = 2^-11 (4.9e-4), each product at most 2u, with the f32
accumulation and everything outside the gemms (attention, LayerNorm, softmax, the loss) as in
fp32. That is the unit roundoff of fp16, whose test (kilnbert.precision, train_emu_test.py)
bounds a loss by 2u and a gradient norm by 4u relative to fp32's where every activation and
weight is rounded, not only the gemms' operands: the same bounds hold here with room (the
rounding errors of a K-term dot have random signs and grow like sqrt(K) u, not K u, and the
LayerNorms after each block undo a relative error common to a row). The logits (a few tenths)
get 4u of their largest magnitude + 1e-6 absolute.
Usage: tf32_test.py KILN_BERT VOCAB cpu|emu"""
import collections
import json
import os
import subprocess
import sys
import tempfile

import kbtest

kb, vocab, device = sys.argv[1], sys.argv[2], sys.argv[3]
U = 2.0**-11
LOSS_TOL, NORM_TOL, LOGIT_TOL = 2 * U, 4 * U, 4 * U
STEPS = 3
check = kbtest.Checks()


def read_jsonl(path):
    return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "imdb")
    kbtest.write_reviews(data, 2)
    kbtest.write_reviews(data, 2, "test")
    model = os.path.join(tmp, "small")
    os.makedirs(model)
    with open(os.path.join(model, "config.json"), "w") as f:
        json.dump({"vocab_size": 66, "hidden_size": 32, "num_hidden_layers": 2,
                   "num_attention_heads": 2, "intermediate_size": 64,
                   "max_position_embeddings": 32, "type_vocab_size": 2, "num_labels": 2}, f)
    shape = ["--model", model, "--batch", "2", "--seq-len", "16"]
    train = [kb, "train", *shape, "--data", data, "--vocab", vocab, "--device", device,
             "--steps", str(STEPS), "--dropout", "0", "--seed", "7"]

    def run(name, more, env=None):
        log = os.path.join(tmp, f"{name}.jsonl")
        r = subprocess.run([*train, *more, "--log", log], capture_output=True, text=True,
                           env={**os.environ, **(env or {})})
        check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr[-2000:]}")
        return read_jsonl(log)

    saved = os.path.join(tmp, "saved")
    launch_log = os.path.join(tmp, "launches.txt")
    ref = run("fp32", ["--precision", "fp32", "--save", saved])
    tf = run("tf32", ["--precision", "fp32", "--tf32", "--profile"],
             {"KILN_BERT_LAUNCH_LOG": launch_log})
    ref_steps = [x for x in ref if "step" in x]
    tf_steps = [x for x in tf if "step" in x]

    # 1, 2: close to fp32, but not equal
    check(len(ref_steps) == STEPS and len(tf_steps) == STEPS,
          f"{STEPS} steps each: {len(ref_steps)}, {len(tf_steps)}")
    same = True
    for a, b in zip(ref_steps, tf_steps):
        dl = abs(a["loss"] - b["loss"]) / abs(a["loss"])
        dn = abs(a["grad_norm"] - b["grad_norm"]) / abs(a["grad_norm"])
        print(f"{device} step {a['step']}: loss fp32 {a['loss']:.9g} tf32 {b['loss']:.9g} "
              f"(rel {dl:.2g} = {dl / U:.3g} u); grad norm fp32 {a['grad_norm']:.9g} "
              f"tf32 {b['grad_norm']:.9g} (rel {dn:.2g} = {dn / U:.3g} u)")
        check(dl <= LOSS_TOL, f"step {a['step']}: loss {b['loss']} with --tf32, {a['loss']} "
                              f"without: {dl:.3g} > {LOSS_TOL:.3g}")
        check(dn <= NORM_TOL, f"step {a['step']}: grad norm {b['grad_norm']} with --tf32, "
                              f"{a['grad_norm']} without: {dn:.3g} > {NORM_TOL:.3g}")
        same = same and a["loss"] == b["loss"] and a["grad_norm"] == b["grad_norm"]
    check(not same, "--tf32 changed nothing: every loss and norm is fp32's bit for bit")

    # 3: the pins, in the launch log, the profile and tune's list
    launched = collections.Counter()
    for line in open(launch_log) if os.path.exists(launch_log) else []:
        launched[tuple(line.rstrip("\n").split("|", 3))] += 1
    gemms = [k for k in launched if k[2] == "gemm"]
    check(len(gemms) >= 3, f"the launch log holds the gemm calls ({len(gemms)})")
    for f, pins, kernel, spec in launched:
        want = kernel == "gemm"
        check(("TF32=1" in pins.split()) == want,
              f"{kernel}: pins '{pins}' {'lack' if want else 'have'} TF32=1")
        if want:
            check(pins.startswith("T=f32 EPI="), f"gemm pins '{pins}'")
    prof = [x for x in tf if x.get("profile") and not x.get("total")]
    prof_gemm = [x for x in prof if x["kernel"] == "gemm"]
    check(prof_gemm and all("TF32=1" in x["pins"].split() for x in prof_gemm),
          f"--profile names TF32=1 for every gemm row ({len(prof_gemm)} rows)")
    r = subprocess.run([kb, "tune", *shape, "--precision", "fp32", "--tf32", "--device", "cpu",
                        "--list", "--json"], capture_output=True, text=True)
    check(r.returncode == 0, f"tune --list --tf32: exit {r.returncode}: {r.stderr}")
    listed = json.loads(r.stdout)["kernels"] if r.returncode == 0 else []
    got = {(k["file"], k["pins"], k["kernel"], k["spec"]) for k in listed}
    # the gemm calls (tune plans the config's dropout, this run trains at 0: the attention
    # calls differ in p_drop; kilnbert.tune compares whole lists)
    check(set(gemms) <= got, "tune --list --tf32 lists every gemm call the run launched: "
          f"missing {sorted(set(gemms) - got)[:2]}")
    check(any("TF32=1" in k[1] for k in got), "tune --list --tf32 names TF32=1")

    # 4: --tf32 means nothing in fp16 / bf16: refused
    for cmd, prec in ((["train", "--data", data, "--vocab", vocab], "fp16"),
                      (["tune", "--list"], "bf16")):
        def refuse(*more):
            return subprocess.run([kb, cmd[0], *shape, *cmd[1:], "--device", "cpu", *more],
                                  capture_output=True, text=True)
        invalid = refuse("--precision", "fp64").returncode
        r = refuse("--precision", prec, "--tf32")
        check(invalid not in (0, 1) and invalid < 128, f"--precision fp64: exit {invalid}")
        check(r.returncode == invalid and "--tf32" in r.stderr and prec in r.stderr,
              f"{cmd[0]} --precision {prec} --tf32: exit {r.returncode}, {r.stderr.strip()!r}")
        print(f"{cmd[0]} --precision {prec} --tf32: exit {r.returncode}: {r.stderr.strip()}")

    # 5: eval --tf32 (cpu only: the emu eval path has its own test)
    if device == "cpu" and os.path.exists(os.path.join(saved, "model.safetensors")):
        logits = {}
        for name, more in (("fp32", []), ("tf32", ["--tf32"])):
            dump = os.path.join(tmp, f"logits-{name}.txt")
            r = subprocess.run([kb, "eval", "--model", saved, "--data", data, "--vocab", vocab,
                                "--batch", "2", "--seq-len", "16", "--device", "cpu",
                                "--dump-logits", dump, *more], capture_output=True, text=True)
            check(r.returncode == 0, f"eval {name}: exit {r.returncode}: {r.stderr[-1000:]}")
            logits[name] = [float(v) for line in open(dump) for v in line.split()] \
                if os.path.exists(dump) else []
        a, b = logits["fp32"], logits["tf32"]
        check(len(a) == len(b) and len(a) > 0, f"eval logits: {len(a)}, {len(b)}")
        big = max((abs(v) for v in a), default=0.0)
        worst = max((abs(x - y) for x, y in zip(a, b)), default=0.0)
        print(f"eval logits: largest {big:.4g}, largest difference {worst:.3g} "
              f"({worst / max(big, 1e-30) / U:.3g} u of the largest)")
        check(worst <= LOGIT_TOL * big + 1e-6, f"eval --tf32 logits {worst:.3g} from fp32's")
        check(a != b, "eval --tf32 changed no logit")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
