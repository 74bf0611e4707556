#!/usr/bin/env python3
"""kiln-bert train --profile on the cpu device: where a step's time goes, per kernel call.

Two runs of the tiny model, 3 steps of 4 x 16 tokens, dropout 0, one worker thread:
  A: with KILN_BERT_LAUNCH_LOG (every launch, one line each) and no --profile;
  B: with --profile --log.
Checks: B's {"profile": true} records name exactly the calls of A's log (file, pins, kernel,
spec), each with A's launches per step (A's count / 3: every step of fixed padding launches the
same); every time >= 0; the summed kernel time at most the measured step time x 1.05 (the
host clock around a launch cannot exceed the step's clock around all of them; 5% for the
clocks' own reading); the step time in the total record is the summary's avg_iter_time (both
are the mean of steps 2..3); the losses of B are A's bit for bit (profiling changes nothing);
every log line parses; the table is printed after the summary, one row per call; each call's
work (a gemm's 2MNK flops, attention's products, bytes at least its largest tensor's) and its
TFLOP/s and GB/s are that work over its time; each call names the variant it ran (a config, and
promises that its integer arguments keep). A 1-step run says that no step was timed.
eval --profile of the saved model (12 samples in 3 batches of 4; 2 timed): its eval_loss that of
eval without it; --json's records parse; the calls are forward ones only (attn_fwd once per
layer a batch, no backward or optimizer kernel); times >= 0 within the batch's time x 1.05.
Usage: profile_test.py KILN_BERT VOCAB"""
import collections
import json
import os
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1:3]
check = kbtest.Checks()
work = tempfile.mkdtemp(prefix="kb-profile-")
data = os.path.join(work, "imdb")
kbtest.write_reviews(data, 6)
STEPS = 3
base = ["train", "--model", "tiny", "--data", data, "--vocab", vocab, "--steps", str(STEPS),
        "--batch", "4", "--seq-len", "16", "--dropout", "0", "--no-shuffle"]


def run(args, log, env=None):
    r = subprocess.run([kb, *args, "--log", log], capture_output=True, text=True,
                       env=dict(os.environ, KILN_CPU_THREADS="1", **(env or {})))
    check(r.returncode == 0, f"kiln-bert {' '.join(args[-2:])}: exit {r.returncode}: {r.stderr[-2000:]}")
    records = []
    for i, line in enumerate(open(log) if r.returncode == 0 else []):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            check(False, f"{log}:{i + 1} is not JSON ({e}): {line[:200]!r}")
    return r, records


launch_log = os.path.join(work, "launches.txt")
saved = os.path.join(work, "saved")
_, rec_a = run([*base, "--save", saved], os.path.join(work, "a.jsonl"),
               {"KILN_BERT_LAUNCH_LOG": launch_log})
r_b, rec_b = run([*base, "--profile"], os.path.join(work, "b.jsonl"))

losses_a = [x["loss"] for x in rec_a if "step" in x]
losses_b = [x["loss"] for x in rec_b if "step" in x]
print("losses without --profile", losses_a, "with", losses_b)
check(len(losses_a) == STEPS and losses_a == losses_b, "--profile changes no loss (bit for bit)")

launched = collections.Counter(tuple(line.rstrip("\n").split("|", 3)) for line in open(launch_log))
rows = [x for x in rec_b if x.get("profile") and not x.get("total")]
totals = [x for x in rec_b if x.get("profile") and x.get("total")]
profiled = {(x["file"], x["pins"], x["kernel"], x["spec"]): x for x in rows}
print(f"{len(launched)} distinct calls launched, {sum(launched.values())} launches in "
      f"{STEPS} steps; {len(rows)} profile rows")
check(len(rows) > 10, "a profile row per distinct call")
check(set(profiled) == set(launched), "the profile's calls are the launch log's: "
      f"only logged {sorted(set(launched) - set(profiled))[:3]}, "
      f"only profiled {sorted(set(profiled) - set(launched))[:3]}")
