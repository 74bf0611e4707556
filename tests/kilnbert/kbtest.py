"""kbtest.py — what the kiln-bert end-to-end tests share: a check that counts failures instead
of stopping at the first, the synthetic aclImdb-layout reviews they train on (two sentences of
the test vocabulary that differ in words, so a model tells them apart within a few steps; each
review ends in its index, so no two are the same text), and a short training run's losses and
their comparison with another build's."""
import json
import os
import struct
import subprocess

POS = "the movie was great ! i love it , great great"
NEG = "the movie was naive . i want un ##want walk"


class Checks:
    """check(cond, what) prints FAIL and counts; .fails is the count."""

    def __init__(self):
        self.fails = 0

    def __call__(self, cond, what):
        if not cond:
            print("FAIL", what)
            self.fails += 1


def write_reviews(root, per_label, split="train"):
    """root/split/pos and neg, per_label reviews each, named I_5.txt."""
    for label, text in (("pos", POS), ("neg", NEG)):
        d = os.path.join(root, split, label)
        os.makedirs(d, exist_ok=True)
        for i in range(per_label):
            with open(os.path.join(d, f"{i}_5.txt"), "w") as f:
                f.write(f"{text} {i}\n")


def read_safetensors_f32(check, path):
    """{name: list of floats} of a safetensors file kiln-bert saved (every tensor F32, which
    check is told)."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        check(e["dtype"] == "F32", f"{path}: {name} saved as {e['dtype']}")
        b, end = e["data_offsets"]
        raw = data[8 + n + b:8 + n + end]
        out[name] = list(struct.unpack(f"<{len(raw) // 4}f", raw))
    return out


def train_logged(check, kb, vocab, tmp, name, args, ok=True):
    """(the log's records, the run) of `kb train` of the tiny model on tmp/imdb in batches of 8
    of 16 tokens, on one worker thread, with the run's own args (steps, lr, seed, dropout, ...)
    and its log at tmp/NAME.jsonl; a failure is a failed check unless ok is False."""
    log = os.path.join(tmp, f"{name}.jsonl")
    cmd = [kb, "train", "--model", "tiny", "--data", os.path.join(tmp, "imdb"), "--vocab", vocab,
           "--batch", "8", "--seq-len", "16", "--log", log] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, KILN_CPU_THREADS="1"))
    if ok:
        check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr[-600:]}")
    recs = [json.loads(x) for x in open(log)] if r.returncode == 0 and os.path.exists(log) else []
    return recs, r


def train_losses(check, exe, vocab, data, log, batch, seq_len=16, steps=3):
    """(losses, gradient norms) of `steps` steps of the tiny model without dropout or shuffling,
    on one worker thread (the same sums on every machine); empty, with a failed check, when the
    run fails."""
    r = subprocess.run([exe, "train", "--model", "tiny", "--data", data, "--vocab", vocab,
                        "--steps", str(steps), "--batch", str(batch), "--seq-len", str(seq_len),
                        "--dropout", "0", "--no-shuffle", "--log", log],
                       capture_output=True, text=True, env=dict(os.environ, KILN_CPU_THREADS="1"))
    check(r.returncode == 0, f"{exe} train: exit {r.returncode}: {r.stderr[-2000:]}")
    if r.returncode != 0:
        return [], []
    with open(log) as f:
        recs = [x for x in map(json.loads, f) if "step" in x]
    return [x["loss"] for x in recs], [x["grad_norm"] for x in recs]


def check_same_training(check, want, got, loss_tol, norm_tol, steps=3):
    """want and got, (losses, gradient norms) of train_losses, agree step by step: each loss
    within loss_tol and each norm within norm_tol of want's, relative."""
    (want_loss, want_norm), (got_loss, got_norm) = want, got
    print(f"losses: {want_loss}, against {got_loss}")
    check(len(want_loss) == steps and len(got_loss) == steps, f"both trained {steps} steps")
    for a, b in zip(want_loss, got_loss):
        check(abs(a - b) <= loss_tol * abs(a),
              f"loss {b} against {a} (tolerance {loss_tol} relative)")
    for a, b in zip(want_norm, got_norm):
        check(abs(a - b) <= norm_tol * abs(a), f"grad norm {b} against {a} (tolerance {norm_tol})")
