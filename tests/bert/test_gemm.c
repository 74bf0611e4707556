/* test_gemm.c — GEMM with epilogues, its transposed backward forms through strides, and the
 * bias-gradient column sums (kernels-bert/gemm.kiln). docs/kernels/gemm.md gives the
 * tolerances' reasons. */
#include "bert_ref.h"
#include "harness.h"
#include "tests.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PAD = 5 }; /* sentinel columns after each row of C */

/* One product: A (M x K) and B (K x N) by strides, C written at row stride N + PAD. */
typedef struct Gemm {
  const float *a, *b, *bias, *res; /* res: M x N dense (the kernel reads it at C's strides) */
  int32_t M, N, K, sam, sak, sbk, sbn, epi;
  size_t a_len, b_len;
  int32_t splits; /* K in this many parts, each with a C of its own (0: one) */
} Gemm;

static int32_t gemm_splits(const Gemm *g) { return g->splits > 1 ? g->splits : 1; }

/* A B at (m, n), in double. */
static double ref_product(const Gemm *g, size_t m, size_t n) {
  double acc = 0.0;
  for (size_t k = 0; k < (size_t)g->K; k++)
    acc += (double)g->a[m * (size_t)g->sam + k * (size_t)g->sak] *
           g->b[k * (size_t)g->sbk + n * (size_t)g->sbn];
  return acc;
}

/* EPI 4's GELU input at (m, n): res + bias. */
static double gelu_input(const Gemm *g, size_t m, size_t n) {
  return (double)g->res[m * (size_t)g->N + n] + g->bias[n];
}

static double ref_elem(const Gemm *g, size_t m, size_t n) {
  double acc = ref_product(g, m, n);
  if (g->epi == 4) return acc * kiln_bert_ref_gelu_grad(gelu_input(g, m, n), 0);
  if (g->epi >= 1) acc += g->bias[n];
  if (g->epi == 2) acc = kiln_bert_ref_gelu(acc, 0);
  if (g->epi == 3) acc += g->res[m * (size_t)g->N + n];
  return acc;
}

/* Runs the product on fn (gemm with element type t: inputs converted to t, output read back as
 * f32) and returns C densely, checking its sentinels; a split product's parts one after
 * another (splits x M rows). */
static float *run_gemm(KilnBertRun *run, KilnRtFunction *fn, const Gemm *g, KilnScalarKind t,
                       int bm, int bn) {
  size_t S = (size_t)gemm_splits(g);
  size_t M = (size_t)g->M, N = (size_t)g->N, ld = N + PAD, total = S * M * ld + KILN_BERT_TAIL;
  size_t esz = kiln_bert_elem_size(t);
  float *res_ld = kiln_bert_alloc(M * ld, 4);
  for (size_t m = 0; m < M && g->res; m++)
    for (size_t n = 0; n < N; n++) res_ld[m * ld + n] = g->res[m * N + n];
  const float *host[4] = {g->a, g->b, g->bias, res_ld};
  size_t lens[4] = {g->a_len, g->b_len, N, M * ld};
  void *dev[4];
  for (int i = 0; i < 4; i++) {
    float zero = 0.0f;
    const float *src = host[i] ? host[i] : &zero;
    size_t len = host[i] ? lens[i] : 1;
    dev[i] = kiln_bert_input_t(run, src, len, t);
  }
  void *dc = kiln_bert_output(run, total * esz);
  int32_t scm = (int32_t)ld, scn = 1, splits = (int32_t)S;
  void *args[] = {&dev[0],
                  &dev[1],
                  &dc,
                  &dev[2],
                  &dev[3],
                  (void *)&g->M,
                  (void *)&g->N,
                  (void *)&g->K,
                  (void *)&g->sam,
                  (void *)&g->sak,
                  (void *)&g->sbk,
                  (void *)&g->sbn,
                  &scm,
                  &scn,
                  &splits};
  kiln_bert_launch3(run, fn, kiln_bert_cdiv(M, (size_t)bm), kiln_bert_cdiv(N, (size_t)bn),
                    (uint32_t)S, args);
  unsigned char *raw = kiln_bert_alloc(total, esz);
  kiln_bert_fetch(run, raw, dc, total * esz);
  kiln_bert_check_untouched(run, "c", raw, esz, total, S * M, N, ld);
  float *c = kiln_bert_alloc(S * M * N, 4);
  for (size_t m = 0; m < S * M; m++)
    for (size_t n = 0; n < N; n++) c[m * N + n] = kiln_bert_elem_get(raw, m * ld + n, t);
  free(raw), free(res_ld);
  return c;
}