for key, n in launched.items():
    x = profiled.get(key)
    if x:
        check(x["launches_per_step"] == n / STEPS,
              f"{key[2]} {x['shape']}: {x['launches_per_step']} launches a step profiled, "
              f"{n}/{STEPS} logged")
for x in rows:
    check(x["ms_per_step"] >= 0 and x["us_per_launch"] >= 0 and 0 <= x["share"] <= 1,
          f"{x['kernel']}: times >= 0 ({x['ms_per_step']} ms, {x['us_per_launch']} us)")
check(abs(sum(x["share"] for x in rows) - 1) < 1e-6, "the shares add up to 1")


def dims(shape):
    """'M=4 N=2 K=128 nt' -> {'M': 4, 'N': 2, 'K': 128}"""
    return {k: int(v) for k, v in (w.split("=") for w in shape.split() if "=" in w)}


# the work of each call: a gemm's 2MNK, attention's S x S x D products per head (2 forward, 4
# for dK/dV, 3 for dQ), none for the memory-bound kernels; the bytes at least those of the
# kernel's largest tensor in f32 (4 bytes an element); the rates its work over its time
for x in rows:
    d = dims(x["shape"])
    prods = {"attn_fwd": 2, "attn_bwd_dkdv": 4, "attn_bwd_dq": 3}.get(x["kernel"])
    if x["kernel"] == "gemm":
        want = 2.0 * d["M"] * d["N"] * d["K"]
        big = max(d["M"] * d["K"], d["K"] * d["N"], d["M"] * d["N"])
    elif prods:
        want = 2.0 * prods * d["bh"] * d["S"] * d["S"] * d["D"]
        big = d["bh"] * d["S"] * d["D"]
    else:
        want, big = 0.0, max(d.values())
    check(x["flops_per_launch"] == want,
          f"{x['kernel']} {x['shape']}: {x['flops_per_launch']} flops a launch, expected {want}")
    check(x["bytes_per_launch"] >= 4 * big,
          f"{x['kernel']} {x['shape']}: {x['bytes_per_launch']} bytes, under 4 x {big}")
    secs = 1e-3 * x["ms_per_step"]
    for key, per, unit in (("tflops", "flops_per_launch", 1e12), ("gbps", "bytes_per_launch", 1e9)):
        rate = x[per] * x["launches_per_step"] / secs / unit if secs > 0 else 0
        check(abs(x[key] - rate) <= 1e-6 * max(rate, 1e-12),
              f"{x['kernel']} {x['shape']}: {key} {x[key]}, its work over its time {rate}")


def spec_ints(spec):
    """'kernel=gemm; M=4; sak=1; a: f16[8]' -> {'M': 4, 'sak': 1} (the integer arguments)"""
    out = {}
    for part in spec.split(";"):
        k, _, v = part.strip().partition("=")
        if v.lstrip("-").isdigit():
            out[k] = int(v)
    return out


# the variant each call ran, as its library says (kiln_rt_function_about): a config with the
# warps, and promises the call's integer arguments keep (X=1, X%16)
for x in rows:
    v, args = x.get("variant", ""), spec_ints(x["spec"])
    config, _, rest = v.partition(", promises ")
    check("num_warps=" in config and all("=" in w for w in config.split(",")[:1]),
          f"{x['kernel']} {x['shape']}: variant {v!r} names a config")
    for promise in rest.split(", ")[0].split(",") if rest else []:
        name, op, val = promise.partition("=") if "=" in promise else promise.partition("%")
        got = args.get(name)
        ok = got is not None and (got == int(val) if op == "=" else got % int(val) == 0)
        check(ok, f"{x['kernel']} {x['shape']}: the variant promises {promise}, the call has "
                  f"{name}={got}")
check(any("promises" in x.get("variant", "") for x in rows if x["kernel"] == "gemm"),
      "the gemm calls run variants with promises (sak=1 ...), not the generic copy")
check([x["ms_per_step"] for x in rows] == sorted((x["ms_per_step"] for x in rows), reverse=True),
      "rows sorted by time, most first")
