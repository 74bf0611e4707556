/* plan.c — the kernel calls of a step, recorded by a tap on the model's launch table
 * (bert_plan.h).
 *
 * How it works. Tap is a KilnBertOps whose every entry formats the call it was given as the
 * `kiln tune --args` spec of the kernel it stands for (the names are the kernels' parameters, as
 * in runtime/bert/CMakeLists.txt's specs; the sizes cover what the call's strides reach), adds
 * it to the plan unless an equal call is there (then it is counted), and forwards to the real
 * table when there is one. A plan-only model (kiln_bert_model_create_plan) has no real table:
 * driving it through forward, backward and step lists a step's calls without a device, at any
 * size, in a blink. Specs are plain numbers, so two calls of the same shape are equal strings.
 *
 * Each entry also names the library file and the -D pins of the generated library it launches
 * (the table of model_ops.inc picks them the same way: gemm by epilogue, attention by head
 * dimension and dropout, AdamW by the half weights it writes). */
#include "bert_plan.h"
#include "bert_internal.h"
#include "bert_profile.h"
#include "bert_model_ops.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct KilnBertPlan {
  const char *T; /* the activations' element type in specs: f32, f16, bf16 */
  KilnBertPrecision prec;
  KilnBertCall *calls;
  int n, cap;
  int out_of_memory;       /* a call could not be stored: the plan is incomplete */
  const KilnBertOps *real; /* the table forwarded to (attached to a real model), or NULL */
  KilnBertLibs real_libs;
  FILE *log;
  int last;                 /* the index of the call put() saw last: the launch being made */
  double flops, bytes;      /* the work of the launch put() records next (cost()) */
  KilnBertProfile *profile; /* times every forwarded launch (kiln_bert_plan_profile), or NULL */
};

/* The short shape of a call for the profile's table: "M=128 N=384 K=128 nt" (a gemm's operands
 * read row-major n or transposed t), "rows=64 cols=128". */
__attribute__((format(printf, 3, 4))) static const char *dims(char *buf, size_t cap,
                                                              const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  return buf;
}

/* The element size of T. */
static double esize(const KilnBertPlan *p) { return kiln_bert_precision_half(p->prec) ? 2.0 : 4.0; }

/* The work of the launch about to be put(): its floating-point operations (only the matrix
 * products of gemm and attention count; 0 for the memory-bound kernels) and the bytes it must
 * move at the least (each tensor it reads or writes once, at its exact size, an atomic
 * read-modify-write twice). What the profile's TFLOP/s and GB/s are made of. */
static void cost(KilnBertPlan *p, double flops, double bytes) {
  p->flops = flops;
  p->bytes = bytes;
}

/* Adds a call (or counts it again) and makes it the last one (p->last, the launch being made).
 * Returns KILN_RT_OK, or OUT_OF_MEMORY. */
static KilnRtStatus put(KilnBertPlan *p, const char *file, const char *pins, const char *kernel,
                        const char *shape, const char *fmt, ...) {
  KilnBertCall c;
  memset(&c, 0, sizeof c);
  snprintf(c.file, sizeof c.file, "%s", file);
  snprintf(c.pins, sizeof c.pins, "%s", pins);
  snprintf(c.kernel, sizeof c.kernel, "%s", kernel);
  snprintf(c.shape, sizeof c.shape, "%s", shape);
  c.flops = p->flops;
  c.bytes = p->bytes;
  p->flops = p->bytes = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c.spec, sizeof c.spec, fmt, ap);
  va_end(ap);
  if (p->log) fprintf(p->log, "%s|%s|%s|%s\n", c.file, c.pins, c.kernel, c.spec);
  for (int i = 0; i < p->n; i++) {
    KilnBertCall *o = &p->calls[i];
    if (!strcmp(o->file, c.file) && !strcmp(o->pins, c.pins) && !strcmp(o->kernel, c.kernel) &&
        !strcmp(o->spec, c.spec)) {
      o->count++;
      p->last = i;
      return KILN_RT_OK;
    }
  }
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 64;
    KilnBertCall *grown = realloc(p->calls, (size_t)cap * sizeof *grown);
    if (!grown) {
      p->out_of_memory = 1;
      return KILN_RT_ERROR_OUT_OF_MEMORY;
    }
    p->calls = grown;
    p->cap = cap;
  }
  c.count = 1;
  p->last = p->n;
  p->calls[p->n++] = c;
  return KILN_RT_OK;
}

#define PLAN(l) ((KilnBertPlan *)(l)->tap)
/* Records, then forwards to the real table's entry `fn` when attached: timed as the plan's
 * last call when a profile is attached (each entry is one launch). */
#define FORWARD(l, st, fn, ...)                                                                    \
  do {                                                                                             \
    KilnBertPlan *fp_ = PLAN(l);                                                                   \
    if ((st) != KILN_RT_OK || !fp_->real) return (st);                                             \
    if (!fp_->profile) return fp_->real->fn(&fp_->real_libs, __VA_ARGS__);                         \
    KilnRtStatus pst_ = kiln_bert_profile_launch_begin(fp_->profile);                              \
    if (pst_ != KILN_RT_OK) return pst_;                                                           \
    KilnRtStatus lst_ = fp_->real->fn(&fp_->real_libs, __VA_ARGS__);                               \
    pst_ = kiln_bert_profile_launch_end(fp_->profile, fp_->last);                                  \
    return lst_ != KILN_RT_OK ? lst_ : pst_;                                                       \
  } while (0)

