#!/usr/bin/env python3
"""The trainer's gemm libraries tuned on another machine's device, and a kiln-bert built on them.

The GPU check's tuned row (bench/gpu-check.sh, docs/trainer.md "tune"): here
`kiln-bert tune --emit-bundle` compiles every call's candidates; on the device's machine, which
has no compiler, kiln-tune-runner times them into a cache and, with --tuned-libs, adds the
winners to the libraries made here (NAME.tuned.h beside NAME.c, from NAME.plan), and a
runtime-only build of kiln-bert against them trains. The cache also serves `kiln lib --cache`
here (libraries with a winner compiled again). This test runs both on the cpu device with the
tiny model in fp32 for the gemm's calls (gemm and colsum_f32, the kernels of the
kb_gemm<EPI>_f32 libraries), with the libraries' own `kiln lib` arguments (kernel-libs.jsonl of
the build), and checks:

  - every gemm call is bundled and the runner finds a winner for each;
  - `kiln lib --cache` gives each gemm library tuned variants, where the untuned one holds
    none, and the tuned variant of each record key is the runner's winner of a call of that
    key (calls of one key bucket are timed apart; the library picks among the records the
    cache kept) (its buckets, config and promises in the variant's description);
  - --tuned-libs wrote NAME.tuned.h for the gemm libraries (and colsum_f32's rows in the TF32
    ones, whose gemm the pin TF32=1 keeps from the records' TF32=0), and its rows are `kiln
    lib`'s tuned variants, kernel by kernel (keys, promises, config: the same winners from the
    same records);
  - a KILN_RUNTIME_ONLY kiln-bert built against this build's libraries with those rows holds
    their images and trains 3 steps whose losses equal the untuned kiln-bert's within the fp32
    tolerance of tests/kilnbert/train_emu_test.py (1e-5 relative: other tiles sum in other
    orders) and whose gradient norms within 1e-4; its --profile names gemm variants that
    kiln-tune-runner timed.
Minutes: the runtime-only build compiles the libraries' C sources once more.
Usage: tuned_libs_test.py KILN_BERT VOCAB KILN KILN_TUNE_RUNNER SOURCE_DIR BUILD_DIR WORK_DIR
       GENERATOR C_COMPILER"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import kbtest

kb, vocab, kiln, runner, src, build, work, generator, cc = sys.argv[1:10]
check = kbtest.Checks()
SHAPE = ["--model", "tiny", "--precision", "fp32", "--batch", "4", "--seq-len", "16",
         "--device", "cpu"]
GEMM_LIBS = ("kb_gemm0_f32", "kb_gemm1_f32", "kb_gemm3_f32", "kb_gemm4_f32")
LOSS_TOL, NORM_TOL = 1e-5, 1e-4


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def bundle_and_time(tmp, libs):
    """The gemm calls bundled and timed, their winners added to the libraries in libs: (cache
    path, the runner's winners as config strings)."""
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
             cache, "--json", summary, "--tuned-libs", libs])
    check(r.returncode == 0, f"runner exit {r.returncode}: {r.stderr[-2000:]}")
    kernels = json.load(open(summary))["kernels"] if os.path.exists(summary) else []
    check(len(kernels) == len(dirs) and all(k.get("winner") for k in kernels),
          f"a winner for each of the {len(dirs)} gemm calls: {[k.get('winner') for k in kernels]}")
    print(f"{len(dirs)} gemm calls bundled and timed")
    # calls of one key bucket are records of one key: a library takes one winner of them (by
    # the tuner's rule over the records the cache kept, within the noise of the fastest)
    winners = {}
    for k in kernels:
        if k.get("winner"):
            winners.setdefault(k["key"], set()).add(k["winner"])
    return cache, winners


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


ROW = re.compile(r"\{\{([^}]*)\}, \d+, (0x[0-9a-f]+)ULL, (0x[0-9a-f]+)ULL, (0x[0-9a-f]+)ULL, "
                 r"0, \{([^}]*)\}")


def kiln_lib_rows(text):
    """{kernel index: sorted (keys, masks, config)} of a library's tuned variants (not the
    untuned ones, not the generic copies of a winner)."""
    rows = {}
    for m in re.finditer(r"kiln_gen_table(\d+)\[[^]]*\] = \{\n(.*?)\n  KILN_GEN_TUNED_ROWS",
                         text, re.S):
        body = [x for x in re.split(r"\n(?=  \{\{)", m.group(2)) if "/* tuned median" in x]
        rows[int(m.group(1))] = sorted(ROW.search(x).groups() for x in body if ROW.search(x))
    return {k: v for k, v in rows.items() if v}


def tuned_h_rows(text):
    """The same of a NAME.tuned.h's rows."""
    rows = {}
    for m in re.finditer(r"#define KILN_GEN_TUNED_ROWS(\d+) \\\n(.*?)\n\n", text + "\n\n", re.S):
        got = sorted(r.groups() for r in ROW.finditer(m.group(2)))
        if got:
            rows[int(m.group(1))] = got
    return rows


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
# the libraries folder the runner adds rows to: this build's cpu libraries and their plans
libs = os.path.join(work, "bert-libs")
os.makedirs(os.path.join(libs, "cpu"))
for f in glob.glob(os.path.join(build, "runtime", "bert", "kernels", "kb_*.[ch]")) + \
        glob.glob(os.path.join(build, "runtime", "bert", "kernels", "kb_*.plan")):
    shutil.copy(f, os.path.join(libs, "cpu"))
