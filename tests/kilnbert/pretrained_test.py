#!/usr/bin/env python3
"""kiln-bert train from a pretrained checkpoint, as the contract reads one (section 1, and the
issue's "Reading a model DIR"): a model directory whose model.safetensors has no classifier (a
pretrained encoder), or neither classifier nor pooler (a masked-LM one), older LayerNorm names
(gamma/beta), bare BertModel names (no "bert."), extra tensors (cls.predictions.*, the I64
position_ids), stored as F32, F16 or BF16.

Each checkpoint (2 layers, hidden 32, 2 heads, FFN 64, vocabulary 66; values k/256 with |k| <= 16
and LayerNorm weights 1 + k/16, exact in f16 and bf16, so every stored type must load the same
f32 numbers) is trained one step at lr 0 and weight decay 0, which leaves every parameter as it
was (AdamW moves p by lr x ...), and saved: each loaded parameter must come back bit for bit,
the classifier (and pooler) must be the seed's initialization (the same across checkpoints for
one seed, another for another seed), and stderr must carry a note per initialized parameter and
per ignored tensor. A checkpoint without an encoder tensor is refused (exit 1) naming it, with
nothing saved.
Usage: pretrained_test.py KILN_BERT VOCAB"""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
check = kbtest.Checks()
H, F, L, V, P = 32, 64, 2, 66, 32
CONFIG = {"vocab_size": V, "hidden_size": H, "num_hidden_layers": L, "num_attention_heads": 2,
          "intermediate_size": F, "max_position_embeddings": P, "type_vocab_size": 2,
          "num_labels": 2}


def parameters():
    """(name, shape) of BertForSequenceClassification in the reference's order."""
    out = [("bert.embeddings.word_embeddings.weight", [V, H]),
           ("bert.embeddings.position_embeddings.weight", [P, H]),
           ("bert.embeddings.token_type_embeddings.weight", [2, H]),
           ("bert.embeddings.LayerNorm.weight", [H]), ("bert.embeddings.LayerNorm.bias", [H])]
    for i in range(L):
        pre = f"bert.encoder.layer.{i}."
        for lin, o, n in (("attention.self.query", H, H), ("attention.self.key", H, H),
                          ("attention.self.value", H, H), ("attention.output.dense", H, H),
                          ("intermediate.dense", F, H), ("output.dense", H, F)):
            out += [(pre + lin + ".weight", [o, n]), (pre + lin + ".bias", [o])]
            if lin in ("attention.output.dense", "output.dense"):
                ln = pre + lin.replace("dense", "LayerNorm")
                out += [(ln + ".weight", [H]), (ln + ".bias", [H])]
    out += [("bert.pooler.dense.weight", [H, H]), ("bert.pooler.dense.bias", [H]),
            ("classifier.weight", [2, H]), ("classifier.bias", [2])]
    return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def encode(values, dtype):
    if dtype == "F32":
        return struct.pack(f"<{len(values)}f", *values)
    if dtype == "F16":
        return struct.pack(f"<{len(values)}e", *values)
    if dtype == "BF16":  # the values are exact in bf16: the top half of their f32 bits
        return b"".join(struct.pack("<f", v)[2:] for v in values)
    return struct.pack(f"<{len(values)}q", *values)  # I64


def write_safetensors(path, tensors):
    """tensors: [(name, dtype, shape, values)]"""
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name, dtype, shape, values in tensors:
        blob = encode(values, dtype)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(blob)]}
        blobs.append(blob)
        at += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def checkpoint(rng, dtype, bare, heads):
    """The stored tensors and the f32 values the model must load for each parameter."""
    tensors, want = [], {}
    for name, shape in parameters():
        if name.startswith("classifier.") or (name.startswith("bert.pooler.") and heads == 0):
            continue
        if name.endswith("LayerNorm.weight"):
            values = [1 + rng.randint(-4, 4) / 16 for _ in range(numel(shape))]
        else:
            values = [rng.randint(-16, 16) / 256 for _ in range(numel(shape))]
        want[name] = values
        stored = name[len("bert."):] if bare and name.startswith("bert.") else name
        if "LayerNorm" in stored and not bare:  # the older names
            stored = stored.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
                "LayerNorm.bias", "LayerNorm.beta")
        tensors.append((stored, dtype, shape, values))
    # what a masked-LM checkpoint has besides
    tensors.append(("cls.predictions.bias", dtype, [V], [0.0] * V))
    tensors.append(("cls.predictions.transform.dense.weight", dtype, [H, H], [0.0] * (H * H)))
    tensors.append(("bert.embeddings.position_ids", "I64", [1, P], list(range(P))))
    return tensors, want