/* The pins of the libraries that take only the element type. */
static const char *pins_t(const KilnBertPlan *p, char *buf, size_t cap, const char *more) {
  snprintf(buf, cap, "T=%s%s%s", p->T, more ? " " : "", more ? more : "");
  return buf;
}

/* The elements a strided 2-D operand reaches: (rows - 1) rs + (cols - 1) cs + 1. */
static long long reach(int rows, int cols, int rs, int cs) {
  return (long long)(rows - 1) * rs + (long long)(cols - 1) * cs + 1;
}

static KilnRtStatus tap_create(KilnRtDevice *dev, KilnBertLibs *libs) {
  (void)dev;
  (void)libs;
  return KILN_RT_OK;
}

static void tap_destroy(KilnBertLibs *libs) {
  KilnBertPlan *p = PLAN(libs);
  if (p && p->real) p->real->destroy(&p->real_libs);
}

static int tap_ln_bwd_covers(int rows, int cols) {
  /* the real precision tables answer the same; the plan-only model never asks (it was checked
   * when its shape was) */
  return kiln_bert_ops_f32.ln_bwd_covers(rows, cols);
}

static KilnRtStatus tap_gemm(const KilnBertLibs *l, int epi, void *a, void *b, void *c, void *bias,
                             void *res, int M, int N, int K, int sam, int sak, int sbk, int sbn,
                             int ldc, int splits) {
  KilnBertPlan *p = PLAN(l);
  /* a split product writes a C per part (the partial sums) */
  cost(p, 2.0 * M * N * K,
       esize(p) * ((double)M * K + (double)K * N + (double)M * N * (epi >= 3 ? 2 : splits) +
                   (epi ? N : 0)));
  char pins[64];
  char epis[16];
  /* the TF32 table's gemm libraries are built with -D TF32=1: the pin names them */
  snprintf(epis, sizeof epis, "EPI=%d%s", epi, p->prec == KILN_BERT_FP32_TF32 ? " TF32=1" : "");
  const char *T = p->T;
  long long nc = reach(M, N, ldc, 1), nparts = nc + (long long)(splits - 1) * M * ldc;
  char sh[48];
  KilnRtStatus st =
      put(p, "gemm.kiln", pins_t(p, pins, sizeof pins, epis), "gemm",
          dims(sh, sizeof sh, "M=%d N=%d K=%d %c%c%s%.0d", M, N, K, sak == 1 ? 'n' : 't',
               sbn == 1 ? 'n' : 't', splits > 1 ? " split " : "", splits > 1 ? splits : 0),
          "kernel=gemm; M=%d; N=%d; K=%d; sam=%d; sak=%d; sbk=%d; sbn=%d; scm=%d; "
          "scn=1; splits=%d; a: %s[%lld]; b: %s[%lld]; c: %s[%lld]; bias: %s[N]; "
          "res: %s[%lld]; grid=cdiv(M, BM), cdiv(N, BN), splits",
          M, N, K, sam, sak, sbk, sbn, ldc, splits, T, reach(M, K, sam, sak), T,
          reach(K, N, sbk, sbn), T, nparts, T, T, nc);
  FORWARD(l, st, gemm, epi, a, b, c, bias, res, M, N, K, sam, sak, sbk, sbn, ldc, splits);
}

static KilnRtStatus tap_colsum(const KilnBertLibs *l, void *x, float *out, int rows, int cols,
                               int ld, int parts) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, esize(p) * rows * cols + 4.0 * parts * cols);
  char pins[64];
  /* colsum_f32 has no EPI or TF32: it is in every gemm library, the same kernel */
  char sh[48];
  KilnRtStatus st = put(p, "gemm.kiln", pins_t(p, pins, sizeof pins, NULL), "colsum_f32",
                        dims(sh, sizeof sh, "rows=%d cols=%d parts=%d", rows, cols, parts),
                        "kernel=colsum_f32; rows=%d; cols=%d; ld=%d; parts=%d; x: %s[%lld]; "
                        "out: f32[parts*cols]; grid=cdiv(cols, BLOCK_C), parts",
                        rows, cols, ld, parts, p->T, reach(rows, cols, ld, 1));
  FORWARD(l, st, colsum, x, out, rows, cols, ld, parts);
}

