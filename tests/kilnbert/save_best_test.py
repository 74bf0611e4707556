#!/usr/bin/env python3
"""kiln-bert train --save-best DIR (the checkpoint of the evaluation with the lowest eval_loss so
far) end to end on synthetic aclImdb-layout folders made here, the tiny model, fp32 on the cpu
device with dropout 0.1 and shuffling, 5 steps of 8 at a learning rate high enough that the
evaluations go up and down (--lr 5e-2), evaluated after every step (--eval-every 1; step 5's
evaluation is the end-of-run one); the best is step 2's, neither the first nor the last.

- Each {"eval_step": k, ...} record says whether its checkpoint was saved ("saved_best"): true
  exactly where its eval_loss is below every earlier one (the first always).
- DIR's trainer_state.json records the evaluation with the lowest eval_loss of the run (the
  earliest of equal ones), the end-of-run evaluation included: its step, loss, accuracy and
  samples; a {"best_step": k, "best_eval_loss": x, "best_accuracy": y} record says the same.
- DIR holds that step's model: `kiln-bert eval --model DIR` gives its eval_loss and accuracy bit
  for bit, and `--resume DIR` takes up the run there (its step).
- Saving changes nothing of the training: the step records are byte for byte those of the run
  without --save-best.
- Resumed (--stop-after 3 --save, then --resume) with the same --save-best directory, the run
  ends with the uninterrupted run's best (the first part's best is the bar the second part must
  beat; stderr says so).
- Refused, exit 64: --save-best without evaluation data, --save-best naming --save's
  directory, and a file; a --save-best directory whose recorded evaluation is malformed is
  refused on --resume (exit 65), naming "eval".
Usage: save_best_test.py KILN_BERT VOCAB"""
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
    run_args = ["--steps", "5", "--lr", "5e-2", "--seed", "5", "--dropout", "0.1"]
    return kbtest.train_logged(check, kb, vocab, tmp, name, run_args + list(args), ok=ok)


def state(d):
    with open(os.path.join(d, "trainer_state.json")) as f:
        return json.load(f)


def evaluations(recs):
    """[(step, eval_loss, accuracy, eval_samples)] of the periodic records and the summary."""
    out = [(x["eval_step"], x["eval_loss"], x["accuracy"], x["eval_samples"])
           for x in recs if "eval_step" in x]
    s = next(x for x in recs if "summary" in x)
    steps = max(x["step"] for x in recs if "step" in x)
    return out + [(steps, s["eval_loss"], s["accuracy"], s["eval_samples"])]


def best_of(evals):
    best = None
    for e in evals:
        if best is None or e[1] < best[1]:
            best = e
    return best


with tempfile.TemporaryDirectory() as tmp:
    root = os.path.join(tmp, "imdb")
    kbtest.write_reviews(root, 8)
    kbtest.write_reviews(root, 6, split="test")
    best_dir = os.path.join(tmp, "best")

    recs, _ = train(tmp, "best", "--eval-every", "1", "--save-best", best_dir)
    evals = evaluations(recs)
    print("evaluations (step, eval_loss, accuracy, samples):", evals)
    check(len(evals) == 5, f"{len(evals)} evaluations, expected 5")
    low = float("inf")
    for x in (r for r in recs if "eval_step" in r):
        want = x["eval_loss"] < low
        check(x.get("saved_best") is want,
              f"step {x['eval_step']}: saved_best {x.get('saved_best')}, expected {want}")
        low = min(low, x["eval_loss"])
    want = best_of(evals)
    check(1 < want[0] < 5, f"the best evaluation is step {want[0]}'s: the run tests too little")
    st = state(best_dir).get("eval", {})
    got = (st.get("step"), st.get("eval_loss"), st.get("accuracy"), st.get("eval_samples"))
    print("best:", want, "recorded:", got)
    check(got == want, f"{best_dir} records {got}, the run's best is {want}")
    check(state(best_dir).get("step") == want[0],
          f"{best_dir} is the checkpoint of step {state(best_dir).get('step')}, not {want[0]}")
    rec = [x for x in recs if "best_step" in x]
    check(len(rec) == 1 and (rec[0]["best_step"], rec[0]["best_eval_loss"],
                             rec[0]["best_accuracy"]) == want[:3], f"best record {rec}")
    check(all(not ("step" in x and "loss" in x) for x in recs if "best_step" in x),
          "the best record carries step and loss")
    # each eval record's loss must be a float the checkpoint reproduces bit for bit
    elog = os.path.join(tmp, "eval.jsonl")
    r = subprocess.run([kb, "eval", "--model", best_dir, "--data", root, "--vocab", vocab,
                        "--batch", "8", "--seq-len", "16", "--log", elog],
                       capture_output=True, text=True, env=ENV)
    check(r.returncode == 0, f"eval of {best_dir}: exit {r.returncode}: {r.stderr[-600:]}")
    e = json.loads(open(elog).read()) if r.returncode == 0 else {}
    check((e.get("eval_loss"), e.get("accuracy")) == want[1:3],
          f"kiln-bert eval of {best_dir}: {e.get('eval_loss')}, {e.get('accuracy')}; "
          f"recorded {want[1:3]}")

    plain, _ = train(tmp, "plain", "--eval-every", "1")
    steps = [json.dumps(x) for x in recs if "step" in x]
    check(steps and steps == [json.dumps(x) for x in plain if "step" in x],
          "--save-best changed the step records")

    # stopped after step 3 and resumed: the same best at the end
    best2 = os.path.join(tmp, "best2")
    ck = os.path.join(tmp, "ck")
    first, _ = train(tmp, "first", "--eval-every", "1", "--save-best", best2, "--stop-after", "3",
                     "--save", ck)
    second, r = train(tmp, "second", "--eval-every", "1", "--save-best", best2, "--resume", ck)
    st = state(best2).get("eval", {})
    got = (st.get("step"), st.get("eval_loss"), st.get("accuracy"), st.get("eval_samples"))
    check(got == want, f"resumed run: {best2} records {got}, the uninterrupted run's best {want}")
    check("is the one to beat" in r.stderr, f"no note of the bar on --resume: {r.stderr[-300:]}")

    # refusals
    _, r = train(tmp, "nodata", "--save-best", best_dir, "--data", os.path.join(root, "train"),
                 ok=False)
    check(r.returncode == 64 and "--save-best" in r.stderr and "no data to evaluate on" in r.stderr,
          f"--save-best without evaluation data: exit {r.returncode}: {r.stderr[-300:]}")
    _, r = train(tmp, "same", "--save-best", ck, "--save", ck + "/", ok=False)
    check(r.returncode == 64 and "--save's directory" in r.stderr,
          f"--save-best = --save: exit {r.returncode}: {r.stderr[-300:]}")
    afile = os.path.join(tmp, "afile")
    open(afile, "w").close()
    _, r = train(tmp, "file", "--save-best", afile, ok=False)
    check(r.returncode == 64 and "not a directory" in r.stderr,
          f"--save-best FILE: exit {r.returncode}: {r.stderr[-300:]}")
    s = state(best2)
    s["eval"]["eval_loss"] = -1
    with open(os.path.join(best2, "trainer_state.json"), "w") as f:
        json.dump(s, f)
    _, r = train(tmp, "bad", "--save-best", best2, "--resume", ck, ok=False)
    check(r.returncode != 0 and r.returncode < 128 and '"eval"' in r.stderr,
          f"a malformed recorded evaluation: exit {r.returncode}: {r.stderr[-300:]}")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