/* The error of the kernel's f32 value of C[m, n] before its rounding to T, for the f16 / bf16
 * bound (kiln_bert_check_rounded). Products of T values are exact in f32; the f32 sum of K of
 * them errs by at most (K - 1) 2^-24 sum_k |a b| in any order, doubled here because a tensor
 * core's accumulation may truncate rather than round (an ulp, not half, per addition). The bias
 * and residual additions add 2^-24 of the partial sums each (<= 2 2^-24 (S + |bias| + |res|)).
 * GELU multiplies an input error by |gelu'| <= 1.13 and adds its own f32 error (test_gelu.c:
 * 20 2^-24 of 0.5 |v| and two roundings of y). GELU's backward (EPI 4) multiplies the
 * product's error by |gelu'(v)| and adds |A B| times the error of the f32 gelu'(v): 10 2^-24
 * of its own (test_gelu.c) and the rounding of v = res + bias (2^-24 |v|) times |gelu''| <= 0.8,
 * plus the rounding of the product. */
static double gemm_f32_error(const Gemm *g, size_t m, size_t n, double c) {
  double s = 0.0;
  for (size_t k = 0; k < (size_t)g->K; k++)
    s += fabs((double)g->a[m * (size_t)g->sam + k * (size_t)g->sak] *
              g->b[k * (size_t)g->sbk + n * (size_t)g->sbn]);
  if (g->epi == 4) {
    double v = gelu_input(g, m, n);
    return fabs(kiln_bert_ref_gelu_grad(v, 0)) * 0x1p-24 * 2.0 * g->K * s +
           0x1p-24 * (fabs(ref_product(g, m, n)) * (10 + 0.8 * fabs(v)) + fabs(c));
  }
  double bias = g->epi >= 1 ? fabs((double)g->bias[n]) : 0.0;
  double res = g->epi == 3 ? fabs((double)g->res[m * (size_t)g->N + n]) : 0.0;
  double e = 0x1p-24 * (2.0 * g->K * s + 2 * (s + bias + res));
  if (g->epi == 2) {
    double v = ref_product(g, m, n) + g->bias[n]; /* the GELU's argument, in double */
    e = 1.13 * e + 0x1p-24 * (0.5 * fabs(v) * 20 + 2 * fabs(c));
  }
  return e;
}

/* C against the reference: f32 within tol (floor 1), f16 / bf16 within a bound per element. */
static void check_gemm(KilnBertRun *run, const char *what, const float *c, const Gemm *g,
                       KilnScalarKind t, double tol) {
  size_t M = (size_t)g->M, N = (size_t)g->N;
  float *ref = kiln_bert_alloc(M * N, 4);
  double *e = kiln_bert_alloc(M * N, sizeof *e);
  for (size_t m = 0; m < M; m++)
    for (size_t n = 0; n < N; n++) {
      ref[m * N + n] = (float)ref_elem(g, m, n);
      e[m * N + n] = gemm_f32_error(g, m, n, ref[m * N + n]);
    }
  if (t == KILN_SCALAR_F32)
    kiln_bert_check_close(run, what, c, ref, M * N, 1.0, tol);
  else
    kiln_bert_check_rounded(run, what, c, ref, e, M * N, t);
  free(ref), free(e);
}

/* Each part of a split product against the product of its own K steps (the kernel's promise:
 * part z adds the BK-wide steps [z steps, (z + 1) steps) of cdiv(K, BK), steps =
 * cdiv(cdiv(K, BK), splits); a part past K is zeros), at f32's 1e-5 or the per-element bound;
 * one part is the whole product. */