static KilnRtStatus tap_ln_fwd(const KilnBertLibs *l, void *x, void *res, void *gamma, void *beta,
                               void *s, void *y, float *mean, float *rstd, int rows, int cols,
                               float eps, float p_, int32_t seed, int32_t offset) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, esize(p) * (4.0 * rows * cols + 2.0 * cols) + 8.0 * rows);
  char pins[64];
  const char *T = p->T;
  char sh[48];
  KilnRtStatus st = put(
      p, "layernorm.kiln", pins_t(p, pins, sizeof pins, NULL), "layernorm_fwd",
      dims(sh, sizeof sh, "rows=%d cols=%d", rows, cols),
      "kernel=layernorm_fwd; cols=%d; eps=%g; p=%g; seed=12345; offset=0; x: %s[%d*cols]; "
      "res: %s[%d*cols]; gamma: %s[cols]; beta: %s[cols]; s_out: %s[%d*cols]; "
      "y: %s[%d*cols]; mean: f32[%d]; rstd: f32[%d]; grid=%d",
      cols, (double)eps, (double)p_, T, rows, T, rows, T, T, T, rows, T, rows, rows, rows, rows);
  FORWARD(l, st, ln_fwd, x, res, gamma, beta, s, y, mean, rstd, rows, cols, eps, p_, seed, offset);
}

static KilnRtStatus tap_ln_bwd(const KilnBertLibs *l, void *s, void *dy, void *gamma, float *mean,
                               float *rstd, void *dx, void *dx_drop, float *part_g, float *part_b,
                               int rows, int cols, int parts, float p_, int32_t seed,
                               int32_t offset) {
  KilnBertPlan *p = PLAN(l);
  /* with dropout it writes the gradient before it too */
  cost(p, 0, esize(p) * (p_ > 0 ? 4.0 : 3.0) * rows * cols + 8.0 * rows + 8.0 * parts * cols);
  char pins[64];
  const char *T = p->T;
  char sh[48];
  KilnRtStatus st = put(p, "layernorm.kiln", pins_t(p, pins, sizeof pins, NULL), "layernorm_bwd",
                        dims(sh, sizeof sh, "rows=%d cols=%d", rows, cols),
                        "kernel=layernorm_bwd; rows=%d; cols=%d; p=%g; seed=12345; offset=0; "
                        "s: %s[rows*cols]; dy: %s[rows*cols]; gamma: %s[cols]; mean: f32[rows]; "
                        "rstd: f32[rows]; dx: %s[rows*cols]; dx_drop: %s[rows*cols]; "
                        "dgamma_part: f32[%d*cols]; dbeta_part: f32[%d*cols]; grid=%d",
                        rows, cols, (double)p_, T, T, T, T, T, parts, parts, parts);
  FORWARD(l, st, ln_bwd, s, dy, gamma, mean, rstd, dx, dx_drop, part_g, part_b, rows, cols, parts,
          p_, seed, offset);
}

static KilnRtStatus tap_sum_rows(const KilnBertLibs *l, float *part, float *out, int parts,
                                 int cols) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, 4.0 * parts * cols + 4.0 * cols);
  /* f32 rows whatever T is: the kernel has no pins */
  char sh[48];
  KilnRtStatus st = put(p, "layernorm.kiln", "", "layernorm_bwd_reduce",
                        dims(sh, sizeof sh, "parts=%d cols=%d", parts, cols),
                        "kernel=layernorm_bwd_reduce; parts=%d; cols=%d; part: f32[parts*cols]; "
                        "out: f32[cols]; grid=cdiv(cols, BLOCK)",
                        parts, cols);
  FORWARD(l, st, sum_rows, part, out, parts, cols);
}

static KilnRtStatus tap_emb_fwd(const KilnBertLibs *l, int32_t *ids, int32_t *types, void *word,
                                void *pos, void *ttype, void *out, int ntok, int seq, int hidden) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, esize(p) * 3.0 * ntok * hidden + 8.0 * ntok);
  char pins[64];
  const char *T = p->T;
  char sh[48];
  KilnRtStatus st = put(p, "embedding.kiln", pins_t(p, pins, sizeof pins, NULL), "embedding_fwd",
                        dims(sh, sizeof sh, "ntok=%d hidden=%d", ntok, hidden),
                        "kernel=embedding_fwd; ntok=%d; seq=%d; hidden=%d; ids: i32[ntok]=0; "
                        "types: i32[ntok]=0; word: %s[hidden]; pos: %s[seq*hidden]; "
                        "ttype: %s[hidden]; out: %s[ntok*hidden]; "
                        "grid=cdiv(ntok, BLOCK_T), cdiv(hidden, BLOCK_H)",
                        ntok, seq, hidden, T, T, T, T);
  FORWARD(l, st, emb_fwd, ids, types, word, pos, ttype, out, ntok, seq, hidden);
}

/* The embedding backward's three kernels: each reads its part of dout once and writes its
 * table's rows (the word table's, at most one per token) once, with no atomics. */
static KilnRtStatus tap_emb_bwd_word(const KilnBertLibs *l, int32_t *ids, int32_t *order,
                                     int32_t *starts, void *dout, float *dword, int ntok,
                                     int hidden) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, esize(p) * ntok * hidden + 4.0 * ntok * hidden + 16.0 * ntok);
  char pins[64];
  char sh[48];
  KilnRtStatus st =
      put(p, "embedding.kiln", pins_t(p, pins, sizeof pins, NULL), "embedding_bwd_word",
          dims(sh, sizeof sh, "ntok=%d hidden=%d", ntok, hidden),
          "kernel=embedding_bwd_word; ntok=%d; hidden=%d; ids: i32[ntok]=0; "
          "order: i32[ntok]=0; starts: i32[ntok+1]=0; dout: %s[ntok*hidden]; "
          "dword: f32[hidden]; grid=ntok, cdiv(hidden, BLOCK_H)",
          ntok, hidden, p->T);
  FORWARD(l, st, emb_bwd_word, ids, order, starts, dout, dword, ntok, hidden);
}

