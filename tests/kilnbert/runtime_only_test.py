#!/usr/bin/env python3
"""kiln-bert from a runtime-only build: the way a GPU machine without LLVM/MLIR gets a trainer.

bench/gpu/prepare.sh packs the trainer's generated kernel libraries (C sources with their
images embedded) into the bundle's bert-libs.tar.gz (cpu/, cuda/); there, a KILN_RUNTIME_ONLY build
given -DKILN_BERT_LIBS=DIR compiles kilnbert_model and kiln-bert against them, no compiler
needed. This test does the same here: a libraries folder made from this build's cpu libraries,
a runtime-only configure + build of kiln-bert and the fake libcuda in a scratch folder, then

  - `train` on cpu with --dropout 0 on one worker thread gives the losses of this build's
    kiln-bert bit for bit (the same kernels, the same code: tolerance 0);
  - the cuda copy of the model (built because the folder has cuda/) is reached by --device
    cuda and cuda:N (train and eval): with the fake driver and no GPU, exit 2 and the
    driver's words; with a fake GPU of 1 MiB free (KILN_FAKE_CUDA_FREE), the memory check
    refuses the batch with the cuMemGetInfo figure before anything is allocated (exit 2, both
    byte counts); cuda:1 of a one-GPU driver exit 2 naming it; a malformed cuda:x exit 64;
  - `eval` of the saved model on cpu prints the full build's eval_loss.

The cuda/ folder holds copies of the cpu libraries: a cuda library's images are cubins and PTX
that nothing here could run, and no case above reaches a kernel (each stops before the model
is created), so the copy only proves that the cuda set builds into its own renamed copy of the
model. Building takes minutes (the 44 libraries' C sources are compiled twice).
Usage: runtime_only_test.py KILN_BERT VOCAB SOURCE_DIR BUILD_DIR WORK_DIR GENERATOR C_COMPILER"""
import glob
import json
import os
import shutil
import subprocess
import sys

import kbtest

kb, vocab, src, build, work, generator, cc = sys.argv[1:8]
check = kbtest.Checks()


def make_libs(root):
    """root/cpu and root/cuda from this build's cpu libraries (NAME.c + NAME.h)."""
    files = glob.glob(os.path.join(build, "runtime", "bert", "kernels", "kb_*.[ch]"))
    if len(files) < 2:
        sys.exit(f"no generated kernel libraries in {build}/runtime/bert/kernels")
    for sub in ("cpu", "cuda"):
        os.makedirs(os.path.join(root, sub))
        for f in files:
            shutil.copy(f, os.path.join(root, sub))
    return len(files) // 2


def build_runtime_only(libs, out):
    """The runtime-only configure and build of kiln-bert and the fake driver; exits on failure."""
    conf = ["cmake", "-S", src, "-B", out, "-G", generator, f"-DCMAKE_C_COMPILER={cc}",
            "-DKILN_RUNTIME_ONLY=ON", f"-DKILN_BERT_LIBS={libs}"]
    launcher = shutil.which("ccache")
    if launcher:
        conf.append(f"-DCMAKE_C_COMPILER_LAUNCHER={launcher}")
    for cmd in (conf, ["cmake", "--build", out, "--target", "kiln-bert", "kiln_rt_fake_cuda"]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout[-4000:], r.stderr[-4000:])
            sys.exit(f"FAIL {' '.join(cmd[:3])}: exit {r.returncode}")
    return os.path.join(out, "tools", "kiln-bert")


def losses(exe, args, log, env=None):
    r = subprocess.run([exe, *args, "--log", log], capture_output=True, text=True,
                       env=dict(os.environ, KILN_CPU_THREADS="1", **(env or {})))
    check(r.returncode == 0, f"{exe} train: exit {r.returncode}: {r.stderr[-2000:]}")
    if r.returncode != 0:
        return []
    return [x["loss"] for x in map(json.loads, open(log)) if "step" in x]


def run(exe, args, env=None):
    return subprocess.run([exe, *args], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
n = make_libs(os.path.join(work, "bert-libs"))
print(f"{n} kernel libraries in bert-libs/cpu and bert-libs/cuda")
rkb = build_runtime_only(os.path.join(work, "bert-libs"), os.path.join(work, "build"))

data = os.path.join(work, "imdb")
kbtest.write_reviews(data, 6)
base = ["train", "--model", "tiny", "--data", data, "--vocab", vocab, "--steps", "3",
        "--batch", "4", "--seq-len", "16", "--dropout", "0", "--no-shuffle"]
model = os.path.join(work, "model")
want = losses(kb, [*base, "--save", model], os.path.join(work, "full.jsonl"))
got = losses(rkb, base, os.path.join(work, "runtime-only.jsonl"))
print(f"losses: full build {want}, runtime-only build {got}")
check(len(want) == 3 and got == want, "the runtime-only kiln-bert trains as the full build's does")

help_text = run(rkb, ["train", "--help"]).stdout
check("cuda[:N]." in help_text, "the runtime-only kiln-bert's help names the cuda device")

fake = {"LD_LIBRARY_PATH": os.path.join(work, "build", "tests", "runtime", "fake-cuda")}
r = run(rkb, [*base, "--device", "cuda"], fake)
check(r.returncode == 2 and "no CUDA-capable device" in r.stderr,
      f"no GPU: exit {r.returncode}, {r.stderr[-500:]!r}")
r = run(rkb, [*base, "--device", "cuda:0", "--save", os.path.join(work, "saved")],
        dict(fake, KILN_FAKE_CUDA_FREE=str(1 << 20)))
print("fake GPU, 1 MiB free:", r.stderr.strip()[-400:])
check(r.returncode == 2 and "cuMemGetInfo" in r.stderr and "(1048576 bytes) is available" in r.stderr,
      f"1 MiB free: exit {r.returncode}, {r.stderr[-500:]!r}")
check(not os.path.exists(os.path.join(work, "saved")), "nothing saved by a refused run")
r = run(rkb, [*base, "--device", "cuda:1"], dict(fake, KILN_FAKE_CUDA_FREE=str(1 << 20)))
check(r.returncode == 2 and "cuda:1" in r.stderr, f"cuda:1: exit {r.returncode}, {r.stderr[-500:]!r}")
r = run(rkb, [*base, "--device", "cuda:x"], fake)
check(r.returncode == 64 and "cuda:N" in r.stderr, f"cuda:x: exit {r.returncode}, {r.stderr[-500:]!r}")

# eval: the saved model on cpu gives the full build's numbers; on cuda it reaches the cuda copy
evalargs = ["eval", "--model", model, "--data", os.path.join(data, "train"), "--vocab", vocab,
            "--batch", "4", "--seq-len", "16"]
want_eval, got_eval = run(kb, evalargs).stdout, run(rkb, evalargs).stdout
loss_line = [x for x in want_eval.splitlines() if x.startswith("eval_loss")]
print("eval:", loss_line)
check(loss_line and loss_line[0] in got_eval, "the runtime-only eval gives the full build's eval_loss")
r = run(rkb, [*evalargs, "--device", "cuda"], fake)
check(r.returncode == 2 and "no CUDA-capable device" in r.stderr,
      f"eval, no GPU: exit {r.returncode}, {r.stderr[-500:]!r}")

print("all passed" if not check.fails else f"{check.fails} failed")
sys.exit(1 if check.fails else 0)
