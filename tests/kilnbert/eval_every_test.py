#!/usr/bin/env python3
"""kiln-bert train --eval-every N (an evaluation after every N-th step before the last) end to end
on synthetic aclImdb-layout folders made here (train and test splits), the tiny model, fp32 on
the cpu device with dropout 0.1 and shuffling, 6 steps of 8.

- The log holds one {"eval_step": k, "eval_loss", "accuracy", "eval_samples", "eval_time"}
  record after steps 2 and 4 (6 is the last: its evaluation is the summary's), in order after
  the step records up to k, none of them carrying "step" and "loss" (the contract keeps those
  for step records).
- Evaluating changes nothing of the training: the step records are byte for byte those of the
  same run without --eval-every (dropout masks, the stream, the model's state).
- Each evaluation is the model of that step: eval_step 2's loss and accuracy are, bit for bit,
  those `kiln-bert eval` gives on the checkpoint of the same run stopped after step 2 (--save
  --stop-after 2), in batches of the same 8 rows; step 4's likewise.
- Without evaluation data (--data a split directory, no --eval-data) it is refused, naming
  the option, exit 64 (a usage error).
Usage: eval_every_test.py KILN_BERT VOCAB"""
import json
import os
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
check = kbtest.Checks()
ENV = dict(os.environ, KILN_CPU_THREADS="1")


def train(tmp, name, *args, ok=True):
    """(the log's records, the run) of a training run of the tiny model."""
    run_args = ["--steps", "6", "--lr", "1e-3", "--seed", "5", "--dropout", "0.1"]
    return kbtest.train_logged(check, kb, vocab, tmp, name, run_args + list(args), ok=ok)


def eval_checkpoint(tmp, step):
    """eval_loss and accuracy `kiln-bert eval` gives on the run's checkpoint after `step`."""
    save = os.path.join(tmp, f"at{step}")
    train(tmp, f"stop{step}", "--stop-after", str(step), "--save", save)
    log = os.path.join(tmp, f"eval{step}.jsonl")
    r = subprocess.run([kb, "eval", "--model", save, "--data", os.path.join(tmp, "imdb"),
                        "--vocab", vocab, "--batch", "8", "--seq-len", "16", "--log", log],
                       capture_output=True, text=True, env=ENV)
    check(r.returncode == 0, f"eval of step {step}: exit {r.returncode}: {r.stderr[-600:]}")
    rec = json.loads(open(log).read()) if r.returncode == 0 else {}
    return rec.get("eval_loss"), rec.get("accuracy")


with tempfile.TemporaryDirectory() as tmp:
    root = os.path.join(tmp, "imdb")
    kbtest.write_reviews(root, 8)
    kbtest.write_reviews(root, 6, split="test")

    recs, _ = train(tmp, "every2", "--eval-every", "2")
    evals = [x for x in recs if "eval_step" in x]
    check([x["eval_step"] for x in evals] == [2, 4],
          f"eval records at steps {[x.get('eval_step') for x in evals]}, expected [2, 4]")
    for x in evals:
        check(not ("step" in x and "loss" in x), f"an eval record carries step and loss: {x}")
        check(x.get("eval_samples") == 12 and 0 <= x.get("accuracy", -1) <= 1 and
              isinstance(x.get("eval_loss"), float) and x.get("eval_time", -1) >= 0,
              f"eval record {x}")
    order = [x.get("step", x.get("eval_step")) for x in recs if "summary" not in x]
    check(order == [1, 2, 2, 3, 4, 4, 5, 6], f"records in the order {order}")

    plain, _ = train(tmp, "plain")
    steps = [json.dumps(x) for x in recs if "step" in x]
    check(steps and steps == [json.dumps(x) for x in plain if "step" in x],
          "--eval-every changed the step records")

    for x in evals:
        loss, acc = eval_checkpoint(tmp, x["eval_step"])
        print(f"step {x['eval_step']}: eval_loss {x['eval_loss']} accuracy {x['accuracy']}; "
              f"kiln-bert eval of its checkpoint: {loss} {acc}")
        check(loss == x["eval_loss"] and acc == x["accuracy"],
              f"step {x['eval_step']}: eval_loss {x['eval_loss']}, accuracy {x['accuracy']}; "
              f"its checkpoint evaluates to {loss}, {acc}")

    _, r = train(tmp, "nodata", "--eval-every", "2", "--data", os.path.join(root, "train"),
                 ok=False)
    check(r.returncode == 64 and "--eval-every 2: no data to evaluate on" in r.stderr,
          f"--eval-every without evaluation data: exit {r.returncode}: {r.stderr[-300:]}")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
