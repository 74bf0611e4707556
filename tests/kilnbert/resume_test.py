#!/usr/bin/env python3
"""kiln-bert train --save / --resume and the end-of-run evaluation, end to end on synthetic
aclImdb-layout folders made here (tiny model, fp32, cpu, dropout 0).

resume:   a 12-step run (batches of 5 over 16 shuffled samples, so it crosses three epochs)
          stopped after step 5 with --stop-after and --save, then --resume'd to step 12, logs
          the same step records as the uninterrupted run, bit for bit (the %.9g values are
          exact f32s; one cpu thread, see ENV), and saves the same model, moments and state
          byte for byte; so does a run SIGKILLed after its first
          --save-every checkpoint and resumed from it; the summary carries tokens_per_sec,
          peak_device_bytes and the eval pass's eval_loss/accuracy (null without a test
          split), on the first N test samples with --eval-max-samples N (else --max-samples);
          step records carry scale 1 and skipped false. Bad checkpoints (missing,
          truncated state, a flipped byte in the weights, no optimizer file), a changed batch,
          a run with nothing left and a --stop-after already reached are refused with a
          message and a nonzero exit; eval of a data root without test/ too.
accuracy: 40 steps of 16 on 320 short texts whose label is decided by word choice (great/love
          vs naive/walk among shared filler words): the end-of-run evaluation on 80 held-out
          texts is above 90% accurate, and `kiln-bert eval` of the saved model reports the same
          eval_loss and accuracy, with one --dump-logits line per sample agreeing with it.
save_fail: a --save forced to fail at each stage (KILN_BERT_SAVE_FAIL) leaves the previous
          checkpoint byte for byte, resumable, with no scratch directory; a stale DIR.saving is
          cleared; a save keeps the other files and folders in DIR; a symbolic link is followed.
Usage: resume_test.py KILN_BERT VOCAB resume|accuracy|save_fail"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

kb, vocab, mode = sys.argv[1], sys.argv[2], sys.argv[3]
fails = 0


def check(cond, what):
    global fails
    if not cond:
        print("FAIL", what)
        fails += 1
    return cond


# Kernels that reduce with atomic adds (the gradient norm, the embedding gradients) sum in the
# order the cpu device's threads reach them, so two runs agree only to rounding with several
# threads; one thread runs the programs in grid order and makes every run bit for bit.
ENV = dict(os.environ, KILN_CPU_THREADS="1")


def run(*args):
    return subprocess.run([kb, *args], capture_output=True, text=True, env=ENV)


def records(path):
    return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


def steps_of(recs):
    return [r for r in recs if "step" in r and "loss" in r]


def summary_of(recs):
    s = [r for r in recs if r.get("summary")]
    return s[0] if s else {}


def same_bytes(a, b):
    return os.path.exists(a) and os.path.exists(b) and open(a, "rb").read() == open(b, "rb").read()


def write_imdb(root, splits):
    """splits: {split: [(label, text), ...]}, files i_1.txt per label."""
    for split, samples in splits.items():
        count = {"pos": 0, "neg": 0}
        for label, text in samples:
            d = os.path.join(root, split, label)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"{count[label]}_1.txt"), "w") as f:
                f.write(text + "\n")
            count[label] += 1


def test_resume(tmp):
    pos, neg = "the movie was great ! i love it , great great", "the movie was naive . i want walk"
    data = os.path.join(tmp, "imdb")
    write_imdb(data, {"train": [(l, f"{t} {i}") for i in range(8) for l, t in (("pos", pos), ("neg", neg))],
                      "test": [(l, f"{t} {i}") for i in range(3) for l, t in (("pos", pos), ("neg", neg))]})
    base = ["train", "--model", "tiny", "--data", data, "--vocab", vocab, "--device", "cpu",
            "--precision", "fp32", "--steps", "12", "--batch", "5", "--seq-len", "16",
            "--dropout", "0", "--lr", "1e-3", "--warmup", "2", "--seed", "9"]
    p = {k: os.path.join(tmp, k) for k in ("full", "part", "rest", "full.jsonl", "a.jsonl", "b.jsonl")}
    r = run(*base, "--save", p["full"], "--log", p["full.jsonl"])
    check(r.returncode == 0, f"uninterrupted run: exit {r.returncode}: {r.stderr}")
    r = run(*base, "--stop-after", "5", "--save", p["part"], "--log", p["a.jsonl"])
    check(r.returncode == 0, f"first part: exit {r.returncode}: {r.stderr}")
    r = run(*base, "--resume", p["part"], "--save", p["rest"], "--log", p["b.jsonl"])
    check(r.returncode == 0, f"resumed part: exit {r.returncode}: {r.stderr}")
    full, a, b = (records(p[k]) for k in ("full.jsonl", "a.jsonl", "b.jsonl"))
    check([x["step"] for x in steps_of(a)] == list(range(1, 6)), "the first part logs steps 1..5")
    check([x["step"] for x in steps_of(b)] == list(range(6, 13)), "the resumed part logs steps 6..12")
    resumed, whole = steps_of(a) + steps_of(b), steps_of(full)
    check(len(whole) == 12 and resumed == whole,
          "resumed step records differ from the uninterrupted run's:\n  " +
          "\n  ".join(f"{x} | {y}" for x, y in zip(resumed, whole) if x != y))
    for name in ("model.safetensors", "optimizer.safetensors", "trainer_state.json", "config.json"):
        check(same_bytes(os.path.join(p["rest"], name), os.path.join(p["full"], name)),
              f"the resumed run's {name} differs from the uninterrupted run's")
    check(all(x.get("scale") == 1 and x.get("skipped") is False for x in steps_of(full)),
          "step records carry scale 1 and skipped false in fp32")
    s = summary_of(full)
    for key in ("tokens_per_sec", "peak_device_bytes", "eval_loss", "accuracy"):
        check(isinstance(s.get(key), (int, float)) and s[key] > 0, f"summary {key}: {s.get(key)}")
    check(summary_of(b).get("eval_loss") == s.get("eval_loss"),
          "the resumed run's final evaluation differs from the uninterrupted run's")
    # killed after a periodic checkpoint (--save-every 5: steps 5 and 10), resumed from it
    killed, c_log = os.path.join(tmp, "killed"), os.path.join(tmp, "c.jsonl")
    kstate = os.path.join(killed, "trainer_state.json")
    proc = subprocess.Popen([kb, *base, "--save", killed, "--save-every", "5"], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None and not os.path.exists(kstate):
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    saved_at = json.load(open(kstate))["step"] if os.path.exists(kstate) else 0
    check(saved_at in (5, 10, 12), f"the killed run's checkpoint is at step {saved_at}")
    if saved_at in (5, 10):
        # a save swaps a whole new directory in, so a kill, even one in the middle of the
        # step-10 save, leaves a checkpoint that resumes
        r = run(*base, "--resume", killed, "--log", c_log)
        check(r.returncode == 0, f"resume after a kill: exit {r.returncode}: {r.stderr}")
        check(steps_of(records(c_log)) == whole[saved_at:],
              f"after a kill at step {saved_at} the resumed losses differ")
    else:
        print("note: the run ended before it could be killed")
    state = json.load(open(os.path.join(p["part"], "trainer_state.json")))
    check(state.get("step") == 5 and state.get("epoch") == 1 and state.get("position") == 5,
          f"trainer_state after 5 steps of 5 over 16: {state}")
    # --eval-max-samples: the end-of-run evaluation on the first N test samples (all neg/ for
    # N <= 3 here), training on all 16; without it, --max-samples limits both
    elog = os.path.join(tmp, "e.jsonl")
    r = run(*base, "--steps", "1", "--eval-max-samples", "2", "--log", elog)
    s2 = summary_of(records(elog))
    check(r.returncode == 0 and s2.get("eval_samples") == 2 and s2.get("samples_per_sec", 0) > 0,
          f"--eval-max-samples 2: {s2} {r.stderr}")
    r = run(*base, "--steps", "1", "--max-samples", "4", "--log", elog)
    check(r.returncode == 0 and summary_of(records(elog)).get("eval_samples") == 4,
          f"--max-samples 4 limits the evaluation too: {summary_of(records(elog))} {r.stderr}")
    r = run(*base, "--steps", "1", "--eval-max-samples", "0")
    check(r.returncode == 64, f"--eval-max-samples 0: exit {r.returncode}")
    # no test split: eval_loss and accuracy are null
    r = run(*base, "--data", os.path.join(data, "train"), "--steps", "1", "--log", p["a.jsonl"])
    s = summary_of(records(p["a.jsonl"]))
    check(r.returncode == 0 and "eval_loss" in s and s["eval_loss"] is None and s["accuracy"] is None,
          f"without a test split eval_loss/accuracy are null: {s} {r.stderr}")

    # refusals: message, nonzero exit
    def refused(what, want_rc, needle, *args):
        r = run(*args)
        check(r.returncode == want_rc and needle in r.stderr,
              f"{what}: exit {r.returncode} (want {want_rc}), stderr {r.stderr!r} lacks {needle!r}")
    refused("resume of a missing directory", 2, "trainer_state.json", *base, "--resume",
            os.path.join(tmp, "nowhere"))
    bad = os.path.join(tmp, "bad")
    shutil.copytree(p["part"], bad)
    with open(os.path.join(bad, "model.safetensors"), "r+b") as f:
        f.seek(-7, os.SEEK_END)
        byte = f.read(1)
        f.seek(-7, os.SEEK_END)
        f.write(bytes([byte[0] ^ 0x10]))
    refused("resume of a damaged model.safetensors", 1, "damaged", *base, "--resume", bad)
    shutil.rmtree(bad)
    shutil.copytree(p["part"], bad)
    state_path = os.path.join(bad, "trainer_state.json")
    text = open(state_path).read()
    open(state_path, "w").write(text[:len(text) // 2])
    refused("resume of a truncated trainer_state.json", 1, "trainer_state.json", *base, "--resume", bad)
    shutil.rmtree(bad)
    shutil.copytree(p["part"], bad)
    os.remove(os.path.join(bad, "optimizer.safetensors"))
    refused("resume without optimizer.safetensors", 2, "optimizer.safetensors", *base, "--resume", bad)
    refused("resume with another batch", 64, "batches of 5", *base, "--batch", "4", "--resume", p["part"])
    refused("resume with nothing left", 64, "nothing left", *base, "--steps", "5", "--resume", p["part"])
    refused("resume with --stop-after at the checkpoint", 64, "already at step", *base,
            "--stop-after", "5", "--resume", p["part"])
    shutil.rmtree(os.path.join(data, "test"))
    refused("eval of a data root without test/", 2, "test/", "eval", "--model", p["full"],
            "--data", data, "--vocab", vocab, "--seq-len", "16")


def test_save_fail(tmp):
    """A --save that fails at any stage leaves the previous checkpoint as it was: byte for byte,
    other files kept, resumable; a stale DIR.saving from a killed save is cleared by the next
    save; a good save over a checkpoint keeps the files and folders the user put there."""
    pos, neg = "the movie was great ! i love it , great great", "the movie was naive . i want walk"
    data = os.path.join(tmp, "imdb")
    write_imdb(data, {"train": [(l, f"{t} {i}") for i in range(4) for l, t in (("pos", pos), ("neg", neg))]})
    ck = os.path.join(tmp, "ck")
    base = ["train", "--model", "tiny", "--data", data, "--vocab", vocab, "--batch", "4",
            "--seq-len", "16", "--dropout", "0", "--lr", "1e-3", "--seed", "3", "--steps", "6"]
    r = run(*base, "--stop-after", "2", "--save", ck)
    check(r.returncode == 0, f"first save: exit {r.returncode}: {r.stderr}")
    shutil.copy(vocab, os.path.join(ck, "vocab.txt"))  # the user's file next to the model
    os.makedirs(os.path.join(ck, "notes"))
    open(os.path.join(ck, "notes", "run.txt"), "w").write("kept\n")

    def snapshot():
        out = {}
        for root, _, files in os.walk(ck):
            for f in files:
                path = os.path.join(root, f)
                out[os.path.relpath(path, ck)] = open(path, "rb").read()
        return out
    before = snapshot()
    for stage in ("model", "optimizer", "config", "state", "swap"):
        env = dict(ENV, KILN_BERT_SAVE_FAIL=stage)
        r = subprocess.run([kb, *base, "--resume", ck, "--stop-after", "4", "--save", ck],
                           capture_output=True, text=True, env=env)
        check(r.returncode == 2 and "KILN_BERT_SAVE_FAIL" in r.stderr,
              f"save failing before {stage}: exit {r.returncode}, {r.stderr!r}")
        check(snapshot() == before, f"a save failing before {stage} changed the old checkpoint")
        check(not os.path.exists(ck + ".saving"), f"a save failing before {stage} left ck.saving")
    log = os.path.join(tmp, "after.jsonl")
    r = run(*base, "--resume", ck, "--stop-after", "3", "--log", log)
    check(r.returncode == 0 and [x["step"] for x in steps_of(records(log))] == [3],
          f"the old checkpoint resumes after the failed saves: exit {r.returncode}: {r.stderr}")
    # what a killed save leaves (a partial ck.saving) is cleared by the next save
    os.makedirs(ck + ".saving")
    open(os.path.join(ck + ".saving", "model.safetensors"), "wb").write(b"partial")
    r = run(*base, "--resume", ck, "--stop-after", "4", "--save", ck)
    check(r.returncode == 0, f"save over a stale ck.saving: exit {r.returncode}: {r.stderr}")
    after = snapshot()
    check(not os.path.exists(ck + ".saving") and not os.path.exists(ck + ".old"),
          "a good save leaves no scratch directory")
    check(json.load(open(os.path.join(ck, "trainer_state.json")))["step"] == 4,
          "the new checkpoint is at step 4")
    check(after.get("vocab.txt") == before["vocab.txt"] and
          after.get(os.path.join("notes", "run.txt")) == b"kept\n",
          "the user's files in the checkpoint directory are kept by a save")
    # through a symbolic link: the link stays, the directory it names gets the checkpoint
    link = os.path.join(tmp, "link")
    os.symlink(ck, link)
    r = run(*base, "--resume", link, "--stop-after", "5", "--save", link)
    check(r.returncode == 0 and os.path.islink(link) and
          json.load(open(os.path.join(ck, "trainer_state.json")))["step"] == 5,
          f"save through a symbolic link: exit {r.returncode}: {r.stderr}")
    # a file where the directory should be is refused, untouched
    afile = os.path.join(tmp, "afile")
    open(afile, "w").write("x")
    r = run(*base, "--steps", "1", "--save", afile)
    check(r.returncode == 64 and "not a directory" in r.stderr and open(afile).read() == "x",
          f"--save onto a file: exit {r.returncode}: {r.stderr}")


def test_accuracy(tmp):
    fill = "the movie was i it a b hello world cafe max istanbul resume 5 10 want".split()
    cues = {"pos": ["great", "love"], "neg": ["naive", "walk"]}
    splits = {}
    for split, n, seed in (("train", 160, 1), ("test", 40, 2)):
        rng = random.Random(seed)
        splits[split] = []
        for label in ("pos", "neg"):
            for _ in range(n):
                words = [rng.choice(fill) for _ in range(rng.randint(4, 9))]
                for _ in range(rng.randint(1, 2)):
                    words.insert(rng.randint(0, len(words)), rng.choice(cues[label]))
                splits[split].append((label, " ".join(words)))
    data = os.path.join(tmp, "imdb")
    write_imdb(data, splits)
    log, save = os.path.join(tmp, "log.jsonl"), os.path.join(tmp, "model")
    common = ["--vocab", vocab, "--device", "cpu", "--precision", "fp32", "--batch", "16",
              "--seq-len", "16"]
    r = run("train", "--model", "tiny", "--data", data, *common, "--steps", "40", "--dropout", "0",
            "--lr", "1e-3", "--warmup", "4", "--seed", "1", "--log", log, "--save", save)
    check(r.returncode == 0, f"train: exit {r.returncode}: {r.stderr}")
    s = summary_of(records(log))
    print(f"after 40 steps: eval_loss {s.get('eval_loss')}, accuracy {s.get('accuracy')} "
          f"on {s.get('eval_samples')} held-out texts")
    check(s.get("eval_samples") == 80, "the end-of-run evaluation covers the 80 test texts")
    check(isinstance(s.get("accuracy"), float) or s.get("accuracy") == 1, "accuracy is a number")
    check((s.get("accuracy") or 0) > 0.9, f"accuracy {s.get('accuracy')} is not above 90%")
    dump = os.path.join(tmp, "logits.txt")
    r = run("eval", "--model", save, "--data", data, *common, "--json", "--dump-logits", dump)
    check(r.returncode == 0, f"eval: exit {r.returncode}: {r.stderr}")
    e = json.loads(r.stdout) if r.returncode == 0 else {}
    check(e.get("eval_loss") == s.get("eval_loss") and e.get("accuracy") == s.get("accuracy"),
          f"eval of the saved model {e} disagrees with the run's own evaluation {s}")
    lines = open(dump).read().splitlines() if os.path.exists(dump) else []
    check(len(lines) == 80, f"{len(lines)} lines of logits for 80 samples")
    labels = [0] * 40 + [1] * 40  # data order: neg/ before pos/
    right = 0
    for line, label in zip(lines, labels):
        l0, l1 = (float(v) for v in line.split())
        right += (l1 > l0) == (label == 1)
    check(lines and abs(right / 80 - (e.get("accuracy") or 0)) < 1e-12,
          f"the dumped logits give accuracy {right / 80}, eval says {e.get('accuracy')}")


with tempfile.TemporaryDirectory() as tmp:
    {"resume": test_resume, "accuracy": test_accuracy, "save_fail": test_save_fail}[mode](tmp)
print("all passed" if fails == 0 else f"{fails} failed")
sys.exit(1 if fails else 0)