static void check_parts(KilnBertRun *run, const float *c, const Gemm *g, int bk, KilnScalarKind t) {
  int32_t S = gemm_splits(g), steps = (g->K + bk - 1) / bk;
  steps = (steps + S - 1) / S;
  for (int32_t z = 0; z < S && run->ok; z++) {
    int32_t lo = z * steps * bk, hi = lo + steps * bk < g->K ? lo + steps * bk : g->K;
    Gemm part = *g;
    part.K = hi > lo ? hi - lo : 0;
    if (part.K) part.a += (size_t)lo * (size_t)g->sak, part.b += (size_t)lo * (size_t)g->sbk;
    char what[32];
    snprintf(what, sizeof what, "c part %d of %d", z, S);
    check_gemm(run, S > 1 ? what : "c", c + (size_t)z * (size_t)g->M * (size_t)g->N, &part, t,
               1e-5);
  }
}

/* Every epilogue on one shape, the programs in the order GROUP_M = group; inputs rounded to t. */
static bool run_grouped(const KilnBertDevice *dev, int32_t M, int32_t N, int32_t K, int bm, int bn,
                        int bk, int group, KilnScalarKind t, int epi_lo, int epi_hi,
                        uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "%s %dx%dx%d tiles %dx%dx%d, epilogues %d-%d, GROUP_M %d",
                  kiln_bert_type_name(t), M, N, K, bm, bn, bk, epi_lo, epi_hi, group);
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  size_t sM = (size_t)M, sN = (size_t)N, sK = (size_t)K;
  float *a = kiln_bert_random_t(&rng, sM * sK, -1.0f, 1.0f, t),
        *b = kiln_bert_random_t(&rng, sK * sN, -1.0f, 1.0f, t);
  float *bias = kiln_bert_random_t(&rng, sN, -1.0f, 1.0f, t),
        *res = kiln_bert_random_t(&rng, sM * sN, -1.0f, 1.0f, t);
  /* f32: the accumulation's own error, 1e-5 (floor 1); f16 / bf16: a bound per element
   * (gemm_f32_error). */
  double tol = 1e-5;
  for (int epi = epi_lo; epi <= epi_hi && run.ok; epi++) {
    KilnDefine defs[] = {{"T", t},   {"BM", bm},   {"BN", bn},
                         {"BK", bk}, {"EPI", epi}, {"GROUP_M", group}};
    KilnRtFunction *fn = kiln_bert_kernel(&run, "gemm", "gemm", defs, 6);
    Gemm g = {a, b, bias, res, M, N, K, K, 1, N, 1, epi, sM * sK, sK * sN, 1};
    float *c = run_gemm(&run, fn, &g, t, bm, bn);
    char what[32];
    snprintf(what, sizeof what, "c epi %d", epi);
    check_gemm(&run, what, c, &g, t, tol);
    free(c);
  }
  free(a), free(b), free(bias), free(res);
  return kiln_bert_end(&run);
}

/* The same in the plain program order (GROUP_M = 1). */
static bool run_epilogues(const KilnBertDevice *dev, int32_t M, int32_t N, int32_t K, int bm,
                          int bn, int bk, KilnScalarKind t, int epi_lo, int epi_hi, uint64_t seed) {
  return run_grouped(dev, M, N, K, bm, bn, bk, 1, t, epi_lo, epi_hi, seed);
}

/* The three layouts of a linear layer's products, as the trainer's library copies promise them
 * (unit strides compiled in, the other row stride a multiple of 8 elements): the forward
 * y = x W^T (B = W read k-major), dX = dY W (B n-major) and dW = X^T dY (A m-major). */
enum { LAYOUT_FWD, LAYOUT_DX, LAYOUT_DW };

/* v[0..n) truncated to TF32 (the 13 low mantissa bits cleared): values that mma.sync's
 * rounding and wgmma's truncation both take as they are. */
static void make_tf32_exact(float *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &v[i], 4);
    u &= 0xffffe000u;
    memcpy(&v[i], &u, 4);
  }
}

/* The gemm in one layout with its unit strides compiled in, as the trainer's library copies
 * have them: on the cpu a load along another dim than the last (the forward's B, dW's A) moves
 * column chunks with one masked load each (mlir-dialect/cpu/cpu_ops.c), on the GPU targets the
 * operands take vector loads and cp.async.
 * With `wgmma` (docs/gpu-lowering.md, "wgmma on sm_90"): the gemm with wgmma = 1, its
 * operands pipelined so that the dot reads them through descriptors on sm_90 and emu; the
 * result against the reference within the same per-element bound as mma.sync's.  tf32: f32
 * with TF32 = 1 on inputs exact in TF32 (whichever way a path takes them, the products are
 * the reference's, exact in f32: the accumulation's error alone, as the f32 runs), where the
 * forward layout runs wgmma .tf32 and dX and dW, whose m- or n-major operand wgmma .tf32
 * cannot read, stay on mma.sync. */
