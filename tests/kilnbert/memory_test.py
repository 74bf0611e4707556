#!/usr/bin/env python3
"""kiln-bert and a batch that does not fit the device's memory: before anything is allocated or
written, train and eval compute the bytes of the model's memory plan (the one allocation that
holds parameters, gradients, moments and activations) and refuse, with exit 2 and a message
giving what is needed and what is available, a plan larger than --max-device-bytes, then
KILN_DEVICE_MEMORY, then the host's memory (cpu and emu keep device buffers in host memory).

Exact, not approximate: the plan's size N (read off the refusal of a 1 KiB limit) is what the
run allocates: its peak_device_bytes (the runtime allocator's high-water mark) is N rounded up
to the allocator's size class (2 MiB multiples above 1 MiB), so within 2 MiB above N; a limit
of exactly N bytes must pass and one byte less must fail, naming both numbers. A BERT-large batch of 340 x 512 tokens (some 300 GB of activations) must
fail on the host's memory alone, quickly, before the 335M parameters are initialized. Bad
values are usage errors (64).
Usage: memory_test.py KILN_BERT VOCAB"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import kbtest

kb, vocab = sys.argv[1], sys.argv[2]
check = kbtest.Checks()


def run(*args, env=None):
    return subprocess.run([kb, *args], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "imdb")
    kbtest.write_reviews(data, 4)
    kbtest.write_reviews(data, 2, split="test")
    base = ["train", "--model", "tiny", "--data", data, "--vocab", vocab, "--steps", "1",
            "--batch", "4", "--seq-len", "16", "--dropout", "0"]
    log = os.path.join(tmp, "ok.jsonl")
    r = run(*base, "--log", log, "--save", os.path.join(tmp, "model"))
    check(r.returncode == 0, f"reference run: exit {r.returncode}: {r.stderr}")
    recs = [json.loads(x) for x in open(log)] if os.path.exists(log) else []
    peak = next((x["peak_device_bytes"] for x in recs if x.get("summary")), 0)
    print(f"tiny, 4 x 16 tokens, fp32: peak_device_bytes {peak}")
    check(peak > 0, "the reference run reports its peak device bytes")

    r = run(*base, "--max-device-bytes", "1K")
    check(r.returncode == 2 and "(1024 bytes)" in r.stderr, f"1K: exit {r.returncode}: {r.stderr}")
    m = re.search(r"needs [^(]*\((\d+) bytes\)", r.stderr)
    need = int(m.group(1)) if m else 0
    print(f"the plan: {need} bytes; the allocator's peak {peak}")
    check(0 < need <= peak < need + (2 << 20),
          f"the plan's {need} bytes are not the allocation the run made ({peak} at its peak)")
    r = run(*base, "--max-device-bytes", str(need))
    check(r.returncode == 0, f"a limit of exactly the plan ({need}): exit {r.returncode}: {r.stderr}")
    peak = need
    for how, args, env, source in (
            ("--max-device-bytes", ["--max-device-bytes", str(peak - 1)], None, "--max-device-bytes"),
            ("KILN_DEVICE_MEMORY", [], {"KILN_DEVICE_MEMORY": str(peak - 1)}, "KILN_DEVICE_MEMORY")):
        flog, fsave = os.path.join(tmp, "f.jsonl"), os.path.join(tmp, "fsave")
        r = run(*base, *args, "--log", flog, "--save", fsave, env=env)
        check(r.returncode == 2, f"{how} one byte short: exit {r.returncode}: {r.stderr}")
        for needle in (f"needs", f"({peak} bytes)", f"({peak - 1} bytes)", source, "--batch"):
            check(needle in r.stderr, f"{how} one byte short: {needle!r} not in {r.stderr!r}")
        check(not os.path.exists(flog) and not os.path.exists(fsave),
              f"{how} one byte short: a file was written")
    # suffixes: 64GiB is enough for this
    r = run(*base, "--max-device-bytes", "64GiB")
    check(r.returncode == 0, f"64GiB: exit {r.returncode}: {r.stderr}")
    for bad in ("0", "-5", "12Q", "1.5G", "K"):
        r = run(*base, "--max-device-bytes", bad)
        check(r.returncode == 64, f"--max-device-bytes {bad}: exit {r.returncode}: {r.stderr}")
    r = run(*base, env={"KILN_DEVICE_MEMORY": "lots"})
    check(r.returncode == 64 and "KILN_DEVICE_MEMORY" in r.stderr,
          f"KILN_DEVICE_MEMORY=lots: exit {r.returncode}: {r.stderr}")
    # the host's memory: BERT-large at 340 x 512 tokens needs hundreds of GB
    t0 = time.monotonic()
    r = run("train", "--model", "large", "--data", data, "--vocab", vocab, "--steps", "1",
            "--batch", "340", "--seq-len", "512", "--dropout", "0")
    took = time.monotonic() - t0
    check(r.returncode == 2 and "host's memory" in r.stderr,
          f"large 340 x 512 on the host's memory: exit {r.returncode}: {r.stderr}")
    print(f"large, 340 x 512: refused in {took:.2f} s: {r.stderr.strip()}")
    # eval plans too (its batch is at most the samples: 4 test reviews here)
    r = run("eval", "--model", os.path.join(tmp, "model"), "--data", data, "--vocab", vocab,
            "--batch", "4", "--seq-len", "16", "--max-device-bytes", "1M",
            "--dump-logits", os.path.join(tmp, "logits.txt"))
    check(r.returncode == 2 and "needs" in r.stderr and "(1048576 bytes)" in r.stderr,
          f"eval over its limit: exit {r.returncode}: {r.stderr}")
    check(not os.path.exists(os.path.join(tmp, "logits.txt")), "eval over its limit wrote logits")

print("all passed" if check.fails == 0 else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
