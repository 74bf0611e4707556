#!/usr/bin/env python3
"""scripts/bert-tune.sh, the one command of whole-model tuning: tune, libraries, kiln-bert.

On the cpu device with the tiny model in fp32 at 2 x 16 tokens, the script

  - refuses a device it does not know and a build folder without kiln-bert (exit 2, before any
    work);
  - runs `kiln-bert tune`, whose table it keeps (OUT/tune.txt) and whose cache it writes
    (OUT/bert-tune.json), with every listed call tuned;
  - makes one library a line of the build's kernel-libs.jsonl in OUT/libs/cpu, and the f32
    layernorm library takes the cache's timings (no "no timing of 'layernorm_fwd'" warning in
    its notes, where this build's untuned kb_ln_f32 has one);
  - builds OUT/build/tools/kiln-bert, which trains 3 steps whose losses equal this build's
    kiln-bert's within 1e-5 relative and gradient norms within 1e-4 (other tiles sum in other
    orders: the tolerances of tests/kilnbert/tuned_libs_test.py);
  - run again on the same OUT with a failing library step (a kernel-libs.jsonl naming a file
    that does not exist, through a copy of the build folder's list) exits 1 and keeps the
    libraries of the first run whole.
Minutes: the runtime-only build compiles every library's C once more.
Usage: bert_tune_script_test.py KILN_BERT VOCAB SOURCE_DIR BUILD_DIR WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys

import kbtest

kb, vocab, src, build, work = sys.argv[1:6]
check = kbtest.Checks()
script = os.path.join(src, "scripts", "bert-tune.sh")
SHAPE = ["--model", "tiny", "--precision", "fp32", "--batch", "2", "--seq-len", "16",
         "--device", "cpu", "--budget", "600"]
LOSS_TOL, NORM_TOL = 1e-5, 1e-4


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=src, **kw)


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
out = os.path.join(work, "out")

# usage errors come first and touch nothing
for bad, why in ((["--build", build, "--out", out, "--device", "tpu"], "an unknown device"),
                 (["--build", os.path.join(work, "none"), "--out", out, "--device", "cpu"],
                  "a build without kiln-bert")):
    r = run(["bash", script, *bad])
    check(r.returncode == 2 and "bert-tune.sh:" in r.stderr,
          f"{why}: exit 2 with a message, got {r.returncode}: {r.stderr[-500:]}")
check(not os.path.exists(out), "nothing written for a refused command")

r = run(["bash", script, "--build", build, "--out", out, *SHAPE])
print(r.stderr[-1500:])
check(r.returncode == 0, f"bert-tune.sh: exit {r.returncode}: {r.stdout[-2000:]}")
if r.returncode != 0:
    sys.exit(1)

table = open(os.path.join(out, "tune.txt")).read()
rows = [line for line in table.splitlines()[1:]
        if line.strip() and "distinct kernel calls" not in line]
tuned = [line for line in rows if " tuned " in line]
print(f"{len(rows)} rows, {len(tuned)} tuned")
check(rows and len(tuned) == len(rows), f"every call tuned: {len(tuned)} of {len(rows)}")
check(json.load(open(os.path.join(out, "bert-tune.json"))).get("records"), "the cache has records")

names = [json.loads(line)["name"] for line in open(os.path.join(build, "runtime", "bert",
                                                                "kernel-libs.jsonl"))]
libs = os.path.join(out, "libs", "cpu")
missing = [n for n in names if not os.path.exists(os.path.join(libs, n + ".c"))]
check(len(names) > 10 and not missing, f"every library made ({len(names)}), missing {missing}")
untuned_notes = open(os.path.join(build, "runtime", "bert", "kernels", "kb_ln_f32.lib.txt")).read()
tuned_notes = open(os.path.join(libs, "kb_ln_f32.lib.txt")).read()
flag = "no timing of 'layernorm_fwd'"
check(flag in untuned_notes and flag not in tuned_notes,
      "kb_ln_f32: untuned in the build, tuned from the cache")

exe = os.path.join(out, "build", "tools", "kiln-bert")
check(os.access(exe, os.X_OK), "the tuned kiln-bert is built")
data = os.path.join(work, "imdb")
kbtest.write_reviews(data, 4)
untuned = kbtest.train_losses(check, kb, vocab, data, os.path.join(work, "untuned.jsonl"), 2)
tuned = kbtest.train_losses(check, exe, vocab, data,
                            os.path.join(work, "tuned.jsonl"), 2)
kbtest.check_same_training(check, untuned, tuned, LOSS_TOL, NORM_TOL)

# A failing library: a build folder whose list names a kernel file that is not there (links to
# this build's tools, so the tuning finds its cache and is quick). The first run's set stays.
fake = os.path.join(work, "fake-build")
os.makedirs(os.path.join(fake, "runtime", "bert"))
os.symlink(os.path.join(build, "tools"), os.path.join(fake, "tools"))
with open(os.path.join(fake, "runtime", "bert", "kernel-libs.jsonl"), "w") as f:
    broken = {"name": "kb_broken", "file": "no_such.kiln", "pins": [], "specs": []}
    f.write(json.dumps(broken) + "\n")
before = sorted(os.listdir(libs))
r = run(["bash", script, "--build", fake, "--out", out, *SHAPE])
check(r.returncode == 1 and "kb_broken" in r.stderr,
      f"a failing library: exit 1 naming it, got {r.returncode}: {r.stderr[-800:]}")
check(sorted(os.listdir(libs)) == before, "the previous libraries kept whole")

print("all passed" if not check.fails else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