static bool run_layout_split(const KilnBertDevice *dev, int layout, bool wgmma, KilnScalarKind t,
                             int32_t M, int32_t N, int32_t K, int bm, int bn, int bk, int warps,
                             int stages, int epi, int32_t splits, uint64_t seed) {
  static const char *const names[] = {"forward (B k-major)", "dX (B n-major)", "dW (A m-major)"};
  bool tf32 = wgmma && t == KILN_SCALAR_F32;
  /* the cp.async ring of A and B tiles: wgmma_wide's 192 KiB is more than sm_80 has */
  size_t ring = (size_t)stages * ((size_t)bm * bk + (size_t)bk * bn) * kiln_bert_elem_size(t);
  if (!kiln_bert_fits_smem(dev, ring)) {
    printf(
        "  skip %s %s %dx%dx%d tiles: a %zu-byte ring is more shared memory than the target has\n",
        names[layout], kiln_bert_type_name(t), bm, bn, bk, ring);
    return true;
  }
  KilnBertRun run;
  kiln_bert_begin(&run, dev,
                  "%s %s %s %dx%dx%d tiles %dx%dx%d on %d warps, %d stages, epilogue %d, K in %d",
                  tf32 ? "tf32" : kiln_bert_type_name(t), wgmma ? "wgmma" : "layout", names[layout],
                  M, N, K, bm, bn, bk, warps, stages, epi, splits);
  KilnDefine unit[2] = {{layout == LAYOUT_DW ? "sam" : "sak", 1},
                        {layout == LAYOUT_FWD ? "sbk" : "sbn", 1}};
  KilnDefine mult[2] = {{layout == LAYOUT_DW ? "sak" : "sam", 8},
                        {layout == LAYOUT_FWD ? "sbn" : "sbk", 8}};
  KilnCompileOptions promises = {
      .specialize = unit, .num_specialize = 2, .multiple_of = mult, .num_multiple_of = 2};
  run.d.extra = &promises;
  run.d.num_warps = warps; /* the harness compiles and launches at the device's warps */
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  size_t sM = (size_t)M, sN = (size_t)N, sK = (size_t)K;
  float *a = kiln_bert_random_t(&rng, sM * sK, -1.0f, 1.0f, t),
        *b = kiln_bert_random_t(&rng, sK * sN, -1.0f, 1.0f, t);
  float *bias = kiln_bert_random_t(&rng, sN, -1.0f, 1.0f, t),
        *res = kiln_bert_random_t(&rng, sM * sN, -1.0f, 1.0f, t);
  if (tf32) make_tf32_exact(a, sM * sK), make_tf32_exact(b, sK * sN);
  Gemm g = {a, b, bias, res, M, N, K, K, 1, N, 1, epi, sM * sK, sK * sN, splits};
  if (layout == LAYOUT_FWD) g.sbk = 1, g.sbn = K;
  if (layout == LAYOUT_DW) g.sam = 1, g.sak = M;
  KilnDefine defs[] = {{"T", t},         {"BM", bm},    {"BN", bn},
                       {"BK", bk},       {"EPI", epi},  {"num_stages", stages},
                       {"wgmma", wgmma}, {"TF32", tf32}};
  KilnRtFunction *fn = kiln_bert_kernel(&run, "gemm", "gemm", defs, 8);
  float *c = run_gemm(&run, fn, &g, t, bm, bn);
  if (run.ok) check_parts(&run, c, &g, bk, t);
  free(c), free(a), free(b), free(bias), free(res);
  return kiln_bert_end(&run);
}

static bool run_layout(const KilnBertDevice *dev, int layout, bool wgmma, KilnScalarKind t,
                       int32_t M, int32_t N, int32_t K, int bm, int bn, int bk, int warps,
                       int stages, int epi, uint64_t seed) {
  return run_layout_split(dev, layout, wgmma, t, M, N, K, bm, bn, bk, warps, stages, epi, 1, seed);
}

