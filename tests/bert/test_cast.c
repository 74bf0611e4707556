/* test_cast.c — the element-type conversions of kernels-bert/cast.kiln (cast_to_f32,
 * cast_from_f32: an fp16/bf16 trainer's half weights from its f32 masters, and weight gradients
 * into its f32 gradient buffer) in f16 and bf16, and colsum_f32 (gemm.kiln) over f16 and bf16
 * input, which sums an fp16/bf16 model's bias gradients into f32.
 *
 * Conversions are exact operations, so they are compared bit for bit (NaN as NaN): widening is
 * exact, narrowing must be the reference's round-to-nearest-even (kiln_ref_round_f16/bf16),
 * including halfway cases, values that overflow T to inf (65520 in f16), infinities, NaN and
 * values that become subnormal or 0. colsum's sum of T values is f32, so its tolerance is
 * f32's: 1e-5 of max(1, |sum|) for sums of <= 53 values in [-1, 1). */
#include "bert_ref.h"
#include "harness.h"
#include "tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* got == want, or both NaN. */
static void check_exact(KilnBertRun *run, const char *what, const float *got, const float *want,
                        size_t n) {
  for (size_t i = 0; i < n && run->ok; i++)
    if (!(got[i] == want[i] || (isnan(got[i]) && isnan(want[i]))))
      kiln_bert_fail(run, "%s[%zu] = %.9g, want %.9g", what, i, (double)got[i], (double)want[i]);
}

/* f32 values that exercise the rounding: random ones of several magnitudes, then the edges. */
static float *edge_values(KilnRefRng *rng, size_t n) {
  float *x = kiln_bert_random_f32(rng, n, -4.0f, 4.0f);
  for (size_t i = 0; i < n; i++)
    x[i] *= (float)(1u << (i % 24)) / 4096.0f; /* 2^-12 .. 2^11 times [-4, 4) */
  static const float edges[] = {0.0f,
                                -0.0f,
                                1.0f,
                                65504.0f,
                                65519.0f,
                                65520.0f,
                                1e30f,
                                -1e30f,
                                INFINITY,
                                -INFINITY,
                                NAN,
                                1e-8f,
                                6e-8f,
                                3e-5f,
                                1.00048828125f /* halfway between two f16 */,
                                1.00390625f /* halfway between two bf16 */,
                                3.0e38f};
  for (size_t i = 0; i < KILN_BERT_COUNT(edges) && i < n; i++) x[i] = edges[i];
  return x;
}

static bool run_cast(const KilnBertDevice *dev, KilnScalarKind t, int32_t n_, int32_t block,
                     uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "cast %s n %d block %d", kiln_bert_type_name(t), n_, block);
  KilnDefine defs[] = {{"T", t}, {"BLOCK", block}};
  KilnRtFunction *to = kiln_bert_kernel(&run, "cast", "cast_to_f32", defs, 2);
  KilnRtFunction *from = kiln_bert_kernel(&run, "cast", "cast_from_f32", defs, 2);
  size_t n = (size_t)n_, esz = kiln_bert_elem_size(t);
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  /* narrowing: f32 in, T out */
  float *x = edge_values(&rng, n), *want = kiln_bert_alloc(n, 4);
  for (size_t i = 0; i < n; i++) want[i] = kiln_bert_round(x[i], t);
  void *dx = kiln_bert_input(&run, x, n * 4),
       *dy = kiln_bert_output(&run, (n + KILN_BERT_TAIL) * esz);
  int32_t nn = n_;
  void *fargs[] = {&dx, &dy, &nn};
  kiln_bert_launch(&run, from, kiln_bert_cdiv(n, (size_t)block), 1, fargs);
  float *narrowed = kiln_bert_fetch_t(&run, "narrowed", dy, n, t);
  if (narrowed) check_exact(&run, "narrowed", narrowed, want, n);
  /* widening: T in (the values just rounded), f32 out, exact */
  void *dh = kiln_bert_input_t(&run, want, n, t),
       *dw = kiln_bert_output(&run, (n + KILN_BERT_TAIL) * 4);
  void *targs[] = {&dh, &dw, &nn};
  kiln_bert_launch(&run, to, kiln_bert_cdiv(n, (size_t)block), 1, targs);
  float *widened = kiln_bert_alloc(n + KILN_BERT_TAIL, 4);
  kiln_bert_fetch(&run, widened, dw, (n + KILN_BERT_TAIL) * 4);
  kiln_bert_check_untouched(&run, "widened", widened, 4, n + KILN_BERT_TAIL, 1, n,
                            n + KILN_BERT_TAIL);
  check_exact(&run, "widened", widened, want, n);
  free(x), free(want), free(narrowed), free(widened);
  return kiln_bert_end(&run);
}