static KilnRtStatus tap_emb_bwd_pos(const KilnBertLibs *l, void *dout, float *dpos, int batch,
                                    int seq, int hidden) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, esize(p) * batch * seq * hidden + 4.0 * seq * hidden);
  char pins[64];
  char sh[48];
  KilnRtStatus st =
      put(p, "embedding.kiln", pins_t(p, pins, sizeof pins, NULL), "embedding_bwd_pos",
          dims(sh, sizeof sh, "batch=%d seq=%d hidden=%d", batch, seq, hidden),
          "kernel=embedding_bwd_pos; batch=%d; seq=%d; hidden=%d; "
          "dout: %s[batch*seq*hidden]; dpos: f32[seq*hidden]; "
          "grid=cdiv(seq, BLOCK_P), cdiv(hidden, BLOCK_H)",
          batch, seq, hidden, p->T);
  FORWARD(l, st, emb_bwd_pos, dout, dpos, batch, seq, hidden);
}

static KilnRtStatus tap_emb_bwd_type(const KilnBertLibs *l, int32_t *types, void *dout, float *part,
                                     int ntok, int hidden, int ntypes, int parts) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, (esize(p) * hidden + 4.0) * ntok * ntypes + 4.0 * parts * ntypes * hidden);
  char pins[64];
  char sh[64];
  KilnRtStatus st =
      put(p, "embedding.kiln", pins_t(p, pins, sizeof pins, NULL), "embedding_bwd_type",
          dims(sh, sizeof sh, "ntok=%d hidden=%d ntypes=%d", ntok, hidden, ntypes),
          "kernel=embedding_bwd_type; ntok=%d; hidden=%d; ntypes=%d; parts=%d; "
          "types: i32[ntok]=0; dout: %s[ntok*hidden]; "
          "part: f32[parts*ntypes*hidden]; grid=parts, cdiv(hidden, BLOCK_H)",
          ntok, hidden, ntypes, parts, p->T);
  FORWARD(l, st, emb_bwd_type, types, dout, part, ntok, hidden, ntypes, parts);
}

static KilnRtStatus tap_xent_fwd(const KilnBertLibs *l, void *x, int32_t *labels, float *loss,
                                 float *lse, int classes, int rows) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, esize(p) * rows * classes + 12.0 * rows);
  char pins[64];
  char sh[48];
  KilnRtStatus st = put(p, "xent.kiln", pins_t(p, pins, sizeof pins, NULL), "xent_fwd",
                        dims(sh, sizeof sh, "rows=%d classes=%d", rows, classes),
                        "kernel=xent_fwd; classes=%d; ignore_index=-100; x: %s[%d*classes]; "
                        "labels: i32[%d]=0; loss: f32[%d]; lse_out: f32[%d]; grid=%d",
                        classes, p->T, rows, rows, rows, rows, rows);
  FORWARD(l, st, xent_fwd, x, labels, loss, lse, classes, rows);
}

static KilnRtStatus tap_xent_bwd(const KilnBertLibs *l, void *x, int32_t *labels, float *lse,
                                 float *dloss, void *dx, int classes, int rows) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, 2.0 * esize(p) * rows * classes + 12.0 * rows);
  char pins[64];
  char sh[48];
  KilnRtStatus st = put(p, "xent.kiln", pins_t(p, pins, sizeof pins, NULL), "xent_bwd",
                        dims(sh, sizeof sh, "rows=%d classes=%d", rows, classes),
                        "kernel=xent_bwd; classes=%d; ignore_index=-100; x: %s[%d*classes]; "
                        "labels: i32[%d]=0; lse: f32[%d]; dloss: f32[%d]; dx: %s[%d*classes]; "
                        "grid=%d",
                        classes, p->T, rows, rows, rows, rows, p->T, rows, rows);
  FORWARD(l, st, xent_bwd, x, labels, lse, dloss, dx, classes, rows);
}

static KilnRtStatus tap_gelu_fwd(const KilnBertLibs *l, void *x, void *bias, void *y, int rows,
                                 int cols) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, esize(p) * (2.0 * rows * cols + cols));
  char pins[64];
  const char *T = p->T;
  char sh[48];
  KilnRtStatus st = put(p, "gelu.kiln", pins_t(p, pins, sizeof pins, "TANH=0"), "bias_gelu_fwd",
                        dims(sh, sizeof sh, "rows=%d cols=%d", rows, cols),
                        "kernel=bias_gelu_fwd; rows=%d; cols=%d; x: %s[rows*cols]; bias: %s[cols]; "
                        "y: %s[rows*cols]; grid=cdiv(rows, BLOCK_R), cdiv(cols, BLOCK_C)",
                        rows, cols, T, T, T);
  FORWARD(l, st, gelu_fwd, x, bias, y, rows, cols);
}

