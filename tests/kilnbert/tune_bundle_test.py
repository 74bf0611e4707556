#!/usr/bin/env python3
"""kiln-bert tune --emit-bundle: the whole model's tuning split across two machines.

On the machine with the compiler, `kiln-bert tune --emit-bundle DIR` compiles every call's
candidates (tiny model, fp32, batch 2 x 16, cpu device, default mode) into DIR/cNNN and lists them
in DIR/calls.txt; on the machine with the device, kiln-tune-runner times the bundles in one run
into a new cache. Checked: calls.txt lists each call of `tune --list` once (file, kernel,
launches, pins); the runner times the first bundles and writes one cache; kiln-bert tune on that
cache finds those calls' winners there (from_cache, the runner's winner) instead of timing them
again; the runner refuses to replace an existing cache (exit 2, the file unchanged); bad
--emit-bundle options exit 64. With DEVICE (cpu or emu) and LIBS (the build's trainer libraries
for that device, with their NAME.plan), the runner also adds its winners to a copy of LIBS
(--tuned-libs, docs/library.md "Tuned on the device"): each timed call's winner is a row of some
NAME.tuned.h, every row is a winner, and each library with rows compiles with them
(-DKILN_GEN_TUNED, the C compiler CC). A kernel in several libraries (colsum_f32 in every gemm
library) gets a row in each whose pins its winner keeps.
Usage: tune_bundle_test.py KILN_BERT KILN_TUNE_RUNNER [DEVICE LIBS INCLUDE_DIR CC]"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import kbtest

kb, runner = sys.argv[1], sys.argv[2]
device, libs_dir, include, cc = (sys.argv[3:7] + [None] * 4)[:4] if len(sys.argv) > 3 else \
    ("cpu", None, None, None)
check = kbtest.Checks()
START = time.time()


def phase(what):
    print(f"{time.time() - START:7.1f} s  {what}", flush=True)


SHAPE = ["--model", "tiny", "--precision", "fp32", "--batch", "2", "--seq-len", "16",
         "--device", device]
FIRST = 6  # bundles timed by the runner: a few of each kind, seconds on cpu

with tempfile.TemporaryDirectory() as tmp:
    r = subprocess.run([kb, "tune", *SHAPE, "--list", "--json"], capture_output=True, text=True)
    check(r.returncode == 0, f"--list exit {r.returncode}: {r.stderr}")
    listed = json.loads(r.stdout)["kernels"] if r.returncode == 0 else []

    bundle = os.path.join(tmp, "bundle")
    phase("--emit-bundle")
    r = subprocess.run([kb, "tune", *SHAPE, "--mode", "default", "--emit-bundle", bundle, "--json"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"--emit-bundle exit {r.returncode}: {r.stderr[-2000:]}")
    rep = json.loads(r.stdout)["kernels"] if r.returncode == 0 else []
    check(rep and all(k["state"] == "bundled" for k in rep),
          "every call bundled: " + ", ".join(f"{k['kernel']} {k['state']} {k.get('detail', '')}"
                                             for k in rep if k["state"] != "bundled"))
    lines = []
    path = os.path.join(bundle, "calls.txt")
    if os.path.exists(path):
        lines = [x.split() for x in open(path) if x.strip() and not x.startswith("#")]
    check(len(lines) == len(listed), f"calls.txt lists {len(lines)} calls, --list {len(listed)}")
    for (d, f, kernel, count, *pins), k in zip(lines, listed):
        check((f, kernel, int(count), " ".join(pins)) == (k["file"], k["kernel"], k["calls"], k["pins"]),
              f"{d}: {f} {kernel} {count} {pins} against {k['file']} {k['kernel']} {k['calls']} {k['pins']}")
        check(os.path.exists(os.path.join(bundle, d, "manifest.txt")), f"{d} has a manifest")

    # the device's machine: one runner over the first bundles, one new cache
    cache = os.path.join(tmp, "cache.json")
    summary = os.path.join(tmp, "summary.json")
    dirs = [os.path.join(bundle, x[0]) for x in lines[:FIRST]]
    phase(f"the runner over {len(dirs)} bundles")
    rows_dir = os.path.join(tmp, "libs")
    rows = []
    if libs_dir:
        os.makedirs(rows_dir)
        for f in glob.glob(os.path.join(libs_dir, "kb_*.[ch]")) + \
                glob.glob(os.path.join(libs_dir, "kb_*.plan")):
            shutil.copy(f, rows_dir)
        rows = ["--tuned-libs", rows_dir]
    r = subprocess.run([runner, *dirs, "--device", device, "--mode", "default", "--reps", "2",
                        "--cache", cache, "--json", summary, *rows], capture_output=True, text=True)
    check(r.returncode == 0, f"runner exit {r.returncode}: {r.stderr[-2000:]}")
    s = json.load(open(summary)) if os.path.exists(summary) else {"kernels": []}
    check(s.get("bundles") == len(dirs) and len(s["kernels"]) == len(dirs)
          and all(k["winner"] for k in s["kernels"]),
          f"the summary has a winner for each of {len(dirs)} bundles: {s.get('bundles')}, "
          f"{[k.get('winner') for k in s['kernels']]}")
    if libs_dir:
        tuned = {os.path.basename(f): open(f).read()
                 for f in glob.glob(os.path.join(rows_dir, "*.tuned.h"))}
        # a row's text names a pinned type parameter by its type (T=f32), the runner's winner
        # by the scalar kind's number (T=7): the plans' pin lines ("pin T 7 f32") say which
        typed = {f"{m.group(1)}={m.group(3)}": f"{m.group(1)}={m.group(2)}"
                 for f in glob.glob(os.path.join(rows_dir, "*.plan"))
                 for m in re.finditer(r"^pin (\w+) (\d+) (\w+)$", open(f).read(), re.M)}
        abouts = [re.sub(r"(?<![\w=])(\w+=\w+)(?![\w=])", lambda w: typed.get(w.group(1), w.group(1)),
                         m.group(1))
                  for t in tuned.values()
                  for m in re.finditer(r'^   "([^"]*)"\}, /\* tuned median', t, re.M)]
        check(typed, "the plans name their type pins")
        winners = {(k["key"], k["winner"]) for k in s["kernels"] if k.get("winner")}
        print(f"{len(tuned)} libraries got {len(abouts)} rows for {len(winners)} winners")
        for key, w in winners:
            buckets = key.partition("|")[0]
            check(any(a.startswith(buckets + (", " if buckets else "") + w + ",")
                      for a in abouts), f"the winner {w} at {key} is a row")
        starts = [(k.partition("|")[0] + ", " if k.partition("|")[0] else "") + w + ","
                  for k, w in winners]
        strays = [a for a in abouts if not any(a.startswith(x) for x in starts)]
        check(tuned and not strays, f"every row is a winner: {strays[:3]}")
        phase("the libraries with rows compiled")
        for name in tuned:
            lib = os.path.join(rows_dir, name[:-len(".tuned.h")] + ".c")
            r = subprocess.run([cc, "-std=c17", "-fsyntax-only", "-Wall", "-Werror",
                                "-DKILN_GEN_TUNED", "-I", rows_dir, "-I", include, lib],
                               capture_output=True, text=True)
            check(r.returncode == 0, f"{lib} with its rows: {r.stderr[-1500:]}")

    before = open(cache).read() if os.path.exists(cache) else ""
    r = subprocess.run([runner, dirs[0], "--device", device, "--cache", cache],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "exists" in r.stderr and open(cache).read() == before,
          f"an existing cache is refused and kept (exit {r.returncode}: {r.stderr[:200]!r})")

    phase("kiln-bert tune on the runner's cache")
    # back on the compiler's machine: kiln-bert tune takes the runner's winners from the cache
    r = subprocess.run([kb, "tune", *SHAPE, "--cache", cache, "--json", "--budget", "30"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"tune on the runner's cache: exit {r.returncode}: {r.stderr[-2000:]}")
    ks = json.loads(r.stdout)["kernels"] if r.returncode == 0 else []
    for k, w in zip(ks[:FIRST], s["kernels"]):
        check(k["state"] == "tuned" and k.get("from_cache") and k["winner"] == w["winner"],
              f"{k['kernel']}: {k['state']}, from the cache {k.get('from_cache')}, winner "
              f"{k.get('winner')} against the runner's {w['winner']}")

    for args, words in ((["--emit-bundle", bundle, "--cache", cache], "no --cache"),
                        (["--emit-bundle", bundle, "--arch", "sm_70"], "sm_70"),
                        (["--arch", "sm_90", "--cache", cache], "--arch")):
        r = subprocess.run([kb, "tune", *SHAPE, *args], capture_output=True, text=True)
        check(r.returncode in (64, 1) and words in r.stderr,
              f"{args}: exit {r.returncode}, {r.stderr[:200]!r}")

phase("done")
sys.exit(1 if check.fails else 0)
