#!/usr/bin/env python3
"""kiln-bert train's whole-step replay (--graphs; kiln_bert_model_set_graphs) on the cpu device,
whose graphs record launches and replay them in order: the path cuda takes, with numbers to
compare. Reviews of two lengths under dynamic padding, in batches of 4 with a partial last
batch, give several batch shapes (4 or 2 rows x 64 or 128 tokens; three with the batches
grouped by length) that come back epoch after epoch.
  - one cpu thread (KILN_CPU_THREADS=1; any count gives the same bits): the losses and
    gradient norms of a run with --graphs equal those of --no-graphs bit for bit, in fp32 and
    fp16 (whose loss scale reaches the replay through a device buffer), with dropout 0 and
    0.1 (whose per-step random streams are kernel arguments: each step recaptures);
  - what replay did (KILN_BERT_GRAPH_STATS): each shape's first pass runs on the stream, its
    second is captured, the rest replayed; without dropout nothing is recaptured, with it every
    replay after the capture is a recapture in place; the default on cpu is off;
  - --graphs where it cannot be (with --profile, whose tap a replay would pass by) is refused
    with a message and exit 64 (a bad combination of options) before any step.
Usage: graphs_test.py KILN_BERT VOCAB"""
import json
import os
import re
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
check = kbtest.Checks()
STEPS = 12


def write_data(root):
    """5 reviews a label, short (one sentence) and long (eight), so that dynamic padding gives
    buckets of 64 and 128 tokens."""
    for label, text in (("pos", kbtest.POS), ("neg", kbtest.NEG)):
        d = os.path.join(root, "train", label)
        os.makedirs(d, exist_ok=True)
        for i in range(5):
            with open(os.path.join(d, f"{i}_5.txt"), "w") as f:
                f.write(" ".join([text] * (8 if i % 2 else 1)) + f" {i}\n")


def train(tmp, name, *extra):
    log = os.path.join(tmp, f"{name}.jsonl")
    env = dict(os.environ, KILN_CPU_THREADS="1", KILN_BERT_GRAPH_STATS="1")
    r = subprocess.run([kb, "train", "--model", "tiny", "--data", os.path.join(tmp, "imdb"),
                        "--vocab", vocab, "--steps", str(STEPS), "--batch", "4", "--seq-len",
                        "128", "--padding", "dynamic", "--lr", "1e-3", "--seed", "7", "--log",
                        log, *extra], capture_output=True, text=True, env=env)
    recs = [json.loads(x) for x in open(log)] if os.path.exists(log) else []
    steps = [(x["loss"], x["grad_norm"]) for x in recs if "step" in x]
    m = re.search(r"graphs: eager (\d+) captures (\d+) updates (\d+) replays (\d+) shapes (\d+)",
                  r.stderr)
    stats = dict(zip(("eager", "captures", "updates", "replays", "shapes"),
                     map(int, m.groups()))) if m else None
    return r, steps, stats


with tempfile.TemporaryDirectory() as tmp:
    write_data(os.path.join(tmp, "imdb"))
    for prec in ("fp32", "fp16"):
        for drop in ("0", "0.1"):
            tag = f"{prec} dropout {drop}"
            args = ("--precision", prec, "--dropout", drop)
            r0, plain, s0 = train(tmp, f"plain-{prec}-{drop}", "--no-graphs", *args)
            r1, replay, s1 = train(tmp, f"graph-{prec}-{drop}", "--graphs", *args)
            check(r0.returncode == 0 and r1.returncode == 0,
                  f"{tag}: exit {r0.returncode} / {r1.returncode}: {r0.stderr[-400:]} {r1.stderr[-400:]}")
            print(f"{tag}: stream {s0}, graphs {s1}")
            print(f"  losses {[x[0] for x in plain]}")
            check(len(plain) == STEPS and plain == replay,
                  f"{tag}: replayed steps {replay} differ from launched ones {plain}")
            check(s0 is not None and s0["eager"] == STEPS and s0["replays"] == 0,
                  f"{tag}: --no-graphs replayed: {s0}")
            if not s1:
                check(False, f"{tag}: no graph stats on stderr: {r1.stderr[-400:]}")
                continue
            shapes = s1["eager"]
            check(shapes >= 2, f"{tag}: {shapes} first passes, expected 2 or more batch shapes")
            check(s1["captures"] == shapes and s1["shapes"] == shapes,
                  f"{tag}: {s1['captures']} captures, {s1['shapes']} graphs for {shapes} shapes")
            check(s1["eager"] + s1["replays"] == STEPS, f"{tag}: passes do not add up: {s1}")
            want_updates = s1["replays"] - s1["captures"] if drop != "0" else 0
            check(s1["updates"] == want_updates,
                  f"{tag}: {s1['updates']} recaptures, expected {want_updates}")

    # the default on cpu is the stream
    r, _, s = train(tmp, "default")
    check(r.returncode == 0 and s is not None and s["replays"] == 0 and s["eager"] == STEPS,
          f"the cpu default replayed: exit {r.returncode}, {s}")

    # refused before any step: a tap that a replay would pass by
    r, steps, _ = train(tmp, "profiled", "--graphs", "--profile")
    check(r.returncode == 64 and "graphs" in r.stderr and not steps,
          f"--graphs --profile: exit {r.returncode}, {len(steps)} steps, {r.stderr[-300:]!r}")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