static KilnRtStatus tap_tanh_fwd(const KilnBertLibs *l, void *x, void *y, int n) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, 2.0 * esize(p) * n);
  char pins[64];
  char sh[48];
  KilnRtStatus st =
      put(p, "tanh.kiln", pins_t(p, pins, sizeof pins, NULL), "tanh_fwd",
          dims(sh, sizeof sh, "n=%d", n),
          "kernel=tanh_fwd; n=%d; x: %s[n]; y: %s[n]; grid=cdiv(n, BLOCK)", n, p->T, p->T);
  FORWARD(l, st, tanh_fwd, x, y, n);
}

static KilnRtStatus tap_tanh_bwd(const KilnBertLibs *l, void *y, void *dy, void *dx, int n) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, 3.0 * esize(p) * n);
  char pins[64];
  const char *T = p->T;
  char sh[48];
  KilnRtStatus st = put(p, "tanh.kiln", pins_t(p, pins, sizeof pins, NULL), "tanh_bwd",
                        dims(sh, sizeof sh, "n=%d", n),
                        "kernel=tanh_bwd; n=%d; y: %s[n]; dy: %s[n]; dx: %s[n]; "
                        "grid=cdiv(n, BLOCK)",
                        n, T, T, T);
  FORWARD(l, st, tanh_bwd, y, dy, dx, n);
}

/* The attention library's pins: head dimension, and DROPOUT=1 for the dropout kernels. */
static const char *attn_pins(const KilnBertPlan *p, const KilnBertAttn *a, int drop, char *buf,
                             size_t cap) {
  snprintf(buf, cap, "T=%s D=%d%s", p->T, a->D, drop ? " DROPOUT=1" : "");
  return buf;
}

/* The spec of attn_fwd, attn_bwd_dkdv or attn_bwd_dq (they share the scalar arguments; `tail`
 * is the kernel's own buffers), as CMakeLists.txt's s_af, s_akv and s_aq at a's shapes. */
/* The dropout seed in the specs below is 12345, not 1: the model's seeds are hashes (model.c),
 * never 1, and a spec's seed=1 would be compiled into the tuned variants as a constant, which
 * every real call breaks (it would run the generic fallback). 12345 promises nothing. */
static KilnRtStatus put_attn(KilnBertPlan *p, const KilnBertAttn *a, int drop, const char *kernel,
                             const char *tail, const char *grid_block) {
  char pins[64];
  const char *T = p->T;
  int rows = a->bh / a->heads;
  long long qkv = (long long)rows * a->sb, o = (long long)rows * a->osb;
  long long stats = (long long)a->bh * a->S;
  char bufs[256];
  /* tail names the kernel's extra buffers: the d-buffers are Q-sized, dout O-sized */
  if (!strcmp(tail, "o"))
    snprintf(bufs, sizeof bufs, "o: %s[%lld]", T, o);
  else if (!strcmp(tail, "dkdv"))
    snprintf(bufs, sizeof bufs, "delta: f32[%lld]; dout: %s[%lld]; dk: %s[%lld]; dv: %s[%lld]",
             stats, T, o, T, qkv, T, qkv);
  else
    snprintf(bufs, sizeof bufs, "delta: f32[%lld]; dout: %s[%lld]; dq: %s[%lld]", stats, T, o, T,
             qkv);
  char sh[48];
  return put(p, "attention.kiln", attn_pins(p, a, drop, pins, sizeof pins), kernel,
             dims(sh, sizeof sh, "bh=%d S=%d D=%d", a->bh, a->S, a->D),
             "kernel=%s; S=%d; H=%d; sb=%d; sh=%d; ss=%d; osb=%d; osh=%d; oss=%d; scale=%g; "
             "p_drop=%g; seed=12345; offset=0; q: %s[%lld]; k: %s[%lld]; v: %s[%lld]; "
             "lse: f32[%lld]; kv_len: i32[%d]=%d; %s; grid=cdiv(S, %s), %d",
             kernel, a->S, a->heads, a->sb, a->sh, a->ss, a->osb, a->osh, a->oss, (double)a->scale,
             drop ? (double)a->p_drop : 0.0, T, qkv, T, qkv, T, qkv, stats, rows, a->S, bufs,
             grid_block, a->bh);
}

/* An attention kernel's cost: `products` S x S x D matrix products per head, `tensors` [S, D]
 * tensors of T and `stats` f32 vectors of S (lse, delta) per head read or written. */
static void attn_cost(KilnBertPlan *p, const KilnBertAttn *a, int products, int tensors,
                      int stats) {
  double heads = a->bh, S = a->S;
  cost(p, 2.0 * products * heads * S * S * a->D,
       heads * S * (esize(p) * tensors * a->D + 4.0 * stats));
}

static KilnRtStatus tap_attn_fwd(const KilnBertLibs *l, const KilnBertAttn *a) {
  attn_cost(PLAN(l), a, 2, 4, 1);
  KilnRtStatus st = put_attn(PLAN(l), a, a->p_drop > 0, "attn_fwd", "o", "BM");
  FORWARD(l, st, attn_fwd, a);
}

