#!/usr/bin/env python3
"""kiln-bert train end to end on a synthetic aclImdb-layout folder made here: 16 short reviews
(8 pos, 8 neg, words of the test vocabulary), the tiny model, fp32 on the cpu device, dropout
0, 20 steps of 8. Checks the contract's log (one record per step, k = 1..20, numeric loss, lr
after the schedule, grad_norm; the summary record with its six metrics; nothing else carrying
step and loss), that nothing is drawn on stderr when it is not a terminal, that the loss falls
(the two classes differ in words, so the model fits them within 20 steps), that --save
writes config.json and model.safetensors, and that the losses are the same with fixed and
dynamic padding, and that --group-by-length pads an epoch of reviews of varied lengths less
than the shuffled run, the summary's padding_share being 1 - the samples' own tokens over those
fed (and is refused without dynamic padding or with --no-shuffle). Then the
same run in fp16 and bf16: every record's scale (65536 for fp16's
loss scaler, 1 otherwise) and skipped (false: nothing overflows here), losses within 4 unit
roundoffs of T of fp32's (kilnbert.precision holds the tighter check), and fp16's --save
writing F32 master weights.
Usage: train_test.py KILN_BERT VOCAB"""
import json
import os
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
check = kbtest.Checks()


with tempfile.TemporaryDirectory() as tmp:
    kbtest.write_reviews(os.path.join(tmp, "imdb"), 8)
    log = os.path.join(tmp, "log.jsonl")
    save = os.path.join(tmp, "saved")
    cmd = [kb, "train", "--model", "tiny", "--data", os.path.join(tmp, "imdb"), "--vocab", vocab,
           "--device", "cpu", "--precision", "fp32", "--steps", "20", "--batch", "8",
           "--seq-len", "16", "--dropout", "0", "--lr", "1e-3", "--schedule", "linear",
           "--warmup", "2", "--seed", "3", "--log", log, "--save", save]
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    check(r.stderr == "", f"stderr is not a terminal, yet: {r.stderr!r}")
    recs = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    steps = [x for x in recs if "step" in x and "loss" in x]
    check([x["step"] for x in steps] == list(range(1, 21)), "steps 1..20 in order")
    check(all(isinstance(x["loss"], float) for x in steps), "numeric losses")
    # linear with 2 warmup steps of 20: lr x j / 2 for j < 2, then (20 - j) / 18
    want_lr = [1e-3 * (j / 2 if j < 2 else (20 - j) / 18) for j in range(20)]
    check(all(abs(x["lr"] - w) <= 1e-9 for x, w in zip(steps, want_lr)), "lr follows the schedule")
    check(all(x["grad_norm"] > 0 for x in steps), "grad norms")
    check(all(x.get("scale") == 1 and x.get("skipped") is False for x in steps),
          "fp32 records have scale 1 and skipped false")
    summ = [x for x in recs if "summary" in x]
    check(len(summ) == 1 and recs[-1] is summ[0], "one summary record, last")
    if summ:
        s = summ[0]
        for key in ("first_iter_time", "avg_iter_time", "iter_per_sec", "samples_per_sec",
                    "total_time", "total_time_hr"):
            check(key in s, f"summary has {key}")
        check(len(s.get("total_time_hr", "")) == 8, "total_time_hr is HH:MM:SS")
    if len(steps) == 20:
        first = sum(x["loss"] for x in steps[:5]) / 5
        last = sum(x["loss"] for x in steps[-5:]) / 5
        print(f"mean loss of steps 1-5 {first:.4f}, of steps 16-20 {last:.4f}")
        check(last < 0.7 * first, f"the loss fell: {first:.4f} -> {last:.4f}")
    for name in ("config.json", "model.safetensors"):
        check(os.path.isfile(os.path.join(save, name)), f"--save wrote {name}")

    # losses must not depend on how much padding there is (contract 3.7): rows padded to 64
    # against rows padded to the batch's bucket (32), same order, 3 steps of 5
    losses = {}
    for padding in ("fixed", "dynamic"):
        plog = os.path.join(tmp, f"{padding}.jsonl")
        r = subprocess.run([kb, "train", "--model", "tiny", "--data", os.path.join(tmp, "imdb"),
                            "--vocab", vocab, "--steps", "3", "--batch", "5", "--seq-len", "64",
                            "--padding", padding, "--dropout", "0", "--no-shuffle", "--log", plog],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"{padding} padding: exit {r.returncode}: {r.stderr}")
        losses[padding] = [json.loads(line)["loss"] for line in open(plog)
                           if "step" in json.loads(line)] if os.path.exists(plog) else []
    check(len(losses["fixed"]) == 3 and
          all(abs(a - b) <= 1e-5 * max(1, abs(a)) for a, b in zip(losses["fixed"], losses["dynamic"])),
          f"losses depend on the padding: {losses}")

    # --group-by-length: reviews of 11 to 88 words (16, the 4 batches of an epoch, in one
    # run); grouped, dynamic padding pads each batch to about its own length, so the epoch's
    # attention launches run shorter rows (the launch log's S) than the same shuffled run's;
    # without dynamic padding or with --no-shuffle it is a bad command line (64)
    varied = os.path.join(tmp, "varied")
    for label, text in (("pos", kbtest.POS), ("neg", kbtest.NEG)):
        os.makedirs(os.path.join(varied, "train", label))
        for i in range(8):
            with open(os.path.join(varied, "train", label, f"{i}_5.txt"), "w") as f:
                f.write(" ".join([text] * (i + 1)) + "\n")
    # the samples' own tokens ([CLS] to [SEP], at most 128), one epoch's worth whatever the order
    texts = "".join(" ".join([t] * (i + 1)) + "\n" for t in (kbtest.POS, kbtest.NEG) for i in range(8))
    tok = subprocess.run([kb, "tokenize", "--vocab", vocab], input=texts, capture_output=True,
                         text=True)
    own = sum(min(len(line.split()), 128) for line in tok.stdout.splitlines())
    rows, shares = {}, {}
    for name, extra in (("shuffled", []), ("grouped", ["--group-by-length"])):
        glog, launches = os.path.join(tmp, f"{name}.jsonl"), os.path.join(tmp, f"{name}.launches")
        r = subprocess.run([kb, "train", "--model", "tiny", "--data", varied, "--vocab", vocab,
                            "--steps", "4", "--batch", "4", "--seq-len", "128", "--padding",
                            "dynamic", "--dropout", "0", "--seed", "5", *extra, "--log", glog],
                           capture_output=True, text=True,
                           env=dict(os.environ, KILN_BERT_LAUNCH_LOG=launches))
        check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
        recs = [json.loads(x) for x in open(glog)] if r.returncode == 0 else []
        check(len([x for x in recs if "step" in x]) == 4 and
              all(x["loss"] is not None for x in recs if "step" in x), f"{name}: 4 finite losses")
        rows[name] = [int(part.split("=")[1]) for line in open(launches) if "|attn_fwd|" in line
                      for part in line.split(";") if part.strip().startswith("S=")] \
            if r.returncode == 0 else []
        # padding_share: 1 - the samples' own tokens over those fed (4 rows a step, each step's
        # width the S of its attention launches, 2 layers a step)
        fed = 4 * sum(rows[name][::2])
        shares[name] = next((x["padding_share"] for x in recs if x.get("summary")), None)
        check(tok.returncode == 0 and fed and shares[name] is not None and
              abs(shares[name] - (1 - own / fed)) < 1e-9,
              f"{name}: padding_share {shares[name]}, 1 - {own} / {fed} expected")
    print("attention rows an epoch, shuffled:", rows["shuffled"], "grouped:", rows["grouped"])
    check(rows["grouped"] and sum(rows["grouped"]) < sum(rows["shuffled"]),
          "grouped by length, the epoch's batches are padded less")
    print("padding_share, shuffled:", shares["shuffled"], "grouped:", shares["grouped"])
    for bad in (["--padding", "fixed"], ["--padding", "dynamic", "--no-shuffle"]):
        r = subprocess.run([kb, "train", "--model", "tiny", "--data", varied, "--vocab", vocab,
                            "--steps", "1", "--group-by-length", *bad], capture_output=True,
                           text=True)
        check(r.returncode == 64 and "--group-by-length" in r.stderr,
              f"--group-by-length {' '.join(bad)}: exit {r.returncode} (64 expected): {r.stderr}")

    # fp16 and bf16: the same run; 4 u of T on each loss (f16 u = 2^-11, bf16 2^-8)
    fp32_losses = [x["loss"] for x in steps]
    for prec, u, scale in (("fp16", 2.0 ** -11, 65536), ("bf16", 2.0 ** -8, 1)):
        plog = os.path.join(tmp, f"{prec}.jsonl")
        psave = os.path.join(tmp, f"saved-{prec}")
        pcmd = [a for a in cmd]
        pcmd[pcmd.index("--precision") + 1] = prec
        pcmd[pcmd.index("--log") + 1] = plog
        pcmd[pcmd.index("--save") + 1] = psave
        r = subprocess.run(pcmd, capture_output=True, text=True)
        check(r.returncode == 0, f"{prec}: exit {r.returncode}: {r.stderr}")
        precs = [json.loads(line) for line in open(plog)] if os.path.exists(plog) else []
        psteps = [x for x in precs if "step" in x and "loss" in x]
        check([x["step"] for x in psteps] == list(range(1, 21)), f"{prec}: steps 1..20")
        check(all(x.get("scale") == scale and x.get("skipped") is False for x in psteps),
              f"{prec}: every record has scale {scale} and skipped false")
        worst = max((abs(x["loss"] - l) for x, l in zip(psteps, fp32_losses)), default=1)
        print(f"{prec}: largest loss difference from fp32 {worst:.3g} (tolerance {4 * u:.3g})")
        check(len(psteps) == 20 and worst <= 4 * u, f"{prec}: losses within {4 * u:.3g} of fp32's")
        st = os.path.join(psave, "model.safetensors")
        dtypes = set()
        if os.path.isfile(st):
            with open(st, "rb") as f:
                n = int.from_bytes(f.read(8), "little")
                header = json.loads(f.read(n))
            dtypes = {v["dtype"] for k, v in header.items() if k != "__metadata__"}
        check(dtypes == {"F32"}, f"{prec}: --save wrote the master weights as F32: {dtypes}")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
