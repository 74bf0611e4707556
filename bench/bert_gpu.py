#!/usr/bin/env python3
"""bert_gpu.py — the Python side of bench/bert-gpu.sh: the synthetic data both sides train on,
the PyTorch runs, and the report.

  bert_gpu.py data DIR --train N --test M [--seed S]
      writes DIR/vocab.txt (30522 tokens: BERT's special ids 0/100/101/102/103, then words
      w0, w1, ... each one WordPiece token) and DIR/imdb/{train,test}/{neg,pos}/*.txt:
      IMDB-like reviews whose token counts follow a log-normal around IMDB's (median ~220
      WordPiece tokens, about one in eight over 510, as bert-base-uncased counts the real
      reviews), the label told by which half of the vocabulary the words lean to.
  bert_gpu.py run --data DIR --model large --precision fp16 --batch 24 --seq-len 512
                    --steps N --mode eager|default|reduce-overhead|max-autotune --json FILE
      trains a plain-PyTorch BertForSequenceClassification (written here, no downloads: post-LN
      encoder, exact GELU, padding keys masked, pooler + tanh, dropout 0.1, mean cross-entropy;
      AdamW lr 2e-5, weight decay 0.01 off biases and LayerNorm, global norm clipped to 1) on the
      first batch x steps reviews in kiln-bert's --no-shuffle order, padded to --seq-len, then
      evaluates the test reviews; fp16 is autocast with a GradScaler, as the reference benchmark
      (on the cpu autocast takes bfloat16, the one half type CPU autocast has; the record says);
      --mode other than eager wraps the model in torch.compile(mode=...); --tf32 (fp32 only)
      sets torch.backends.cuda.matmul.allow_tf32 (and cudnn's), the record's precision then
      "fp32+tf32" (off by default since PyTorch 1.12; no effect on the cpu). Appends one JSON
      record with the benchmark's metrics (first_iter_time, avg_iter_time, iter_per_sec,
      samples_per_sec, total_time, peak_device_bytes, eval_time, final loss) to FILE.
  bert_gpu.py report --parts FILE --out BASE [--title TEXT] [--profile FILE]
      reads the parts bench/bert-gpu.sh ran (JSON lines: Kiln's from kiln-bert's --log summary,
      PyTorch's from `run`, and a record for each part that failed, timed out or was skipped)
      and writes BASE.json and BASE.md: one row per system, mode and precision with the
      benchmark's columns, and the ratio of Kiln's samples per second to the best PyTorch
      row's of the same precision. With --profile (the {"profile": true} records of
      `kiln-bert train --profile --log`), a section "Where Kiln's step goes": the 15 kernel
      calls that take the most time per step, and the summed kernel time against the step's;
      with --ceilings FILE, each call's rate as a share of what the device reaches at its work.
  bert_gpu.py ceilings --profile FILE --device cuda|cpu --json OUT
      times PyTorch's own matrix product (cuBLAS on a GPU) at every profiled gemm call's M, N,
      K, operand layouts and element type, and a device-to-device copy, for report's ceilings.

Every run is one process, so that bench/bert-gpu.sh can give each mode its own time limit and
kill a compile that hangs. PyTorch is a benchmark-only dependency (never needed to build or
test Kiln): on Debian 12 `apt-get install python3-torch` gives 1.13, which has no torch.compile
(those modes are then reported as unavailable)."""
import argparse
import json
import math
import os
import random
import sys
import time

PRESETS = {  # layers, hidden, heads, ffn (kiln-bert's presets)
    "tiny": (2, 128, 2, 512),
    "mini": (4, 256, 4, 1024),
    "base": (12, 768, 12, 3072),
    "large": (24, 1024, 16, 4096),
}
VOCAB = 30522
SPECIAL = {0: "[PAD]", 100: "[UNK]", 101: "[CLS]", 102: "[SEP]", 103: "[MASK]"}
FIRST_WORD = 1000  # ids below are special or unused, as in bert-base-uncased
UNAVAILABLE = 3  # run's exit code when this PyTorch lacks the mode (bert-gpu.sh records it so)