/* L = sum w * (X W + b), in double, from a forward product. */
static double loss(const float *y, const float *w, size_t n) {
  double l = 0.0;
  for (size_t i = 0; i < n; i++) l += (double)w[i] * y[i];
  return l;
}

/* The linear layer's backward: dX = w W^T and dW = X^T w through strides, db = colsum(w);
 * each checked against the reference and against central differences of L through the
 * forward at a few elements. */
static bool run_backward(const KilnBertDevice *dev, int32_t M, int32_t K, int32_t N,
                         uint64_t seed) {
  KilnBertRun run;
  kiln_bert_begin(&run, dev, "linear backward X %dx%d W %dx%d", M, K, K, N);
  enum { T = 16 };
  KilnDefine d1[] = {{"BM", T}, {"BN", T}, {"BK", T}, {"EPI", 1}},
             d0[] = {{"BM", T}, {"BN", T}, {"BK", T}, {"EPI", 0}};
  KilnDefine dc[] = {{"BLOCK_R", 4}, {"BLOCK_C", 32}};
  KilnRtFunction *fwd = kiln_bert_kernel(&run, "gemm", "gemm", d1, 4); /* T: f32 by default */
  KilnRtFunction *plain = kiln_bert_kernel(&run, "gemm", "gemm", d0, 4);
  KilnRtFunction *colsum = kiln_bert_kernel(&run, "gemm", "colsum_f32", dc, 2);
  size_t sM = (size_t)M, sN = (size_t)N, sK = (size_t)K;
  KilnRefRng rng;
  kiln_ref_rng_init(&rng, seed);
  float *x = kiln_bert_random_f32(&rng, sM * sK, -1.0f, 1.0f),
        *w = kiln_bert_random_f32(&rng, sK * sN, -1.0f, 1.0f);
  float *b = kiln_bert_random_f32(&rng, sN, -1.0f, 1.0f),
        *dy = kiln_bert_random_f32(&rng, sM * sN, -1.0f, 1.0f);
  Gemm gdx = {dy, w, NULL, NULL, M, K, N, N, 1, 1, N, 0, sM * sN, sK * sN, 1}; /* B = W^T */
  Gemm gdw = {x, dy, NULL, NULL, K, N, M, 1, K, N, 1, 0, sM * sK, sM * sN, 1}; /* A = X^T */
  float *dx = run_gemm(&run, plain, &gdx, KILN_SCALAR_F32, T, T),
        *dw = run_gemm(&run, plain, &gdw, KILN_SCALAR_F32, T, T);
  check_gemm(&run, "dX", dx, &gdx, KILN_SCALAR_F32, 1e-5);
  check_gemm(&run, "dW", dw, &gdw, KILN_SCALAR_F32, 1e-5);
  /* db = column sums of dy, read at a row stride of N + 3 with 1000s in the gap. */
  size_t ld = sN + 3;
  float *dyp = kiln_bert_alloc(sM * ld, 4), *db = kiln_bert_alloc(sN + KILN_BERT_TAIL, 4),
        *ref_db = kiln_bert_alloc(sN, 4);
  for (size_t m = 0; m < sM; m++)
    for (size_t n = 0; n < ld; n++) dyp[m * ld + n] = n < sN ? dy[m * sN + n] : 1000.0f;
  void *ddy = kiln_bert_input(&run, dyp, sM * ld * 4),
       *ddb = kiln_bert_output(&run, (sN + KILN_BERT_TAIL) * 4);
  int32_t ld32 = (int32_t)ld;
  int32_t one_part = 1;
  void *cargs[] = {&ddy, &ddb, &M, &N, &ld32, &one_part};
  kiln_bert_launch(&run, colsum, kiln_bert_cdiv(sN, 32), 1, cargs);
  kiln_bert_fetch(&run, db, ddb, (sN + KILN_BERT_TAIL) * 4);
  kiln_bert_check_untouched(&run, "db", db, 4, sN + KILN_BERT_TAIL, 1, sN, sN + KILN_BERT_TAIL);
  for (size_t n = 0; n < sN; n++) {
    double s = 0.0;
    for (size_t m = 0; m < sM; m++) s += dy[m * sN + n];
    ref_db[n] = (float)s;
  }
  kiln_bert_check_close(&run, "db", db, ref_db, sN, 1.0, 1e-5);
  /* Finite differences at 6 elements each of X, W and b. */
  const float h = 1e-2f;
  float fd[18], an[18];
  float *vals[3] = {x, w, b};
  const float *grads[3] = {dx, dw, db};
  size_t lens[3] = {sM * sK, sK * sN, sN};
  for (int t = 0; t < 3 && run.ok; t++)
    for (int e = 0; e < 6; e++) {
      size_t i = (size_t)(kiln_ref_rng_next(&rng) % lens[t]);
      float keep = vals[t][i];
      double l[2];
      for (int s = 0; s < 2; s++) {
        vals[t][i] = s == 0 ? keep + h : keep - h;
        Gemm g = {x, w, b, NULL, M, N, K, K, 1, N, 1, 1, sM * sK, sK * sN, 1};
        float *y = run_gemm(&run, fwd, &g, KILN_SCALAR_F32, T, T);
        l[s] = loss(y, dy, sM * sN);
        free(y);
      }
      fd[t * 6 + e] = (float)((l[0] - l[1]) / ((double)(keep + h) - (double)(keep - h)));
      an[t * 6 + e] = grads[t][i];
      vals[t][i] = keep;
    }
  kiln_bert_check_close(&run, "grads vs fd", an, fd, 18, 1.0, 1e-3);
  free(x), free(w), free(b), free(dy), free(dx), free(dw), free(dyp), free(db), free(ref_db);
  return kiln_bert_end(&run);
}