static KilnRtStatus tap_attn_bwd_delta(const KilnBertLibs *l, const KilnBertAttn *a) {
  KilnBertPlan *p = PLAN(l);
  attn_cost(p, a, 0, 2, 1);
  char pins[64];
  const char *T = p->T;
  long long o = (long long)(a->bh / a->heads) * a->osb;
  /* delta always comes from the plain library (model_ops.inc) */
  char sh[48];
  KilnRtStatus st =
      put(p, "attention.kiln", attn_pins(p, a, 0, pins, sizeof pins), "attn_bwd_delta",
          dims(sh, sizeof sh, "bh=%d S=%d D=%d", a->bh, a->S, a->D),
          "kernel=attn_bwd_delta; S=%d; H=%d; osb=%d; osh=%d; oss=%d; o: %s[%lld]; "
          "dout: %s[%lld]; delta: f32[%lld]; grid=cdiv(S, BM), %d",
          a->S, a->heads, a->osb, a->osh, a->oss, T, o, T, o, (long long)a->bh * a->S, a->bh);
  FORWARD(l, st, attn_bwd_delta, a);
}

static KilnRtStatus tap_attn_bwd_dkdv(const KilnBertLibs *l, const KilnBertAttn *a) {
  attn_cost(PLAN(l), a, 4, 6, 2);
  KilnRtStatus st = put_attn(PLAN(l), a, a->p_drop > 0, "attn_bwd_dkdv", "dkdv", "BN");
  FORWARD(l, st, attn_bwd_dkdv, a);
}

static KilnRtStatus tap_attn_bwd_dq(const KilnBertLibs *l, const KilnBertAttn *a) {
  attn_cost(PLAN(l), a, 3, 5, 2);
  KilnRtStatus st = put_attn(PLAN(l), a, a->p_drop > 0, "attn_bwd_dq", "dq", "BM");
  FORWARD(l, st, attn_bwd_dq, a);
}

static KilnRtStatus tap_drop_fwd(const KilnBertLibs *l, void *x, void *y, int n, float p_,
                                 int32_t seed, int32_t offset) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, 2.0 * esize(p) * n);
  char pins[64];
  char sh[48];
  KilnRtStatus st = put(p, "dropout.kiln", pins_t(p, pins, sizeof pins, NULL), "dropout_fwd",
                        dims(sh, sizeof sh, "n=%d", n),
                        "kernel=dropout_fwd; n=%d; p=%g; seed=12345; offset=0; x: %s[n]; y: %s[n]; "
                        "grid=cdiv(n, BLOCK)",
                        n, (double)p_, p->T, p->T);
  FORWARD(l, st, drop_fwd, x, y, n, p_, seed, offset);
}

static KilnRtStatus tap_drop_bwd(const KilnBertLibs *l, void *dy, void *dx, int n, float p_,
                                 int32_t seed, int32_t offset) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, 2.0 * esize(p) * n);
  char pins[64];
  char sh[48];
  KilnRtStatus st =
      put(p, "dropout.kiln", pins_t(p, pins, sizeof pins, NULL), "dropout_bwd",
          dims(sh, sizeof sh, "n=%d", n),
          "kernel=dropout_bwd; n=%d; p=%g; seed=12345; offset=0; dy: %s[n]; dx: %s[n]; "
          "grid=cdiv(n, BLOCK)",
          n, (double)p_, p->T, p->T);
  FORWARD(l, st, drop_bwd, dy, dx, n, p_, seed, offset);
}

static KilnRtStatus tap_to_f32(const KilnBertLibs *l, void *x, float *y, int n) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, (esize(p) + 4.0) * n);
  char pins[64];
  char sh[48];
  KilnRtStatus st =
      put(p, "cast.kiln", pins_t(p, pins, sizeof pins, NULL), "cast_to_f32",
          dims(sh, sizeof sh, "n=%d", n),
          "kernel=cast_to_f32; n=%d; x: %s[n]; y: f32[n]; grid=cdiv(n, BLOCK)", n, p->T);
  FORWARD(l, st, to_f32, x, y, n);
}

static KilnRtStatus tap_from_f32(const KilnBertLibs *l, float *x, void *y, int n) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, (esize(p) + 4.0) * n);
  char pins[64];
  char sh[48];
  KilnRtStatus st =
      put(p, "cast.kiln", pins_t(p, pins, sizeof pins, NULL), "cast_from_f32",
          dims(sh, sizeof sh, "n=%d", n),
          "kernel=cast_from_f32; n=%d; x: f32[n]; y: %s[n]; grid=cdiv(n, BLOCK)", n, p->T);
  FORWARD(l, st, from_f32, x, y, n);
}

/* The optimizer's pins, kernel by kernel (a pin goes only to a kernel that has that const
 * parameter, or `kiln tune --kernel` refuses it): adamw_step writes half weights of type T in
 * fp16 and bf16 (CMakeLists.txt's kb_adamw_T; the fp32 library is built with TW=f16 and writes
 * nothing); grad_sumsq checks the gradients for overflow in fp16 (CHECK=1, kb_adamw_f16's pin);
 * grad_sumsq_reduce has none. */
static const char *adamw_pins(const KilnBertPlan *p, char *buf, size_t cap) {
  int half = kiln_bert_precision_half(p->prec);
  snprintf(buf, cap, "WRITE_F16=%d TW=%s", half, half ? p->T : "f16");
  return buf;
}

