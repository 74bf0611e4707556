#!/usr/bin/env python3
"""The trainer's gemm libraries tuned on another machine's device, and a kiln-bert built on them.

The GPU check's tuned row (bench/gpu-check.sh, docs/trainer.md "tune") in two visits: here
`kiln-bert tune --emit-bundle` compiles every call's candidates; on the device's machine
kiln-tune-runner times them into a cache; back here `kiln lib --cache` makes the libraries from
that cache (bench/gpu/prepare.sh with KILN_GPU_TUNE_CACHE, the target kilnbert_cuda_libs_tuned);
on the device's machine again a runtime-only build of kiln-bert against them trains. This test
runs that flow on the cpu device with the tiny model in fp32 for the gemm's calls (gemm and
colsum_f32, the kernels of the kb_gemm<EPI>_f32 libraries), with the libraries' own `kiln lib`
arguments (kernel-libs.jsonl of the build), and checks:

  - every gemm call is bundled and the runner finds a winner for each;
  - each tuned library holds tuned variants, where the untuned one holds none, and the
    runner's winner of each record key (the fastest, where calls of one key bucket were timed
    apart) is the tuned variant of that key (its buckets, config and promises in the variant's
    description);
  - a KILN_RUNTIME_ONLY kiln-bert built against this build's libraries with the tuned gemm
    libraries in place of the untuned ones trains 3 steps whose losses equal the untuned
    kiln-bert's within the fp32 tolerance of tests/kilnbert/train_emu_test.py (1e-5 relative:
    other tiles sum in other orders) and whose gradient norms within 1e-4.
Minutes: the runtime-only build compiles the libraries' C sources once more.
Usage: tuned_libs_test.py KILN_BERT VOCAB KILN KILN_TUNE_RUNNER SOURCE_DIR BUILD_DIR WORK_DIR
       GENERATOR C_COMPILER"""
import glob
import json
import os
import shutil
import subprocess
import sys

import kbtest

kb, vocab, kiln, runner, src, build, work, generator, cc = sys.argv[1:10]
check = kbtest.Checks()
SHAPE = ["--model", "tiny", "--precision", "fp32", "--batch", "4", "--seq-len", "16",
         "--device", "cpu"]
GEMM_LIBS = ("kb_gemm0_f32", "kb_gemm1_f32", "kb_gemm3_f32")
LOSS_TOL, NORM_TOL = 1e-5, 1e-4


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def bundle_and_time(tmp):
    """The gemm calls bundled and timed: (cache path, the runner's winners as config strings)."""
    bundle = os.path.join(tmp, "bundle")
    r = run([kb, "tune", *SHAPE, "--mode", "default", "--emit-bundle", bundle, "--json"])
    rep = json.loads(r.stdout)["kernels"] if r.stdout.strip() else []
    gemm = [k for k in rep if k["file"] == "gemm.kiln"]
    check(gemm and all(k["state"] == "bundled" for k in gemm),
          "every gemm call bundled: " + "; ".join(f"{k['kernel']} {k['state']} {k.get('detail')}"
                                                   for k in gemm if k["state"] != "bundled"))
    calls = [x.split() for x in open(os.path.join(bundle, "calls.txt"))
             if x.strip() and not x.startswith("#")]
    dirs = [os.path.join(bundle, c[0]) for c in calls if c[1] == "gemm.kiln"]
    cache, summary = os.path.join(tmp, "cache.json"), os.path.join(tmp, "summary.json")
    r = run([runner, *dirs, "--device", "cpu", "--mode", "default", "--reps", "2", "--cache",
             cache, "--json", summary])
    check(r.returncode == 0, f"runner exit {r.returncode}: {r.stderr[-2000:]}")
    kernels = json.load(open(summary))["kernels"] if os.path.exists(summary) else []
    check(len(kernels) == len(dirs) and all(k.get("winner") for k in kernels),
          f"a winner for each of the {len(dirs)} gemm calls: {[k.get('winner') for k in kernels]}")
    print(f"{len(dirs)} gemm calls bundled and timed")
    # calls of one key bucket are records of one key: a library takes the fastest of them
    best = {}
    for k in kernels:
        if k.get("winner") and (k["key"] not in best or k["winner_median_ms"] < best[k["key"]][0]):
            best[k["key"]] = (k["winner_median_ms"], k["winner"])
    return cache, [(key, w) for key, (_, w) in best.items()]