/* out[p cols + c] = the sum over part p's rows (the 4-row blocks p, p + parts, ...) of
 * x[r ld + c], for T input read at a row stride of cols + 3 whose gap holds 1000 (a load
 * ignoring its mask shows); nothing written past parts x cols. A part with no rows (more parts
 * than row blocks) must write 0. */
static bool run_colsum(const KilnBertDevice *dev, KilnScalarKind t, int32_t rows, int32_t cols,
                       int32_t parts, uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "colsum_f32 over %s %dx%d in %d parts", kiln_bert_type_name(t), rows,
                  cols, parts);
  enum { BLOCK_R = 4 };
  KilnDefine defs[] = {{"T", t}, {"BLOCK_R", BLOCK_R}, {"BLOCK_C", 32}};
  KilnRtFunction *fn = kiln_bert_kernel(&run, "gemm", "colsum_f32", defs, 3);
  size_t R = (size_t)rows, C = (size_t)cols, ld = C + 3, n = (size_t)parts * C;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  float *x = kiln_bert_random_t(&rng, R * ld, -1.0f, 1.0f, t);
  for (size_t r = 0; r < R; r++)
    for (size_t c = C; c < ld; c++) x[r * ld + c] = 1000.0f;
  void *dx = kiln_bert_input_t(&run, x, R * ld, t),
       *dout = kiln_bert_output(&run, (n + KILN_BERT_TAIL) * 4);
  int32_t ld32 = (int32_t)ld;
  void *args[] = {&dx, &dout, &rows, &cols, &ld32, &parts};
  kiln_bert_launch(&run, fn, kiln_bert_cdiv(C, 32), (uint32_t)parts, args);
  float *out = kiln_bert_alloc(n + KILN_BERT_TAIL, 4), *ref = kiln_bert_alloc(n, 4);
  kiln_bert_fetch(&run, out, dout, (n + KILN_BERT_TAIL) * 4);
  kiln_bert_check_untouched(&run, "out", out, 4, n + KILN_BERT_TAIL, 1, n, n + KILN_BERT_TAIL);
  for (size_t p = 0; p < (size_t)parts; p++)
    for (size_t c = 0; c < C; c++) {
      double s = 0.0;
      for (size_t r0 = p * BLOCK_R; r0 < R; r0 += (size_t)parts * BLOCK_R)
        for (size_t r = r0; r < r0 + BLOCK_R && r < R; r++) s += x[r * ld + c];
      ref[p * C + c] = (float)s;
    }
  /* at most 53 terms of [-1, 1] a sum: each of its 52 f32 additions rounds by at most
   * 53 x 2^-24, 1.7e-4 in all against the floor 1 (a missed or doubled term is ~0.5) */
  kiln_bert_check_close(&run, "out", out, ref, n, 1.0, 2e-4);
  free(x), free(out), free(ref);
  return kiln_bert_end(&run);
}

bool kiln_bert_test_cast(const KilnBertDevice *dev) {
  bool ok = true;
  static const KilnScalarKind types[] = {KILN_SCALAR_F16, KILN_SCALAR_BF16};
  for (size_t i = 0; i < KILN_BERT_COUNT(types); i++) {
    ok &= run_cast(dev, types[i], 1000, 256, 7000 + i);  /* ragged last block */
    ok &= run_cast(dev, types[i], 4096, 1024, 7010 + i); /* whole blocks */
    ok &= run_colsum(dev, types[i], 53, 70, 1, 7020 + i);
    ok &= run_colsum(dev, types[i], 53, 70, 3, 7022 + i);  /* 5, 5 and 4 row blocks */
    ok &= run_colsum(dev, types[i], 53, 70, 20, 7024 + i); /* 14 row blocks: 6 empty parts */
  }
  return ok;
}