static KilnRtStatus tap_grad_sumsq(const KilnBertLibs *l, float *grad, float *part,
                                   int32_t *found_inf, int n, int parts) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, 4.0 * n + 4.0 * parts);
  char sh[48];
  KilnRtStatus st = put(p, "adamw.kiln", p->prec == KILN_BERT_FP16 ? "CHECK=1" : "CHECK=0",
                        "grad_sumsq", dims(sh, sizeof sh, "n=%d", n),
                        "kernel=grad_sumsq; n=%d; parts=%d; grad: f32[n]; part: f32[parts]; "
                        "found_inf: i32[1]=0; grid=parts",
                        n, parts);
  FORWARD(l, st, grad_sumsq, grad, part, found_inf, n, parts);
}

static KilnRtStatus tap_grad_sumsq_reduce(const KilnBertLibs *l, float *part, float *sumsq,
                                          int parts) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, 4.0 * parts + 4.0);
  char sh[48];
  KilnRtStatus st =
      put(p, "adamw.kiln", "", "grad_sumsq_reduce", dims(sh, sizeof sh, "parts=%d", parts),
          "kernel=grad_sumsq_reduce; parts=%d; part: f32[parts]; sumsq: f32[1]; "
          "grid=1",
          parts);
  FORWARD(l, st, grad_sumsq_reduce, part, sumsq, parts);
}

static KilnRtStatus tap_grad_accumulate(const KilnBertLibs *l, float *acc, float *grad, int n) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, 12.0 * n);
  char sh[48];
  KilnRtStatus st = put(p, "adamw.kiln", "", "grad_accumulate", dims(sh, sizeof sh, "n=%d", n),
                        "kernel=grad_accumulate; n=%d; acc: f32[n]; grad: f32[n]; "
                        "grid=cdiv(n, BLOCK)",
                        n);
  FORWARD(l, st, grad_accumulate, acc, grad, n);
}

static KilnRtStatus tap_adamw_step(const KilnBertLibs *l, float *p_, float *grad, float *m,
                                   float *v, void *w, int32_t *found_inf, float *sumsq, int n,
                                   float lr, float beta1, float beta2, float eps,
                                   float weight_decay, int step, float inv_scale, float max_norm) {
  KilnBertPlan *p = PLAN(l);
  cost(p, 0, (28.0 + (kiln_bert_precision_half(p->prec) ? esize(p) : 0)) * n);
  char pins[64];
  int half = kiln_bert_precision_half(p->prec);
  /* the values of lr and the rest do not change the work; n and the half weights do */
  char sh[48];
  KilnRtStatus st = put(p, "adamw.kiln", adamw_pins(p, pins, sizeof pins), "adamw_step",
                        dims(sh, sizeof sh, "n=%d", n),
                        "kernel=adamw_step; n=%d; lr=1e-4; beta1=0.9; beta2=0.999; eps=1e-8; "
                        "weight_decay=0.01; step=3; inv_scale=1.0; max_norm=1.0; p: f32[n]; "
                        "grad: f32[n]; m: f32[n]; v: f32[n]=0; p16: %s[%s]; found_inf: i32[1]=0; "
                        "sumsq: f32[1]=1; grid=cdiv(n, BLOCK)",
                        n, half ? p->T : "f16", half ? "n" : "1");
  FORWARD(l, st, adamw_step, p_, grad, m, v, w, found_inf, sumsq, n, lr, beta1, beta2, eps,
          weight_decay, step, inv_scale, max_norm);
}

/* The tap for one precision: the same table but its name, size and half weights. */
static KilnBertOps tap_table(const KilnBertOps *like) {
  return (KilnBertOps){
      .name = like->name,
      .esize = like->esize,
      .half_weights = like->half_weights,
      .create = tap_create,
      .destroy = tap_destroy,
      .ln_bwd_covers = tap_ln_bwd_covers,
      .gemm = tap_gemm,
      .colsum = tap_colsum,
      .ln_fwd = tap_ln_fwd,
      .ln_bwd = tap_ln_bwd,
      .sum_rows = tap_sum_rows,
      .emb_fwd = tap_emb_fwd,
      .emb_bwd_word = tap_emb_bwd_word,
      .emb_bwd_pos = tap_emb_bwd_pos,
      .emb_bwd_type = tap_emb_bwd_type,
      .xent_fwd = tap_xent_fwd,
      .xent_bwd = tap_xent_bwd,
      .gelu_fwd = tap_gelu_fwd,
      .tanh_fwd = tap_tanh_fwd,
      .tanh_bwd = tap_tanh_bwd,
      .attn_fwd = tap_attn_fwd,
      .attn_bwd_delta = tap_attn_bwd_delta,
      .attn_bwd_dkdv = tap_attn_bwd_dkdv,
      .attn_bwd_dq = tap_attn_bwd_dq,
      .drop_fwd = tap_drop_fwd,
      .drop_bwd = tap_drop_bwd,
      .to_f32 = like->half_weights ? tap_to_f32 : NULL,
      .from_f32 = like->half_weights ? tap_from_f32 : NULL,
      .grad_sumsq = tap_grad_sumsq,
      .grad_sumsq_reduce = tap_grad_sumsq_reduce,
      .grad_accumulate = tap_grad_accumulate,
      .adamw_step = tap_adamw_step,
  };
}