def write_data(root, n_train, n_test, seed):
    """The vocabulary and the aclImdb-layout reviews (see the module comment)."""
    os.makedirs(root, exist_ok=True)
    words = VOCAB - FIRST_WORD
    with open(os.path.join(root, "vocab.txt"), "w") as f:
        for i in range(VOCAB):
            f.write(SPECIAL.get(i, f"[unused{i}]" if i < FIRST_WORD else f"w{i - FIRST_WORD}") + "\n")
    rng = random.Random(seed)
    for split, n in (("train", n_train), ("test", n_test)):
        for k in range(n):
            label = k % 2
            d = os.path.join(root, "imdb", split, ("neg", "pos")[label])
            os.makedirs(d, exist_ok=True)
            length = max(8, min(2000, int(rng.lognormvariate(math.log(220), 0.75))))
            lean = words // 2 * label
            text = " ".join(f"w{lean + rng.randrange(words // 2) if rng.random() < 0.7 else rng.randrange(words)}"
                            for _ in range(length))
            with open(os.path.join(d, f"{k // 2}_{label * 5 + 3}.txt"), "w") as f:
                f.write(text + "\n")


def read_split(root, split, seq_len):
    """Token rows [CLS] ids[:L-2] [SEP] [PAD].. and labels, in kiln-bert's --no-shuffle order
    (neg/ before pos/, names in byte order). Every word is one token of the vocabulary."""
    rows, labels = [], []
    for label, name in ((0, "neg"), (1, "pos")):
        d = os.path.join(root, "imdb", split, name)
        for fn in sorted(os.listdir(d), key=lambda s: s.encode()):
            ids = [FIRST_WORD + int(w[1:]) for w in open(os.path.join(d, fn)).read().split()]
            ids = [101] + ids[:seq_len - 2] + [102]
            rows.append(ids + [0] * (seq_len - len(ids)))
            labels.append(label)
    return rows, labels


def build_model(torch, layers, hidden, heads, ffn, seq_len):
    nn, F = torch.nn, torch.nn.functional

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.out = nn.Linear(hidden, hidden)
            self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
            self.up = nn.Linear(hidden, ffn)
            self.down = nn.Linear(ffn, hidden)
            self.ln2 = nn.LayerNorm(hidden, eps=1e-12)
            self.drop = nn.Dropout(0.1)

        def forward(self, x, bias):
            b, s, _ = x.shape
            q, k, v = self.qkv(x).view(b, s, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
            p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hidden // heads) + bias, dim=-1)
            a = (self.drop(p) @ v).transpose(1, 2).reshape(b, s, hidden)
            x = self.ln1(x + self.drop(self.out(a)))
            return self.ln2(x + self.drop(self.down(F.gelu(self.up(x)))))

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(VOCAB, hidden)
            self.pos = nn.Embedding(512, hidden)
            self.ttype = nn.Embedding(2, hidden)  # not `type`: nn.Module has a method of that name
            self.ln = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.pool = nn.Linear(hidden, hidden)
            self.cls = nn.Linear(hidden, 2)
            self.drop = nn.Dropout(0.1)
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear):
                    nn.init.zeros_(m.bias)

        def forward(self, ids, labels):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.drop(self.ln(self.word(ids) + self.pos(pos) + self.ttype.weight[0]))
            bias = ((ids == 0).to(x.dtype) * -10000.0)[:, None, None, :]  # padding keys
            for layer in self.layers:
                x = layer(x, bias)
            logits = self.cls(self.drop(torch.tanh(self.pool(x[:, 0]))))
            return F.cross_entropy(logits.float(), labels), logits

    return Bert()