bool kiln_bert_test_gemm(const KilnBertDevice *dev) {
  bool ok = true;
  /* Epilogues: none, bias, bias + GELU, bias + residual, GELU's backward. */
  ok &= run_epilogues(dev, 77, 64, 96, 32, 32, 16, KILN_SCALAR_F32, 0, 4,
                      7000); /* ragged M, exact N, K */
  ok &= run_epilogues(dev, 37, 100, 40, 16, 16, 16, KILN_SCALAR_F16, 2, 4,
                      7001); /* ragged on all axes */
  ok &= run_epilogues(dev, 45, 72, 56, 16, 32, 16, KILN_SCALAR_BF16, 1, 2, 7005); /* ragged M, K */
  ok &= run_epilogues(dev, 45, 72, 56, 16, 32, 16, KILN_SCALAR_BF16, 4, 4, 7009);
  ok &= run_epilogues(dev, 1, 1, 1, 16, 16, 16, KILN_SCALAR_F32, 3, 3, 7002); /* degenerate */
  ok &= run_backward(dev, 74, 96, 37, 7100);
  /* The grouped program order: 5 block rows in groups of 3 (the last group has 2), 7 block
   * columns; a program mapped to the wrong tile leaves sentinels or wrong values. */
  ok &= run_grouped(dev, 77, 100, 40, 16, 16, 16, 3, KILN_SCALAR_F32, 1, 1, 7007);
  /* The trainer's three layouts with their unit strides promised (the other row strides a
   * multiple of 8): ragged M, N and K */
  ok &= run_layout(dev, LAYOUT_FWD, false, KILN_SCALAR_F32, 77, 96, 72, 32, 64, 32, 4, 2, 1, 7030);
  ok &= run_layout(dev, LAYOUT_DW, false, KILN_SCALAR_F32, 72, 64, 90, 64, 32, 16, 4, 2, 0, 7031);
  ok &= run_layout(dev, LAYOUT_DX, false, KILN_SCALAR_F32, 45, 40, 56, 16, 16, 16, 4, 2, 3, 7032);
  ok &= run_layout(dev, LAYOUT_FWD, false, KILN_SCALAR_F16, 50, 70, 40, 16, 32, 16, 4, 2, 2, 7033);
  ok &= run_layout(dev, LAYOUT_DW, false, KILN_SCALAR_BF16, 40, 48, 37, 32, 16, 16, 4, 2, 1, 7034);
  /* GELU's backward in the dX product, as the trainer calls it (dH = dY W2 * gelu'(u + b)) */
  ok &= run_layout(dev, LAYOUT_DX, false, KILN_SCALAR_F16, 45, 72, 40, 16, 32, 16, 4, 2, 4, 7035);
  ok &= run_layout(dev, LAYOUT_DX, false, KILN_SCALAR_F32, 50, 40, 56, 32, 32, 16, 4, 2, 4, 7036);
  /* Split K (the trainer's weight gradients, EPI 0): ragged parts (K 200 in 13 steps of 16: 5,
   * 5, 3), a part past K (K 40 in 3 steps, 4 parts: the last is zeros), the forward layout */
  ok &= run_layout_split(dev, LAYOUT_DW, false, KILN_SCALAR_F32, 72, 64, 200, 32, 32, 16, 4, 2, 0,
                         3, 7041);
  ok &= run_layout_split(dev, LAYOUT_DW, false, KILN_SCALAR_F16, 40, 48, 40, 16, 32, 16, 4, 2, 0, 4,
                         7042);
  ok &= run_layout_split(dev, LAYOUT_FWD, false, KILN_SCALAR_BF16, 45, 40, 96, 16, 16, 32, 4, 2, 0,
                         2, 7043);
  /* On emu also tiles the tuner picks on a GPU (each layout is its own lowering there; the cpu
   * target computes every tile the same way). */
  if (kiln_bert_on_emu(dev)) {
    ok &= run_epilogues(dev, 77, 96, 72, 64, 64, 32, KILN_SCALAR_F16, 1, 1,
                        7003); /* ragged M and K */
    ok &= run_epilogues(dev, 50, 130, 64, 32, 128, 64, KILN_SCALAR_F32, 0, 0, 7004); /* ragged N */
    ok &= run_epilogues(dev, 40, 64, 48, 32, 64, 16, KILN_SCALAR_BF16, 3, 3,
                        7006); /* bf16 mma, residual */
    /* GROUP_M = 8 of the cuda presets on tensor cores: 3 block rows, fewer than a group */
    ok &= run_grouped(dev, 150, 96, 64, 64, 32, 32, 8, KILN_SCALAR_F16, 0, 0, 7008);
    /* wgmma in each layout, both 16-bit types, every epilogue: ragged M, N and K, BK 16 to
     * 64, one and two warpgroups, two m64 blocks a warpgroup (128 rows on 4 warps) */
    ok &= run_layout(dev, LAYOUT_FWD, true, KILN_SCALAR_F16, 100, 192, 64, 64, 128, 32, 4, 3, 1,
                     7010);
    ok &=
        run_layout(dev, LAYOUT_DX, true, KILN_SCALAR_BF16, 96, 136, 48, 64, 64, 16, 4, 3, 2, 7011);
    ok &= run_layout(dev, LAYOUT_DW, true, KILN_SCALAR_F16, 128, 120, 72, 128, 128, 64, 8, 3, 3,
                     7012);
    ok &= run_layout(dev, LAYOUT_FWD, true, KILN_SCALAR_BF16, 130, 256, 40, 128, 256, 32, 4, 3, 0,
                     7013);
    ok &= run_layout(dev, LAYOUT_DW, true, KILN_SCALAR_BF16, 72, 64, 96, 64, 64, 32, 4, 3, 1, 7014);
    /* 4 stages: one wgmma group left in flight across K steps (wait_group 1, the copies two
     * iterations ahead), the last retired after the loop; K of 1, 2, 3 and 9 steps */
    ok &= run_layout(dev, LAYOUT_FWD, true, KILN_SCALAR_F16, 70, 128, 288, 64, 128, 32, 4, 4, 1,
                     7015);
    ok &= run_layout(dev, LAYOUT_DX, true, KILN_SCALAR_F16, 64, 64, 16, 64, 64, 16, 4, 4, 0, 7016);
    ok &= run_layout(dev, LAYOUT_DW, true, KILN_SCALAR_BF16, 136, 104, 256, 128, 128, 32, 8, 4, 3,
                     7017);
    ok &=
        run_layout(dev, LAYOUT_FWD, true, KILN_SCALAR_BF16, 64, 64, 96, 64, 64, 32, 4, 5, 2, 7018);
    /* the wgmma_deep2 preset's tile (128x128x64 on 8 warps, 3 stages: each K step's group
     * retired before the next) in the forward and dX layouts; a ragged last K step */
    ok &= run_layout(dev, LAYOUT_FWD, true, KILN_SCALAR_F16, 136, 128, 200, 128, 128, 64, 8, 3, 1,
                     7023);
    ok &= run_layout(dev, LAYOUT_DX, true, KILN_SCALAR_BF16, 128, 136, 136, 128, 128, 64, 8, 3, 0,
                     7024);
    /* the wgmma_half preset's tile (64x128x64 on one warpgroup, 4 stages: a group in flight)
     * in the dW and dX layouts; ragged M, N and K */
    ok &= run_layout(dev, LAYOUT_DW, true, KILN_SCALAR_F16, 136, 200, 264, 64, 128, 64, 4, 4, 0,
                     7025);
    ok &= run_layout(dev, LAYOUT_DX, true, KILN_SCALAR_BF16, 100, 128, 136, 64, 128, 64, 4, 4, 3,
                     7026);
    /* the wgmma_wide preset's tile (128x256x64 on two warpgroups, m64n256k16, 4 stages: a
     * group in flight) in the forward layout with the GELU epilogue and the dW layout; ragged
     * M, N and K (a partial block in each direction, a partial last K step) */
    ok &= run_layout(dev, LAYOUT_FWD, true, KILN_SCALAR_F16, 136, 264, 200, 128, 256, 64, 8, 4, 2,
                     7027);
    ok &= run_layout(dev, LAYOUT_DW, true, KILN_SCALAR_BF16, 136, 264, 136, 128, 256, 64, 8, 4, 1,
                     7028);
    /* GELU's backward (EPI 4) in the dX layout at the cuda default's tile (the preset gelu_bwd:
     * 128x128x32 on 8 warps, 3 stages) on mma.sync, and at the tiles of half (64x128x32 on 4
     * warps, 4 stages) and wgmma_deep (128x128x64 on 8 warps) on wgmma, both 16-bit types; the
     * epilogue's operand tile is read in the accumulator's fragments (layout_pass.c) */
    ok &= run_layout(dev, LAYOUT_DX, false, KILN_SCALAR_BF16, 100, 136, 72, 128, 128, 32, 8, 3, 4,
                     7037);
    ok &=
        run_layout(dev, LAYOUT_DX, true, KILN_SCALAR_F16, 72, 136, 96, 64, 128, 32, 4, 4, 4, 7038);
    ok &= run_layout(dev, LAYOUT_DX, true, KILN_SCALAR_BF16, 136, 128, 64, 128, 128, 64, 8, 4, 4,
                     7039);
    /* Split K at the GPU tiles: the cuda default on mma.sync (128x128x32, 3 stages),
     * wgmma_deep (128x128x64 on two warpgroups, 4 stages: a group in flight) and wgmma_half
     * (64x128x64), each part's K loop starting past 0 (the pipeline's prologue at k_lo) */
    ok &= run_layout_split(dev, LAYOUT_DW, false, KILN_SCALAR_BF16, 136, 128, 300, 128, 128, 32, 8,
                           3, 0, 3, 7044);
    ok &= run_layout_split(dev, LAYOUT_DW, true, KILN_SCALAR_F16, 128, 136, 520, 128, 128, 64, 8, 4,
                           0, 4, 7045);
    ok &= run_layout_split(dev, LAYOUT_DW, true, KILN_SCALAR_BF16, 72, 128, 264, 64, 128, 64, 4, 4,
                           0, 2, 7046);
    /* tf32 (f32 with TF32 = 1): the forward on wgmma .tf32 at the wgmma_tf32 preset's tile
     * (128x128x32 on 8 warps; 128-byte rows of f32) and at BK 16 with a group in flight; dX
     * and dW on mma.sync with wgmma asked for */
    ok &= run_layout(dev, LAYOUT_FWD, true, KILN_SCALAR_F32, 150, 192, 96, 128, 128, 32, 8, 3, 1,
                     7019);
    ok &= run_layout(dev, LAYOUT_FWD, true, KILN_SCALAR_F32, 70, 128, 136, 64, 128, 16, 4, 4, 2,
                     7020);
    ok &= run_layout(dev, LAYOUT_DX, true, KILN_SCALAR_F32, 96, 136, 48, 64, 64, 32, 4, 3, 0, 7021);
    ok &= run_layout(dev, LAYOUT_DX, true, KILN_SCALAR_F32, 70, 64, 40, 64, 64, 32, 4, 3, 4, 7040);
    ok &= run_layout(dev, LAYOUT_DW, true, KILN_SCALAR_F32, 72, 64, 96, 64, 64, 32, 4, 3, 3, 7022);
  }
  return ok;
}