def make_lib(entry, cache, out):
    """`kiln lib` of one trainer library with its build's arguments, from cache (None: none)."""
    cmd = [kiln, "lib", os.path.join(src, "kernels-bert", entry["file"]), *entry["pins"],
           "--device", "cpu", "-o", out, "--lib-name", entry["name"]]
    for spec in entry["specs"]:
        cmd += ["--args", spec]
    if cache:
        cmd += ["--cache", cache]
    r = run(cmd)
    check(r.returncode == 0, f"kiln lib {entry['name']}: exit {r.returncode}: {r.stderr[-2000:]}")
    path = os.path.join(out, entry["name"] + ".c")
    return open(path).read() if os.path.exists(path) else ""


def description(key, winner):
    """What a library's variant tuned for record key (buckets|promises) with config winner says
    of itself: "M=64, N=128, K=128, T=f32,BM=128,..., promises M%16,...". The record keeps T as
    a number; every call here is f32."""
    buckets, _, promises = key.partition("|")
    config = ",".join(["T=f32"] + [x for x in winner.split(",") if not x.startswith("T=")])
    return (buckets.replace(",", ", ") + ", " + config +
            (", promises " + promises if promises else "") + '"}, /* tuned median')


def train(exe, data, log):
    """(losses, gradient norms) of 3 steps on one worker thread; empty on failure."""
    r = run([exe, "train", "--model", "tiny", "--data", data, "--vocab", vocab, "--steps", "3",
             "--batch", "4", "--seq-len", "16", "--dropout", "0", "--no-shuffle", "--log", log],
            env=dict(os.environ, KILN_CPU_THREADS="1"))
    check(r.returncode == 0, f"{exe} train: exit {r.returncode}: {r.stderr[-2000:]}")
    steps = [x for x in map(json.loads, open(log)) if "step" in x] if r.returncode == 0 else []
    return [x["loss"] for x in steps], [x["grad_norm"] for x in steps]


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
cache, winners = bundle_and_time(work)
entries = {e["name"]: e for e in map(json.loads, open(os.path.join(build, "runtime", "bert",
                                                                      "kernel-libs.jsonl")))}
check(all(n in entries for n in GEMM_LIBS), f"kernel-libs.jsonl lists {GEMM_LIBS}")

# the libraries folder: this build's cpu libraries, the gemm ones made again from the cache
libs = os.path.join(work, "bert-libs")
os.makedirs(os.path.join(libs, "cpu"))
for f in glob.glob(os.path.join(build, "runtime", "bert", "kernels", "kb_*.[ch]")):
    shutil.copy(f, os.path.join(libs, "cpu"))
texts = {}
for name in GEMM_LIBS:
    untuned = make_lib(entries[name], None, os.path.join(work, "untuned"))
    texts[name] = make_lib(entries[name], cache, os.path.join(libs, "cpu"))
    tuned_rows = texts[name].count("/* tuned median")
    print(f"{name}: {tuned_rows} tuned variants")
    check(tuned_rows > 0 and "/* tuned median" not in untuned,
          f"{name}: tuned variants from the cache ({tuned_rows}), none without it")
missing = [d for d in (description(k, w) for k, w in winners)
           if not any(d in t for t in texts.values())]
check(winners and not missing,
      f"each key's runner winner is its tuned variant: missing {missing[:3]} of {len(winners)}")

out = os.path.join(work, "build")
conf = ["cmake", "-S", src, "-B", out, "-G", generator, f"-DCMAKE_C_COMPILER={cc}",
        "-DKILN_RUNTIME_ONLY=ON", f"-DKILN_BERT_LIBS={libs}"]
if shutil.which("ccache"):
    conf.append(f"-DCMAKE_C_COMPILER_LAUNCHER={shutil.which('ccache')}")
for cmd in (conf, ["cmake", "--build", out, "--target", "kiln-bert"]):
    r = run(cmd)
    if r.returncode != 0:
        print(r.stdout[-4000:], r.stderr[-4000:])
        sys.exit(f"FAIL {' '.join(cmd[:3])}: exit {r.returncode}")

data = os.path.join(work, "imdb")
kbtest.write_reviews(data, 6)
want_loss, want_norm = train(kb, data, os.path.join(work, "untuned.jsonl"))
got_loss, got_norm = train(os.path.join(out, "tools", "kiln-bert"), data,
                           os.path.join(work, "tuned.jsonl"))
print(f"losses: untuned {want_loss}, tuned {got_loss}")
check(len(want_loss) == 3 and len(got_loss) == 3, "both trained 3 steps")
for a, b in zip(want_loss, got_loss):
    check(abs(a - b) <= LOSS_TOL * abs(a), f"loss {b} against {a} (tolerance {LOSS_TOL} relative)")
for a, b in zip(want_norm, got_norm):
    check(abs(a - b) <= NORM_TOL * abs(a), f"grad norm {b} against {a} (tolerance {NORM_TOL})")

print("all passed" if not check.fails else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