def run(a):
    import torch
    dev = torch.device("cuda" if a.device == "cuda" else "cpu")
    threads = None
    if dev.type == "cpu":
        # as many threads as Kiln's cpu device runs (KILN_CPU_THREADS, else every online CPU):
        # a PyTorch built with OpenMP may start with one
        threads = int(os.environ.get("KILN_CPU_THREADS") or os.cpu_count() or 1)
        torch.set_num_threads(threads)
    torch.manual_seed(a.seed)
    rows, labels = read_split(a.data, "train", a.seq_len)
    need = a.batch * a.steps
    if len(rows) < need:
        sys.exit(f"bert_gpu.py: {len(rows)} training reviews, {need} needed")
    erows, elabels = read_split(a.data, "test", a.seq_len)
    model = build_model(torch, *PRESETS[a.model], a.seq_len).to(dev)
    decay = [p for n, p in model.named_parameters() if p.dim() > 1 and "ln" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() > 1 and "ln" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": rest, "weight_decay": 0.0}], lr=2e-5)
    fp16 = a.precision == "fp16"
    # fp32 matrix products on TF32 tensor cores, PyTorch's switch for what kiln-bert --tf32 does
    torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
    torch.backends.cudnn.allow_tf32 = bool(a.tf32)
    scaler = torch.cuda.amp.GradScaler(enabled=fp16 and dev.type == "cuda")
    fwd = model
    if a.mode != "eager":
        if not hasattr(torch, "compile"):
            print(f"bert_gpu.py: torch {torch.__version__} has no torch.compile", file=sys.stderr)
            sys.exit(UNAVAILABLE)
        fwd = torch.compile(model, mode=a.mode)
    amp_dtype = torch.float16 if dev.type == "cuda" else torch.bfloat16

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    # reduce-overhead replays CUDA graphs whose outputs the next replay overwrites: each call
    # is a new step (the loss and logits of the last one are read before the next call)
    mark_step = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    if a.mode != "reduce-overhead" or dev.type != "cuda":
        mark_step = None

    def call(ids, lab):
        if mark_step:
            mark_step()
        return fwd(ids, lab)

    times, loss = [], None
    model.train()
    for k in range(a.steps):
        ids = torch.tensor(rows[k * a.batch:(k + 1) * a.batch], device=dev)
        lab = torch.tensor(labels[k * a.batch:(k + 1) * a.batch], device=dev)
        sync()
        t = time.perf_counter()
        with torch.autocast(dev.type, dtype=amp_dtype, enabled=fp16):
            loss, _ = call(ids, lab)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        sync()
        times.append(time.perf_counter() - t)
    model.eval()
    t = time.perf_counter()
    with torch.no_grad(), torch.autocast(dev.type, dtype=amp_dtype, enabled=fp16):
        for k in range(0, len(erows), a.batch):
            call(torch.tensor(erows[k:k + a.batch], device=dev),
                 torch.tensor(elabels[k:k + a.batch], device=dev))
    sync()
    eval_time = time.perf_counter() - t
    total = sum(times)
    avg = sum(times[1:]) / (len(times) - 1) if len(times) > 1 else times[0]
    if dev.type == "cuda":
        peak = torch.cuda.max_memory_allocated()
    else:
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rec = {"system": "pytorch", "status": "ok", "torch": torch.__version__, "mode": a.mode,
           "precision": "fp32+tf32" if a.tf32 else a.precision, "model": a.model, "batch": a.batch, "seq_len": a.seq_len,
           "steps": a.steps, "first_iter_time": times[0], "avg_iter_time": avg,
           "iter_per_sec": 1 / avg, "samples_per_sec": a.batch * a.steps / total,
           "total_time": total, "peak_device_bytes": peak, "eval_time": eval_time,
           "eval_samples": len(erows), "loss": float(loss),
           "autocast": str(amp_dtype).replace("torch.", "") if fp16 else None,
           "cpu_threads": threads}
    with open(a.json, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(json.dumps(rec))


COLUMNS = ("first_iter_time", "avg_iter_time", "iter_per_sec", "samples_per_sec", "total_time",
           "peak_device_bytes", "eval_time", "loss", "padding_share")


def cell(row, key):
    v = row.get(key)
    if v is None:
        return "-"
    if key == "peak_device_bytes":
        return f"{v / 2**20:.0f} MiB"
    if key == "padding_share":  # kiln-bert's; PyTorch's rows pad every batch to the length
        return f"{100 * v:.1f}%"
    return f"{v:.4g}"


def variant_text(r):
    """The config a profiled call ran (its library's text for the variant) less what its pins
    say; '-' where the record has none."""
    pins = set(r.get("pins", "").split())
    v = r.get("variant", "")
    return ",".join(w for w in v.split(",") if w not in pins).replace("|", "/") or "-"


def profile_section(path, top=15, ceilings_path=None):
    """The --profile records: (lines of the markdown section, the JSON of it); ([], None) when
    there are none. With ceilings' JSON, each call's rate against what the device reaches at
    its work (PyTorch's product at a gemm's shape, a copy's bandwidth for the others)."""
    if not path or not os.path.exists(path):
        return [], None
    ceil = None
    if ceilings_path and os.path.exists(ceilings_path):
        with open(ceilings_path) as f:
            ceil = json.load(f)
    recs = [json.loads(x) for x in open(path) if x.strip()]
    calls = sorted((r for r in recs if r.get("profile") and not r.get("total")),
                   key=lambda r: -r["ms_per_step"])
    total = next((r for r in recs if r.get("profile") and r.get("total")), None)
    if not calls or not total:
        return [], None
    lines = ["", "## Where Kiln's step goes", "",
             f"`kiln-bert train --profile`, fp16, {total['timed_steps']} timed steps (the first "
             f"step is not timed; {total['clock']} clock): the summed kernel time is "
             f"{total['kernel_ms_per_step']:.2f} ms of the measured {total['step_ms']:.2f} ms "
             f"step; the other {total['other_ms']:.2f} ms is host work and launch overhead. "
             f"The {min(top, len(calls))} calls that take the most of {len(calls)}:", "",
             "| kernel | pins | shape | launches/step | ms/step | us/launch | share | TFLOP/s "
             "| GB/s | of ceiling | variant |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    if ceil:
        lines[3] += (f" The ceiling: PyTorch {ceil.get('torch', '')}'s own matrix product at a gemm "
                     f"call's shape, layouts and type (its epilogue aside), else a "
                     f"device-to-device copy ({ceil['copy_gbps']:.0f} GB/s on {ceil['device']}).")
    for r in calls[:top]:
        # the matrix products' rate (gemm, attention) and the bytes' rate (each tensor once):
        # against the device's tensor peak and memory bandwidth they say how far each call is
        tf = f"{r['tflops']:.1f}" if r.get("flops_per_launch") else "-"
        gb = f"{r['gbps']:.0f}" if "gbps" in r else "-"
        lines.append(f"| {r['kernel']} | {r['pins']} | {r['shape']} | {r['launches_per_step']:.4g} "
                     f"| {r['ms_per_step']:.3f} | {r['us_per_launch']:.1f} | "
                     f"{100 * r['share']:.1f}% | {tf} | {gb} | {of_ceiling(r, ceil)} | "
                     f"{variant_text(r)} |")
    return lines, {"total": total, "top": calls[:top], "ceilings": ceil}


def of_ceiling(r, ceil):
    """'48% of 650 TFLOP/s': a profiled call's rate against its ceiling; '-' without one."""
    rate, unit = ceiling_of(r, ceil)
    got = r.get("tflops") if unit == "TFLOP/s" else r.get("gbps")
    if not rate or got is None:
        return "-"
    return f"{100 * got / rate:.0f}% of {rate:.3g} {unit}"


def gemm_shape(rec):
    """A profiled gemm call's (M, N, K, layout of A, layout of B), from its shape text
    'M=12288 N=1024 K=1024 nt'; None for other calls."""
    if rec.get("kernel") != "gemm":
        return None
    words = rec.get("shape", "").split()
    dims = dict(w.split("=") for w in words if "=" in w)
    lay = next((w for w in words if "=" not in w), "nn")
    try:
        return int(dims["M"]), int(dims["N"]), int(dims["K"]), lay[0], lay[1]
    except (KeyError, ValueError, IndexError):
        return None


def ceilings(a):
    """What the device does at the profiled calls' work, for the report's 'of ceiling' column:
    PyTorch's own matrix product (cuBLAS on a GPU, its CPU BLAS on the cpu) at each gemm call's
    M, N, K, operand layouts and element type, and a device-to-device copy's bandwidth for the
    memory-bound calls. Writes {"device", "copy_gbps", "gemm": [{M, N, K, layout, dtype,
    tflops}]} to --json."""
    import torch
    dev = torch.device("cuda" if a.device == "cuda" else "cpu")
    if dev.type == "cpu":
        torch.set_num_threads(int(os.environ.get("KILN_CPU_THREADS") or os.cpu_count() or 1))
    recs = [json.loads(x) for x in open(a.profile) if x.strip()]

    def timed(fn, reps):
        """The median seconds of fn over reps runs after two warm-ups."""
        for _ in range(2):
            fn()
        times = []
        for _ in range(reps):
            if dev.type == "cuda":
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e) / 1e3)
            else:
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
        return sorted(times)[len(times) // 2]

    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
    gemms, seen = [], set()
    for r in recs:
        shape = gemm_shape(r) if r.get("profile") and not r.get("total") else None
        pins = dict(w.split("=") for w in r.get("pins", "").split() if "=" in w)
        dt = pins.get("T", "f32")
        if not shape or dt not in dtypes:
            continue
        key = (*shape, dt, pins.get("TF32", "0"))
        if key in seen:
            continue
        seen.add(key)
        m, n, k, la, lb = shape
        # the cpu has no f16 product in every PyTorch (1.13: none); its autocast's bfloat16
        # stands in, as in the PyTorch rows of the table
        t = torch.bfloat16 if dev.type == "cpu" and dt == "f16" else dtypes[dt]
        # A is M x K read row-major (n) or as the transpose of a K x M array (t); B likewise
        x = (torch.randn(m, k, device=dev) if la == "n" else torch.randn(k, m, device=dev).t()).to(t)
        y = (torch.randn(k, n, device=dev) if lb == "n" else torch.randn(n, k, device=dev).t()).to(t)
        out = torch.empty(m, n, device=dev, dtype=t)
        torch.backends.cuda.matmul.allow_tf32 = key[-1] == "1"
        try:
            secs = timed(lambda: torch.matmul(x, y, out=out), 10 if dev.type == "cuda" else 3)
        except RuntimeError as e:  # a type this PyTorch cannot multiply here: no ceiling
            print(f"ceilings: {m}x{n}x{k} {la}{lb} {dt}: {str(e)[:120]}", file=sys.stderr)
            continue
        gemms.append({"M": m, "N": n, "K": k, "layout": la + lb, "dtype": dt, "tf32": key[-1] == "1",
                      "ran_as": str(t).replace("torch.", ""),
                      "tflops": 2.0 * m * n * k / secs / 1e12 if secs > 0 else 0})
        del x, y, out
    # a copy of 256 MiB (64 MiB on the cpu): read and written once, 2 bytes moved a byte
    nbytes = (256 if dev.type == "cuda" else 64) << 20
    src = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    secs = timed(lambda: dst.copy_(src), 10 if dev.type == "cuda" else 3)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    res = {"device": name, "torch": torch.__version__, "copy_gbps": 2 * nbytes / secs / 1e9,
           "gemm": gemms}
    with open(a.json + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(a.json + ".tmp", a.json)
    print(f"ceilings on {name}: copy {res['copy_gbps']:.0f} GB/s, {len(gemms)} gemm shapes",
          file=sys.stderr)


def ceiling_of(r, ceil):
    """(the rate the device reaches at call r's work, its unit) from ceilings' JSON: PyTorch's
    matrix product at a gemm call's shape, the copy's bandwidth for a memory-bound call; (None,
    '') without one (attention's products)."""
    if not ceil:
        return None, ""
    shape = gemm_shape(r)
    if shape:
        pins = dict(w.split("=") for w in r.get("pins", "").split() if "=" in w)
        for g in ceil.get("gemm", []):
            if ((g["M"], g["N"], g["K"], g["layout"][0], g["layout"][1]) == shape and
                    g["dtype"] == pins.get("T", "f32") and g["tf32"] == (pins.get("TF32") == "1")):
                return g["tflops"], "TFLOP/s"
        return None, ""
    if r.get("flops_per_launch"):  # attention's products: no plain product stands for them
        return None, ""
    return ceil.get("copy_gbps"), "GB/s"


def threads_note(rows):
    """The threads PyTorch ran on the cpu with (those of Kiln's cpu device), where it says."""
    n = sorted({r["cpu_threads"] for r in rows if r.get("cpu_threads")})
    return f" PyTorch on the cpu: {', '.join(map(str, n))} threads, as Kiln's." if n else ""


def report(a):
    rows = [json.loads(x) for x in open(a.parts) if x.strip()]
    # a part that wrote its numbers and was then killed on its way out (a compiled model's
    # teardown) has an ok row and the script's timeout note: the numbers stand
    done = {(r.get("system"), r.get("mode"), r.get("precision")) for r in rows
            if r.get("status") == "ok"}
    rows = [r for r in rows if r.get("status") == "ok"
            or (r.get("system"), r.get("mode"), r.get("precision")) not in done]
    ratio = {}
    # the kiln-bert built against libraries tuned on this device (bert-gpu.sh --kiln-bert-tuned)
    # gets a ratio of its own, "fp16 (tuned)", beside the untuned build's
    for prec, tuned in (("fp32", False), ("fp32", True), ("fp32+tf32", False), ("fp16", False),
                        ("fp16", True)):
        kiln = [r for r in rows if r.get("system") == "kiln" and r.get("precision") == prec
                and r.get("status") == "ok" and r.get("padding") == "fixed"
                and (r.get("mode") == "kiln-bert (tuned)") == tuned]
        torch_rows = [r for r in rows if r.get("system") == "pytorch" and r.get("precision") == prec
                      and r.get("status") == "ok"]
        if kiln and torch_rows:
            best = max(torch_rows, key=lambda r: r["samples_per_sec"])
            ratio[prec + (" (tuned)" if tuned else "")] = {"kiln_samples_per_sec": kiln[0]["samples_per_sec"],
                           "best_pytorch": best["mode"],
                           "best_pytorch_samples_per_sec": best["samples_per_sec"],
                           "ratio": kiln[0]["samples_per_sec"] / best["samples_per_sec"]}
    prof_lines, prof = profile_section(a.profile, ceilings_path=a.ceilings)
    with open(a.out + ".json.tmp", "w") as f:
        json.dump({"title": a.title, "command": a.command, "rows": rows,
                   "kiln_over_best_pytorch": ratio, "kiln_profile": prof}, f, indent=1)
    os.replace(a.out + ".json.tmp", a.out + ".json")
    lines = [f"# {a.title}", "", f"Made by `{a.command}`.", "",
             "peak_device_bytes: Kiln's device allocator's high-water mark; PyTorch's "
             "torch.cuda.max_memory_allocated on a GPU, the process's peak resident memory "
             "on the cpu (the library included, so not comparable there). fp16 on the cpu: "
             "Kiln stores f16; PyTorch's CPU autocast takes bfloat16." + threads_note(rows), "",
             "| system | mode | precision | batch | padding | status | " + " | ".join(COLUMNS) + " |",
             "|" + " --- |" * (6 + len(COLUMNS))]
    for r in rows:
        status = r.get("status") if not r.get("why") else f"{r.get('status')}: {r['why']}"
        lines.append(f"| {r.get('system')} | {r.get('mode')} | {r.get('precision')} | "
                     f"{r.get('batch')} | {r.get('padding', 'fixed')} | {status} | "
                     + " | ".join(cell(r, c) for c in COLUMNS) + " |")
    lines.append("")
    for prec, v in ratio.items():
        lines.append(f"- {prec}: Kiln / best PyTorch ({v['best_pytorch']}) samples per second = "
                     f"{v['ratio']:.3f}")
    if not ratio:
        lines.append("- no ratio: Kiln and PyTorch did not both finish in one precision")
    lines += prof_lines
    with open(a.out + ".md.tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(a.out + ".md.tmp", a.out + ".md")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data")
    d.add_argument("dir")
    d.add_argument("--train", type=int, required=True)
    d.add_argument("--test", type=int, required=True)
    d.add_argument("--seed", type=int, default=1)
    r = sub.add_parser("run")
    r.add_argument("--data", required=True)
    r.add_argument("--model", choices=sorted(PRESETS), default="large")
    r.add_argument("--precision", choices=["fp32", "fp16"], default="fp16")
    r.add_argument("--batch", type=int, default=24)
    r.add_argument("--seq-len", type=int, default=512)
    r.add_argument("--steps", type=int, default=10)
    r.add_argument("--mode", choices=["eager", "default", "reduce-overhead", "max-autotune"],
                   default="eager")
    r.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    r.add_argument("--seed", type=int, default=42)
    r.add_argument("--json", required=True)
    r.add_argument("--tf32", action="store_true",
                   help="fp32 with torch.backends.cuda.matmul.allow_tf32 (TF32 tensor cores)")
    p = sub.add_parser("report")
    p.add_argument("--parts", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--title", default="BERT fine-tuning, Kiln and PyTorch")
    p.add_argument("--command", default="", help="the command that made the numbers")
    p.add_argument("--profile", help="kiln-bert train --profile's {\"profile\": true} records")
    p.add_argument("--ceilings", help="ceilings' JSON: the device's rates at the calls' work")
    c = sub.add_parser("ceilings")
    c.add_argument("--profile", required=True, help="kiln-bert train --profile's records")
    c.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    c.add_argument("--json", required=True)
    a = ap.parse_args()
    if a.cmd == "report":
        report(a)
    elif a.cmd == "ceilings":
        ceilings(a)
    elif a.cmd == "data":
        if a.train < 1 or a.test < 1:
            sys.exit("bert_gpu.py data: --train and --test must be >= 1")
        write_data(a.dir, a.train, a.test, a.seed)
    else:
        if a.steps < 1 or a.batch < 1 or not 2 <= a.seq_len <= 512:
            sys.exit("bert_gpu.py run: --steps, --batch >= 1 and --seq-len in [2, 512]")
        if a.tf32 and a.precision != "fp32":
            sys.exit("bert_gpu.py run: --tf32 is for --precision fp32 (fp16 autocast is on "
                     "tensor cores already)")
        run(a)


if __name__ == "__main__":
    main()