cache, winners = bundle_and_time(work, os.path.join(libs, "cpu"))
entries = {e["name"]: e for e in map(json.loads, open(os.path.join(build, "runtime", "bert",
                                                                      "kernel-libs.jsonl")))}
check(all(n in entries for n in GEMM_LIBS), f"kernel-libs.jsonl lists {GEMM_LIBS}")

texts = {}
for name in GEMM_LIBS:
    untuned = make_lib(entries[name], None, os.path.join(work, "untuned"))
    texts[name] = make_lib(entries[name], cache, os.path.join(work, "kiln-lib"))
    tuned_rows = texts[name].count("/* tuned median")
    print(f"{name}: {tuned_rows} tuned variants")
    check(tuned_rows > 0 and "/* tuned median" not in untuned,
          f"{name}: tuned variants from the cache ({tuned_rows}), none without it")
missing = [key for key, ws in winners.items()
           if not any(description(key, w) in t for w in ws for t in texts.values())]
check(winners and not missing,
      f"each key's tuned variant is a runner winner of that key: missing {missing[:3]} of "
      f"{len(winners)}")

# the rows --tuned-libs added: the gemm libraries only, each kiln lib's tuned variants
with_rows = sorted(os.path.basename(f)[:-len(".tuned.h")]
                   for f in glob.glob(os.path.join(libs, "cpu", "*.tuned.h")))
# the gemm libraries, and the TF32 ones for colsum_f32 only: their gemm is pinned TF32=1, the
# records' TF32=0 (colsum_f32, the same kernel in every gemm library, takes no TF32 pin)
tf32 = [n.replace("_f32", "_tf32") for n in GEMM_LIBS]
check(with_rows == sorted(list(GEMM_LIBS) + tf32),
      f"NAME.tuned.h for the f32 and tf32 gemm libraries only: {with_rows}")
for name in tf32:
    path = os.path.join(libs, "cpu", name + ".tuned.h")
    text = open(path).read() if os.path.exists(path) else ""
    check("#define KILN_GEN_TUNED_N0 0 /* gemm */" in text
          and re.search(r"#define KILN_GEN_TUNED_N1 [1-9]\d* /\* colsum_f32 \*/", text),
          f"{name}: rows for colsum_f32 only")
for name in GEMM_LIBS:
    path = os.path.join(libs, "cpu", name + ".tuned.h")
    got = tuned_h_rows(open(path).read()) if os.path.exists(path) else {}
    want = kiln_lib_rows(texts[name])
    print(f"{name}: rows {sum(map(len, got.values()))} in NAME.tuned.h, "
          f"{sum(map(len, want.values()))} tuned variants from kiln lib")
    check(got and got == want, f"{name}: NAME.tuned.h rows {got} against kiln lib's {want}")

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
# the rows' images are in the binary (kiln_gen_timg<i>: NAME.tuned.h's arrays, compiled in)
nm = run(["nm", os.path.join(out, "tools", "kiln-bert")])
images = len(re.findall(r" kiln_gen_timg\d+$", nm.stdout, re.M)) if nm.returncode == 0 else -1
want_images = sum(open(os.path.join(libs, "cpu", n + ".tuned.h")).read().count("static const "
                  "unsigned char kiln_gen_timg") for n in with_rows)
print(f"kiln-bert holds {images} tuned images (NAME.tuned.h: {want_images})")
check(nm.returncode != 0 or (images == want_images and images > 0),
      f"the tuned images compiled in: {images} of {want_images}")

data = os.path.join(work, "imdb")
kbtest.write_reviews(data, 6)
untuned = kbtest.train_losses(check, kb, vocab, data, os.path.join(work, "untuned.jsonl"), 4)
tuned = kbtest.train_losses(check, os.path.join(out, "tools", "kiln-bert"), vocab, data,
                            os.path.join(work, "tuned.jsonl"), 4)
kbtest.check_same_training(check, untuned, tuned, LOSS_TOL, NORM_TOL)

# its profile names the variants each call ran: the gemm calls' ones timed by the runner
prof_log = os.path.join(work, "tuned-profile.jsonl")
r = run([os.path.join(out, "tools", "kiln-bert"), "train", "--model", "tiny", "--data", data,
         "--vocab", vocab, "--steps", "2", "--batch", "4", "--seq-len", "16", "--dropout", "0",
         "--no-shuffle", "--profile", "--log", prof_log])
prof = [json.loads(x) for x in open(prof_log)] if r.returncode == 0 else []
gemm_variants = {x["variant"] for x in prof if x.get("profile") and x.get("kernel") == "gemm"}
print("the tuned kiln-bert's gemm variants:", sorted(gemm_variants)[:3])
check(r.returncode == 0 and any(", timed on " in v for v in gemm_variants),
      "the tuned kiln-bert's profile names a gemm variant timed by kiln-tune-runner")

print("all passed" if not check.fails else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