with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "imdb")
    kbtest.write_reviews(data, 2)
    rng = random.Random(11)
    saved = {}

    def train(model, out, seed="5"):
        return subprocess.run([kb, "train", "--model", model, "--data", data, "--vocab", vocab,
                               "--steps", "1", "--batch", "4", "--seq-len", "16", "--dropout",
                               "0", "--lr", "0", "--weight-decay", "0", "--seed", seed,
                               "--save", out], capture_output=True, text=True)

    # (dtype, bare names, with pooler): F32 with old names and no pooler (masked-LM), F16 bare
    # names with a pooler, BF16 with old names and no pooler
    for dtype, bare, heads in (("F32", False, 0), ("F16", True, 1), ("BF16", False, 0)):
        model = os.path.join(tmp, f"pre-{dtype}")
        os.makedirs(model)
        json.dump(CONFIG, open(os.path.join(model, "config.json"), "w"))
        tensors, want = checkpoint(rng, dtype, bare, heads)
        write_safetensors(os.path.join(model, "model.safetensors"), tensors)
        out = os.path.join(tmp, f"out-{dtype}")
        r = train(model, out)
        check(r.returncode == 0, f"{dtype}: exit {r.returncode}: {r.stderr}")
        print(f"{dtype} notes:\n{r.stderr.strip()}")
        inited = ["classifier.weight", "classifier.bias"] + \
            ([] if heads else ["bert.pooler.dense.weight", "bert.pooler.dense.bias"])
        for name in inited:
            check(f"no tensor {name}: initialized from --seed 5" in r.stderr,
                  f"{dtype}: no note that {name} was initialized")
        for name in ("cls.predictions.bias", "cls.predictions.transform.dense.weight",
                     "bert.embeddings.position_ids"):
            check(f"tensor {name} is not a parameter" in r.stderr and "ignored" in r.stderr,
                  f"{dtype}: no note that {name} was ignored")
        check(r.stderr.count("note:") == len(inited) + 3,
              f"{dtype}: {r.stderr.count('note:')} notes, want {len(inited) + 3}")
        got = kbtest.read_safetensors_f32(check, os.path.join(out, "model.safetensors")) \
            if r.returncode == 0 else {}
        for name, values in want.items():
            check(got.get(name) == values, f"{dtype}: {name} did not load bit for bit")
        saved[dtype] = got
    # the initialized heads: the seed's, whichever checkpoint they complete
    for name in ("classifier.weight", "classifier.bias", "bert.pooler.dense.weight"):
        check(saved["F32"].get(name) is not None and saved["F32"].get(name) == saved["BF16"].get(name),
              f"{name}: the same seed initialized it differently")
    w = saved["F32"].get("classifier.weight") or [0]
    check(any(w) and max(abs(x) for x in w) < 0.2, f"classifier.weight is not normal(0, 0.02): {w[:4]}")
    check(saved["F16"].get("classifier.weight") == w, "classifier.weight: seed 5 twice differs")
    r = train(os.path.join(tmp, "pre-F32"), os.path.join(tmp, "out-seed6"), seed="6")
    got = kbtest.read_safetensors_f32(check, os.path.join(tmp, "out-seed6", "model.safetensors")) \
        if r.returncode == 0 else {}
    check(got.get("classifier.weight") not in (None, w), "another seed, the same classifier")

    # an encoder tensor missing: refused, naming it, nothing saved
    model = os.path.join(tmp, "broken")
    os.makedirs(model)
    json.dump(CONFIG, open(os.path.join(model, "config.json"), "w"))
    tensors, _ = checkpoint(rng, "F32", False, 1)
    gone = "bert.encoder.layer.1.output.dense.weight"
    write_safetensors(os.path.join(model, "model.safetensors"),
                      [t for t in tensors if t[0] != gone])
    out = os.path.join(tmp, "out-broken")
    r = train(model, out)
    check(r.returncode == 1 and gone in r.stderr and not os.path.exists(out),
          f"a checkpoint without {gone}: exit {r.returncode}: {r.stderr}")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