static const KilnBertOps *precision_table(KilnBertPrecision prec) {
  return prec == KILN_BERT_FP16        ? &kiln_bert_ops_f16
         : prec == KILN_BERT_BF16      ? &kiln_bert_ops_bf16
         : prec == KILN_BERT_FP32_TF32 ? &kiln_bert_ops_tf32
                                       : &kiln_bert_ops_f32;
}

/* One tap table per precision, filled on first use (they only differ in the size fields). */
static const KilnBertOps *tap_for(KilnBertPrecision prec) {
  static KilnBertOps taps[4];
  static int made[4];
  int i = prec == KILN_BERT_FP16        ? 1
          : prec == KILN_BERT_BF16      ? 2
          : prec == KILN_BERT_FP32_TF32 ? 3
                                        : 0;
  if (!made[i]) {
    taps[i] = tap_table(precision_table(prec));
    made[i] = 1;
  }
  return &taps[i];
}

KilnBertPlan *kiln_bert_plan_create(KilnBertPrecision prec) {
  KilnBertPlan *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->prec = prec;
  p->T = precision_table(prec)->name;
  return p;
}

void kiln_bert_plan_destroy(KilnBertPlan *p) {
  if (!p) return;
  free(p->calls);
  free(p);
}

const KilnBertCall *kiln_bert_plan_calls(const KilnBertPlan *p, int *n) {
  *n = p->n;
  return p->calls;
}

void kiln_bert_plan_attach(KilnBertPlan *p, KilnBertModel *m, FILE *log) {
  p->log = log;
  kiln_bert_model_tap(m, tap_for(p->prec), p, &p->real, &p->real_libs);
}

void kiln_bert_plan_profile(KilnBertPlan *p, KilnBertProfile *pf) { p->profile = pf; }

/* The lengths a step runs at: seq_len, or under dynamic padding every bucket up to it. */
static int step_lengths(int seq_len, KilnBertPadding padding, int *lens, int cap) {
  if (padding != KILN_BERT_PAD_DYNAMIC) {
    lens[0] = seq_len;
    return 1;
  }
  int n = 0;
  for (size_t longest = 2; n < cap; longest++) {
    int b = (int)kiln_bert_pad_bucket(longest, (size_t)seq_len);
    if (!n || b != lens[n - 1]) lens[n++] = b;
    if (b >= seq_len) break;
  }
  return n;
}

/* One training step and one eval step of the plan-only model at rows x cols. */
static KilnBertStatus plan_one_length(KilnBertModel *m, int rows, int cols, double dropout,
                                      const KilnBertOptim *opt) {
  size_t cells = (size_t)rows * (size_t)cols;
  int32_t *ids = calloc(cells, sizeof *ids), *lens = calloc((size_t)rows, sizeof *lens);
  int32_t *labels = calloc((size_t)rows, sizeof *labels);
  KilnBertStatus st = KILN_BERT_OK;
  if (!ids || !lens || !labels)
    st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "plan: out of memory");
  for (int r = 0; lens && r < rows; r++) lens[r] = cols;
  if (st == KILN_BERT_OK) st = kiln_bert_model_set_dropout(m, dropout, 1, 1);
  if (st == KILN_BERT_OK)
    st = kiln_bert_model_forward(m, ids, lens, labels, rows, cols, NULL, NULL);
  if (st == KILN_BERT_OK) st = kiln_bert_model_backward(m);
  if (st == KILN_BERT_OK) st = kiln_bert_model_step(m, opt, 1e-4, 1, NULL);
  /* eval: forward only, no dropout, logits read back (the cast of fp16 and bf16) */
  float *logits = NULL;
  if (st == KILN_BERT_OK) st = kiln_bert_model_set_dropout(m, 0, 1, 1);
  if (st == KILN_BERT_OK && !(logits = calloc((size_t)rows * 64, sizeof *logits)))
    st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "plan: out of memory");
  if (st == KILN_BERT_OK)
    st = kiln_bert_model_forward(m, ids, lens, labels, rows, cols, NULL, logits);
  free(logits);
  free(ids);
  free(lens);
  free(labels);
  return st;
}

KilnBertStatus kiln_bert_plan_step(KilnBertPlan *p, const KilnBertConfig *cfg, int batch,
                                   int seq_len, KilnBertPadding padding, double dropout,
                                   const KilnBertOptim *opt) {
  if (cfg->num_labels > 64)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "plan: more than 64 labels");
  KilnBertModel *m = NULL;
  KilnBertStatus st =
      kiln_bert_model_create_plan(cfg, p->prec, batch, seq_len, tap_for(p->prec), p, &m);
  if (st != KILN_BERT_OK) return st;
  int lens[64];
  int nlens = step_lengths(seq_len, padding, lens, 64);
  for (int i = 0; i < nlens && st == KILN_BERT_OK; i++)
    st = plan_one_length(m, batch, lens[i], dropout, opt);
  kiln_bert_model_destroy(m);
  if (st == KILN_BERT_OK && p->out_of_memory)
    st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "plan: out of memory for the call list");
  return st;
}