check(len(totals) == 1, "one total record")
summary = [x for x in rec_b if x.get("summary")]
if totals and summary:
    t = totals[0]
    kernel_ms = sum(x["ms_per_step"] for x in rows)
    print(f"kernels {kernel_ms:.3f} ms of a {t['step_ms']:.3f} ms step ({t['clock']} clock)")
    check(t["timed_steps"] == STEPS - 1, f"{t['timed_steps']} timed steps: all but the first")
    check(abs(t["kernel_ms_per_step"] - kernel_ms) <= 1e-6 * max(1, kernel_ms),
          "the total record's kernel time is the rows' sum")
    check(kernel_ms <= 1.05 * t["step_ms"], f"kernel time {kernel_ms} ms <= step {t['step_ms']} ms x 1.05")
    check(abs(t["step_ms"] - 1e3 * summary[0]["avg_iter_time"]) <= 1e-6 * t["step_ms"],
          f"step time {t['step_ms']} ms is avg_iter_time {summary[0]['avg_iter_time']} s")
    check(t["calls"] == len(rows), "the total record counts the rows")

out = r_b.stdout
check("profile:" in out and out.index("profile:") > out.index("last loss"),
      "the profile table comes after the summary table")
table = out[out.find("profile:"):].splitlines()[2:-1] if "profile:" in out else []
check(len(table) == len(rows), f"{len(table)} table rows for {len(rows)} calls")
check(all("num_warps=" in line for line in table), "each table row names its variant's config")
check("host work and launch overhead" in out, "the table ends with kernel time against step time")

one = list(base)
one[one.index("--steps") + 1] = "1"
r_one, rec_one = run([*one, "--profile"], os.path.join(work, "one.jsonl"))
check("no step was timed" in r_one.stdout, "a 1-step run says no step was timed")
check(any(x.get("profile") and x.get("timed_steps") == 0 for x in rec_one),
      "and logs a total record with 0 timed steps")

# eval --profile
evalargs = [kb, "eval", "--model", saved, "--data", os.path.join(data, "train"), "--vocab", vocab,
            "--batch", "4", "--seq-len", "16", "--json"]
plain = subprocess.run(evalargs, capture_output=True, text=True)
prof = subprocess.run([*evalargs, "--profile"], capture_output=True, text=True)
check(plain.returncode == 0 and prof.returncode == 0,
      f"eval: exit {plain.returncode}, --profile {prof.returncode}: {prof.stderr[-1000:]}")
try:
    recs = [json.loads(x) for x in prof.stdout.splitlines() if x.strip()]
    want = [json.loads(x) for x in plain.stdout.splitlines() if x.strip()]
except json.JSONDecodeError as e:
    recs, want = [], []
    check(False, f"eval --json --profile: not JSON lines ({e}): {prof.stdout[:300]!r}")
summ = [x for x in recs if x.get("summary")]
calls = [x for x in recs if x.get("profile") and not x.get("total")]
total = [x for x in recs if x.get("profile") and x.get("total")]
check(summ and want and summ[0]["eval_loss"] == want[0]["eval_loss"],
      "eval --profile gives eval's eval_loss bit for bit")
check(len(total) == 1 and total[0]["timed_steps"] == 2, f"eval: 2 timed batches of 3: {total}")
kernels = {x["kernel"] for x in calls}
print("eval profile kernels:", sorted(kernels))
check(not kernels & {"attn_bwd_delta", "attn_bwd_dkdv", "attn_bwd_dq", "adamw_step", "xent_bwd"},
      "eval runs forward kernels only")
attn = [x for x in calls if x["kernel"] == "attn_fwd"]
check(len(attn) == 1 and attn[0]["launches_per_step"] == 2, f"attn_fwd once per layer: {attn}")
check(all(x["ms_per_step"] >= 0 for x in calls) and total
      and sum(x["ms_per_step"] for x in calls) <= 1.05 * total[0]["step_ms"],
      "eval: times >= 0 and within the batch's")

print("all passed" if not check.fails else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
