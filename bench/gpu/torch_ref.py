"""PyTorch and Triton on the shapes of bench/gpu/gpu_bench.c, for side-by-side numbers.

Times torch eager (x + y, softmax over rows, an f16 matmul) and a Triton matmul written here
(Triton 3 ships no ready-made matmul), each checked against torch before it is timed. Writes one
JSON document with the same fields as gpu-bench. Run by bench/gpu-check.sh where torch exists.
"""
import argparse
import json
import sys

import torch


def median_ms(fn, reps=20, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def triton_matmul():
    """A blocked f16 matmul with an f32 accumulator in Triton, or None when Triton is absent."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm = tl.program_id(0)
        pn = tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            ta = tl.load(a + rm[:, None] * sam + (k + rk)[None, :] * sak,
                         mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
            tb = tl.load(b + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                         mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(ta, tb)
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    def run(a, b, c, bm=128, bn=128, bk=32, warps=8, stages=3):
        m, k = a.shape
        n = b.shape[1]
        grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
        kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk, num_warps=warps,
                     num_stages=stages)

    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_ref: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    cases = []

    def add(name, shape, ms, rate, unit):
        cases.append({"case": name, "shape": shape, "median_ms": ms, "rate": rate, "unit": unit})
        print(f"{name:<26} {shape:<16} {ms:10.4f} {rate:10.1f} {unit}")

    n = 1 << 26
    x = torch.rand(n, device=dev) * 2 - 1
    y = torch.rand(n, device=dev) * 2 - 1
    ms = median_ms(lambda: torch.add(x, y))
    add("torch_add_f32", f"n={n}", ms, 3 * 4 * n / (ms * 1e6), "GB/s")

    s = torch.rand(32768, 4096, device=dev) * 8 - 4
    ms = median_ms(lambda: torch.softmax(s, dim=1))
    add("torch_softmax_f32", "32768x4096", ms, 2 * 4 * s.numel() / (ms * 1e6), "GB/s")

    m = nn = k = 4096
    a = (torch.rand(m, k, device=dev) * 2 - 1).half()
    b = (torch.rand(k, nn, device=dev) * 2 - 1).half()
    flops = 2.0 * m * nn * k
    ms = median_ms(lambda: torch.matmul(a, b))
    add("torch_matmul_f16", f"{m}x{nn}x{k}", ms, flops / (ms * 1e9), "TFLOP/s")

    tmm = triton_matmul()
    if tmm is not None:
        c = torch.empty(m, nn, device=dev, dtype=torch.float16)
        tmm(a, b, c)
        ref = torch.matmul(a.float(), b.float())
        err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
        if err > 4e-3:
            print(f"torch_ref: Triton matmul mismatch ({err:.3g})", file=sys.stderr)
            return 1
        ms = median_ms(lambda: tmm(a, b, c))
        add("triton_matmul_f16", f"{m}x{nn}x{k}", ms, flops / (ms * 1e9), "TFLOP/s")
    else:
        print("torch_ref: Triton not installed", file=sys.stderr)

    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": cases}
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
