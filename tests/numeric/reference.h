/* reference.h — plain C references for the numeric tests of Kiln kernels.
 *
 * Everything here is written from the definitions (IEEE 754 binary16, Random123's Philox4x32-10,
 * the math of each kernel) without any Kiln code, so that a kernel and its reference can only
 * agree by both being right. The references compute in f32 or wider; each function says which,
 * because the test tolerances in docs/kernels-tests.md are derived from that choice.
 */
#ifndef KILN_NUMERIC_REFERENCE_H
#define KILN_NUMERIC_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- binary16 ---------------------------------------------------------------------------- */

/* f32 -> f16 bits, round to nearest, ties to even; overflow gives inf, NaN stays a quiet NaN. */
uint16_t kiln_ref_f32_to_f16(float f);
/* f16 bits -> f32 (exact: every binary16 value is a binary32 value). */
float kiln_ref_f16_to_f32(uint16_t h);
/* The f16 value nearest to f, as an f32: what storing f into an f16 buffer keeps. */
float kiln_ref_round_f16(float f);
/* f32 -> bfloat16 bits (f32's top 16 bits), round to nearest, ties to even; NaN stays NaN. */
uint16_t kiln_ref_f32_to_bf16(float f);
/* bfloat16 bits -> f32 (exact). */
float kiln_ref_bf16_to_f32(uint16_t h);
/* The bf16 value nearest to f, as an f32. */
float kiln_ref_round_bf16(float f);

/* ---- Philox4x32-10 ----------------------------------------------------------------------- */

/* The Philox4x32 block function with 10 rounds (Salmon et al., SC'11; Random123's philox4x32-10):
 * out = philox(ctr, key). */
void kiln_ref_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* Kiln's randint(seed, offset) (docs/internals.md): word (offset & 3) of the Philox4x32-10 block
 * with key (seed, 0) and counter (offset >> 2, 0, 0, 0), the i32 seed and offset taken by their
 * bit patterns (the shift logical: offset -1 is word 3 of counter 0x3FFFFFFF). Four consecutive
 * offsets from a multiple of 4 are the four words of one block. */
uint32_t kiln_ref_rand_bits(int32_t seed, int32_t offset);
/* Kiln's rand(seed, offset): that word w mapped to (float)(w >> 8) * 2^-24, in [0, 1). */
float kiln_ref_rand(int32_t seed, int32_t offset);
/* The attention dropout's 8-bit threshold of p (kernels-bert/attention.kiln, drop_threshold):
 * round(256 p), halves up, computed in f32 as the kernels do, at most 255; an element is kept
 * with probability 1 - t / 256. */
int32_t kiln_ref_attn_drop_threshold(float p);
/* The factor the attention kernels scale a kept element by (keep_scale): 256 / (256 - t) in f32,
 * the inverse of the keep probability. */
float kiln_ref_attn_keep_scale(float p);
/* Whether the attention kernels keep P[i, j] (query i, key j) of program row bh (b H + h) for
 * sequence length S, dropout p, Philox (seed, offset): byte 2 ((i >> 3) & 1) + ((j >> 3) & 1)
 * (from the low end) of word 2 (i & 1) + (j & 1) of the block at counter (offset >> 2) +
 * (bh QB + q(i)) QB + q(j), q(x) = 4 (x >> 4) + ((x >> 1) & 3), QB = 4 ceil(S / 16), compared
 * with the threshold: the 16 elements of a block are queries {i, i + 1, i + 8, i + 9} by keys
 * {j, j + 1, j + 8, j + 9} (i = 16 k + 2 a, j = 16 l + 2 c, a, c < 4). In u32 arithmetic,
 * wrapping as the kernels' i32 does. */
bool kiln_ref_attn_keep(int32_t seed, int32_t offset, uint32_t bh, uint32_t S, uint32_t i,
                        uint32_t j, float p);

/* ---- test data --------------------------------------------------------------------------- */

/* A small seeded generator (splitmix64) for test inputs: the same seed gives the same data on
 * every machine, so a failure can be reproduced. */
typedef struct KilnRefRng {
  uint64_t state;
} KilnRefRng;

void kiln_ref_rng_init(KilnRefRng *rng, uint64_t seed);
uint64_t kiln_ref_rng_next(KilnRefRng *rng);
/* Uniform in [lo, hi), with 24 random bits. */
float kiln_ref_rng_uniform(KilnRefRng *rng, float lo, float hi);

/* ---- comparison -------------------------------------------------------------------------- */

/* The largest normalized error max_i |got[i] - ref[i]| / max(|ref[i]|, floor) over n values.
 * `floor` sets the magnitude below which the error is measured absolutely (values near zero
 * come out of cancellations whose relative error says nothing). A NaN or infinity in got where
 * ref is finite counts as an infinite error. *worst (if not NULL) receives the index of the
 * largest error (0 when n == 0). */
double kiln_ref_max_error(const float *got, const float *ref, size_t n, double floor,
                          size_t *worst);

/* ---- kernel references ------------------------------------------------------------------- */

/* out[i] = x[i] + y[i] in f32 (exactly what any correct kernel computes). */
void kiln_ref_vector_add(const float *x, const float *y, float *out, size_t n);

/* y[i] = gelu(x[i] + bias[i % cols]) with the exact (erf) GELU, inputs f16, math in f32 with
 * libm's erff, result NOT rounded to f16 (the comparison tolerance covers that rounding). */
void kiln_ref_bias_gelu(const uint16_t *x, const uint16_t *bias, float *y, size_t n, size_t cols);

/* Row softmax of a rows x cols f32 matrix with row strides (in elements); exponentials in f32
 * (expf) after subtracting the row maximum, sums in double. */
void kiln_ref_softmax_rows(const float *x, size_t x_stride, float *y, size_t y_stride, size_t rows,
                           size_t cols);

/* LayerNorm forward per row: mean, rstd = 1/sqrt(var + eps) (biased variance), y = (x - mean)
 * * rstd * gamma + beta. Computed in double, two passes, stored as f32. */
void kiln_ref_layernorm_fwd(const float *x, size_t x_stride, const float *gamma, const float *beta,
                            float *y, size_t y_stride, float *mean, float *rstd, size_t rows,
                            size_t cols, float eps);

/* LayerNorm backward per row from the forward's mean and rstd (as f32, what the kernel reads):
 * xhat = (x - mean) rstd, g = gamma dy, dx = rstd (g - xhat mean(xhat g) - mean(g)), in double;
 * dgamma = sum over rows of dy xhat, dbeta = sum of dy. x and dy (and dx) have rows `stride`
 * apart. *_bound (if not NULL) receive the error an f32 sum of those rows in any order may
 * have: (rows + 4) 2^-24 sum over rows |term| (each addition rounds once, relative to at most
 * the sum of the magnitudes; the 4 covers the f32 term itself). */
void kiln_ref_layernorm_bwd(const float *x, const float *dy, size_t stride, const float *gamma,
                            const float *mean, const float *rstd, float *dx, float *dgamma,
                            float *dbeta, float *dgamma_bound, float *dbeta_bound, size_t rows,
                            size_t cols);

/* The rows of every LayerNorm test (numeric layernorm_fwd, the BERT layernorm family) that make
 * the eps term visible: with a variance near 1, eps = 1e-5 moves rstd by 5e-6 relative, under
 * any f32 tolerance, so a wrong eps would pass. Row 1 has a variance of about eps / 2 (doubling
 * eps changes rstd by 23%), row 2 (of three or more) a variance of exactly 0 (rstd = 1/sqrt(eps)).
 * Every other row is KILN_REF_LN_ROW_NORMAL. */
typedef enum KilnRefLnRow {
  KILN_REF_LN_ROW_NORMAL,
  KILN_REF_LN_ROW_TINY,
  KILN_REF_LN_ROW_CONSTANT
} KilnRefLnRow;
KilnRefLnRow kiln_ref_layernorm_row_kind(size_t row, size_t rows);
/* Fills x[0..cols) for a TINY or CONSTANT row (NORMAL rows are the test's own): TINY values are
 * uniform in [-a, a) plus an offset in [-a, a), a = sqrt(3 eps / (2 parts)), so the sum of
 * `parts` such inputs (x + res: 2) has a variance of about eps / 2; their mean is near 0, so the f32 error
 * of the mean (relative to the values) stays far below what rstd ~ 1/sqrt(2 eps) amplifies.
 * CONSTANT values are `value` (pick one whose sums are exact in f32, e.g. a few bits). */
void kiln_ref_layernorm_fill_row(float *x, size_t cols, KilnRefLnRow kind, KilnRefRng *rng,
                                 float eps, int parts, float value);
/* The biased variance of x[0..cols), in double, two passes. */
double kiln_ref_variance(const float *x, size_t cols);

/* C = A B with f16 inputs (as bits, any strides in elements) and an f32 accumulator summed in k
 * order; the f32 result is written to c (M x N, dense row-major), not rounded to f16. */
void kiln_ref_matmul_f16(const uint16_t *a, size_t sam, size_t sak, const uint16_t *b, size_t sbk,
                         size_t sbn, float *c, size_t M, size_t N, size_t K);

/* The int_semantics kernel's six planes of n values each (out[p * n + i]) for a = x[i], b = y[i]:
 * a / b and a % b as C's (truncating; b != 0 and not INT32_MIN / -1), a >> 3 arithmetic, a * 65537
 * and cdiv(a, 7) = (a + 6) / 7 with the product and the sum wrapping in 32 bits, (int8_t)a. */
void kiln_ref_int_semantics(const int32_t *x, const int32_t *y, int32_t *out, size_t n);

/* C = A B with f32 inputs (dense row-major), products and sums in double, stored as f32. */
void kiln_ref_matmul_f32(const float *a, const float *b, float *c, size_t M, size_t N, size_t K);

/* C = A B with i8 inputs (any strides in elements), products and sums exact in 64 bits and
 * stored as i32 (c: M x N, dense row-major); the callers keep K * 128 * 128 below 2^31, so the
 * kernels' i32 sums cannot wrap and must equal this bit for bit. */
void kiln_ref_matmul_i8(const int8_t *a, size_t sam, size_t sak, const int8_t *b, size_t sbk,
                        size_t sbn, int32_t *c, size_t M, size_t N, size_t K);

/* Index of the largest element of each row, the first one on ties (NaN-free inputs). */
void kiln_ref_argmax_rows(const float *x, size_t stride, int32_t *out, size_t rows, size_t cols);

/* Causal attention per head of [BH, S, D] f16 inputs: o[h][i] = sum over j <= i of
 * softmax_j(scale q_i . k_j) v_j, in double from the f16 values, stored as f32 (not rounded to
 * f16: the tolerance covers that and the f16 rounding of P). */
void kiln_ref_flash_attention(const uint16_t *q, const uint16_t *k, const uint16_t *v, float *o,
                              size_t bh, size_t S, size_t D, float scale);

/* out[c * out_stride + r] = x[r * x_stride + c] for r < rows, c < cols. */
/* RoPE (dsl/examples/rope.kiln) in double: pair i of row r turns by the angle
 * ((r / heads) % seq) 10000^(-2i/d); x and out have row stride `stride`, d values a row. */
void kiln_ref_rope(const float *x, float *out, size_t rows, size_t seq, size_t heads, size_t stride,
                   size_t d);

void kiln_ref_transpose(const float *x, size_t x_stride, float *out, size_t out_stride, size_t rows,
                        size_t cols);

/* r[i] = rand(seed, i); y[i] = r[i] > p ? x[i] / (1 - p) : 0, in f32. */
void kiln_ref_dropout(const float *x, float *r, float *y, size_t n, float p, int32_t seed);

/* Per program of `block` lanes over n elements (the last one ragged), the 8 results of the
 * small_int_sum kernel, in 64-bit arithmetic (no sum here reaches 2^31): counts[8 * p + ...] =
 * the number of non-zero flags; the sums of bytes and of shorts; the number of lanes below n;
 * whether any flag is set; whether every one is; the index of the first set flag (0 when none);
 * the largest byte. bits[i] = 7 where flags[i] is set, else 0 (an i1 widened to 1 three ways). */
void kiln_ref_small_int_sum(const int8_t *flags, const int8_t *bytes, const int16_t *shorts,
                            int32_t *counts, int32_t *bits, size_t n, size_t block);

/* The accum_loop kernel per row, in the kernel's order and precision (f32, i32 wrapping): the
 * mean of the row, the sum of squares less that mean, the product of (1 + v/8), and the hash of
 * the ten compound assignments; hashes[2r + 1] = cols (the scalar loop counter). */
void kiln_ref_accum_loop(const float *x, float *sums, int32_t *hashes, size_t rows, size_t cols);

/* The pow_countdown kernel per row: outf = the Horner sum of the row taken backwards
 * (h = h / 2 + x[c]), v^2 + v^3, v^-2 and 1025.25 for v = the row's first element; outi = the
 * i1 orderings of (v > 0, v > 1) as bits, the count-down sum over every third column from the
 * last, (i8)(16 v) ^ -128 widened, and (r % 7)^3 - 8. */
void kiln_ref_pow_countdown(const float *x, float *outf, int32_t *outi, size_t rows, size_t cols);

/* The builtins_basic kernel per row r of program p = r / block: outf[9r..] = fmaf(a, b, c), the
 * rounding error of a * b times 2^30, powf(|a| + 0.25, c), 3.5, a times the sum of the row's
 * first four columns (those below cols), and over the program's block x 4 tile t (0 past rows
 * and cols) max(t), min(t), max(max t, 0.5) + min(min t, -0.5); outi[6r..] = the sum of
 * (int)(16 t) over the tile, max(rows, cols) * 1000 + min(p, 3), 3r + cols, the count of
 * positive elements of t plus 1000 times the program's rows below `rows`, |sum| + 10000 *
 * max(block, 64), the index of the row's first largest column; outf[9r + 8] = the sum of the
 * row's four columns less their maximum, in order.  a, b = the row's first two values, c = y's
 * first.  Integer sums in 64 bits. */
void kiln_ref_builtins_basic(const float *x, const float *y, float *outf, int32_t *outi,
                             size_t rows, size_t cols, size_t block);

/* The cas_lock kernel over rows x cols i32 values x with BLOCK >= cols: sums[c] = the column
 * sums (64-bit, no wrap at these sizes); olds[r * block + c] = x[r][c] for c < cols, else 0;
 * cells (a copy of x on entry) = c * 7 in the even columns, x elsewhere.  The lock ends at 0, the
 * owner count and the ticket counter at rows, and the tickets are 0 .. rows-1 in some order. */
void kiln_ref_cas_lock(const int32_t *x, int32_t *sums, int32_t *olds, int32_t *cells, size_t rows,
                       size_t cols, size_t block);

/* The scan_flip kernel: over each program's br x bc tile t of x (rows x cols; 0 past rows and
 * cols), planes of rows x bc: outf = the running sum along each row, the row reversed, the
 * running product of t * 0.125 + 1 along the row (f32, left to right), the running sum down the
 * program's rows; outi = the running count of t > 0 along the row, the running product of
 * (t > 0) + 1 (wrapping in 32 bits), the running sum of (int)(16 t) down the program's rows read
 * bottom up; outf's fifth plane: t plus its left neighbour in the odd columns; outi's fourth:
 * (int)(16 t) of the program's tile reversed in both dims. */
void kiln_ref_scan_flip(const float *x, float *outf, int32_t *outi, size_t rows, size_t cols,
                        size_t br, size_t bc);
/* The scan_axes and scan_line kernels' scans, exactly: over each line of length n inside a
 * program's tile (lines of `line` elements `stride` apart starting at each start[k], k < nlines),
 * sum[i] = x's running sum and prod[i] = y's running product in doubles (exact for the tests'
 * quarters and powers of two), and the same in integers of `bits` bits (wrapping, in C's unsigned arithmetic, sign-extended):
 * isum, iprod from xi, yi.  Elements past the matrix (a partial tile) are not lines' members. */
void kiln_ref_scan_line(const double *x, const double *y, const int64_t *xi, const int64_t *yi,
                        size_t start, size_t stride, size_t len, int bits, double *sum,
                        double *prod, int64_t *isum, int64_t *iprod);

/* How far scan_flip's f32 outputs (outf's five planes) may lie from kiln_ref_scan_flip's: a
 * running sum or product of i + 1 terms rounds i times in any grouping (a tree of depth <= i),
 * so each order is within gamma_i = i u / (1 - i u) (u = 2^-24) of the exact value times the
 * sum of the terms' magnitudes (sums) or the exact product's magnitude (products); two orders
 * within twice that of each other.  The flips and the pair sums (one addition) have bound 0. */
void kiln_ref_scan_flip_bound(const float *x, float *bound, size_t rows, size_t cols, size_t br,
                              size_t bc);

/* The scan_combine kernel: over each program's br x bc tile t of x (rows x cols; 0 past rows and
 * cols), with q = floor(16 t) / 16 and z = (int)(4 t) / 3: planes of rows x bc: outf = the
 * running max of t along the row, the running sum of q along the row, the running max of t down
 * the program's rows; outi = the last nonzero z so far (0 before the first) along the row and
 * down the program's rows, then y = z y + (int)(16 t) from y = 0 along the row and the running
 * product of z (both wrapping).  Per row r: outr[3r] = the sum of the row's t (rounded once,
 * from a double sum) with bound[3r] its error bound for a tree of log2(bc) levels of f32
 * additions, outr[3r + 1] and outr[3r + 2] = the row's max (bound FLT_MIN: exact); outri[3r] =
 * the wrapping i32 sum of (int)(t * 2^28), outri[3r + 1] = the wrapping i8 sum of z,
 * sign-extended, outri[3r + 2] = the column of the row's first max. */
void kiln_ref_scan_combine(const float *x, float *outf, int32_t *outi, float *outr, float *bound,
                           int32_t *outri, size_t rows, size_t cols, size_t br, size_t bc);

/* The scan_reverse kernel: over each program's br x bc tile t of x (rows x cols; 0 past rows and
 * cols), with q = floor(16 t) / 16, z = (int)(4 t) / 3: planes of rows x bc: outf = the sums of q
 * from each element to the row's end, from each row to the program's last row, the max of t from
 * each element to the row's end, the sums of q from each element to the tile's end (the tile as
 * one row-major line); outi = the first nonzero z at or after each element of the row
 * (0 when none), the product of z (as i8) to the row's end, then y = z y + (int)(16 t) from y = 0
 * taken from the row's end back to the element, and the product of z (both wrapping).  outr[r] =
 * row r's max.  Per program p, over its tile in row-major order: outp[5p] = outp[5p + 2] =
 * outp[5p + 3] = outp[5p + 4] = the sum of q, outp[5p + 1] = the max of t; outpi[2p] = the last
 * nonzero z (0 when none),
 * outpi[2p + 1] = the row-major index of the first max of floor(2 t) / 2.  Every value is exact
 * (sums of sixteenths, maxima, wrapping integers): the kernel's order does not matter. */
void kiln_ref_scan_reverse(const float *x, float *outf, int32_t *outi, float *outr, float *outp,
                           int32_t *outpi, size_t rows, size_t cols, size_t br, size_t bc);

/* The argmax_all kernel: per program p, over its br x bc tile t of x (rows x cols; 0 past rows and
 * cols), out[8p ..] = the row-major index of the first maximum of t, of its first minimum, of the
 * first maximum of (int)t, of the first t <= 0, the first maximum again, the sum of (int)t, and
 * the first maximum and first minimum again (the kernel's reshaped views). */
void kiln_ref_argmax_all(const float *x, int32_t *out, size_t rows, size_t cols, size_t br,
                         size_t bc);

/* The sort_rows kernel: over each program's br x bc tile t of x (rows x cols; 0 past rows and
 * cols), planes of rows x bc: outf = each row of t ascending, descending; outi = each half-row of
 * (int)(4 t) ascending on its own, the row of (t > 0) ascending. */
void kiln_ref_sort_rows(const float *x, float *outf, int32_t *outi, size_t rows, size_t cols,
                        size_t bc);

/* The sort_axes kernel: over each program's br x bc tile t of x (rows x cols; 0 past rows and
 * cols), planes of rows x bc: outf = each column of t ascending (axis 0, t's rows past `rows`
 * included in the sort), descending, then each line along the middle axis of t viewed as
 * [br, bc / q, q] ascending; outi = the same lines of (int)(4 t) descending. */
void kiln_ref_sort_axes(const float *x, float *outf, int32_t *outi, size_t rows, size_t cols,
                        size_t br, size_t bc, size_t q);

/* The trans3d kernel over progs blocks of a x b x c values of x: outf plane k (progs a b c values)
 * holds each block permuted by the k-th of [0 1 2], [1 2 0], [2 0 1], [0 2 1], [1 0 2], [2 1 0]
 * (result axis i is the block's axis perm[i]), row-major; plane 6 the block's first a b values
 * as an [a, b] tile transposed; outi the block's (int8)(4 x) permuted [2 1 0]. */
void kiln_ref_trans3d(const float *x, float *outf, int32_t *outi, size_t progs, size_t a, size_t b,
                      size_t c);

/* The join_split kernel over progs blocks (tests/numeric/kernels/join_split.kiln says what each
 * plane holds): outf 8 planes and outi 2 planes of progs 2 r c values; of plane 5 only the first
 * 6 c + 2 values of each block are written (the rest of it is left as it was in outf). */
void kiln_ref_join_split(const float *x, const float *y, float *outf, int32_t *outi, size_t progs,
                         size_t r, size_t c);

/* The gather_hist kernel (tests/numeric/kernels/gather_hist.kiln says what it stores): outf
 * 5 r c + c values, outi 6 r c + 2 bins; lab holds n_lab labels, the first n of them masked in. */
void kiln_ref_gather_hist(const float *x, const int32_t *idx, const int32_t *lab, float *outf,
                          int32_t *outi, size_t r, size_t c, size_t bins, size_t n_lab, size_t n);

/* The grouped program order of an si x sj grid in groups of sg rows (swizzle2d): cell k of the
 * row-major order goes to (i2[k], j2[k]), enumerated group by group, column by column, row by row
 * within a column (the last group has the rows left). */
void kiln_ref_swizzle2d(size_t si, size_t sj, size_t sg, int32_t *i2, int32_t *j2);

/* The int_helpers kernel over n elements in progs blocks (its file says what each plane holds):
 * outi 4 n + 2 progs values, outu 2 n, outf 2 n. */
void kiln_ref_int_helpers(const int32_t *a, const int32_t *b, const float *f, size_t n,
                          size_t progs, size_t si, size_t sj, size_t sg, int32_t *outi,
                          uint32_t *outu, float *outf);

/* The rand_normal kernel at offsets o_i = first + i (wrapping in i32): bits[i] = randint(seed,
 * o_i) (kiln_ref_rand_bits) as i32; normal[i] = sqrt(-2 ln u1) cos(2 pi u2) in double for
 * u1 = 1 - rand(seed, o_i) and u2 = rand(seed ^ 0x6A09E667, o_i). */
void kiln_ref_rand_normal(int32_t *bits, float *normal, size_t n, int32_t seed, int32_t first);

/* The early_exit kernel per row: out[2r..2r+1] and counts[4r..4r+3] start at -1; a row with a
 * value above 3.5 records its column in counts[4r + 2] and stops there; other rows get the sum
 * of their non-negative values up to the first one that passes `limit` (f32, in order), the sum
 * of the 16 lanes of t += v * j (in double), the number of values summed, the column of the
 * break (-1 when none) and sum over a < 4 of min(a + 1, cols). */
void kiln_ref_early_exit(const float *x, float *out, int32_t *counts, size_t rows, size_t cols,
                         float limit);

/* The while_loops kernel per row: out[2r] = the sum s of the row's non-negative values, in order,
 * taken while columns are left and s <= limit, out[2r + 1] = the sum of the 16 lanes of
 * t += v * j over the same values (in double); counts[5r..5r+4] = the columns read by that loop,
 * the Collatz steps from (int)(|x[r][0]| * 100) + 1 down to 1, 3 * (the columns searched for a
 * value above 3.0, the one found included), the column found (-1 when none) and cols + 5. */
void kiln_ref_while_loops(const float *x, float *out, int32_t *counts, size_t rows, size_t cols,
                          float limit);

/* The range_steps kernel per (lo, hi, step) triple p of params: out[6p..6p+5] = the iterations
 * of range(lo, hi, step) (none for step 0), the sum of its indices (wrapping i32), its first and
 * last index (-999 when none), the sum over its indices i and lanes l < 8 of (l + i) & 7, and
 * min(iterations, 3). */
void kiln_ref_range_steps(const int32_t *params, int32_t *out, size_t n);

/* The multi_return kernel per row: outf[4r..4r+3] = the row's maximum, minimum, maximum again and
 * sum (in double); outi[3r..3r+2] = the column of the first maximum, (7r + 3) / 5, (7r + 3) % 5. */
void kiln_ref_multi_return(const float *x, float *outf, int32_t *outi, size_t rows, size_t cols);

/* The inline_fns kernel per row (cols <= its BLOCK): outf = the row dot product of x and y (f32,
 * in order), max over the row of poly(v) = 2 v^3 + bounded(v, -1, 1) (and 0, the masked lanes),
 * poly(x[0]), bounded(x[0], -1, 0.5); outi = the first column above 1.5 (-1 when none), the count
 * of positive values, r^3 and 3 r + 1. */
void kiln_ref_inline_fns(const float *x, const float *y, float *outf, int32_t *outi, size_t rows,
                         size_t cols);

/* The static_range kernel (its comment says what): out has n + 15 G + G B floats for G = cdiv(n,
 * b) programs of b elements; the products and sums in f32 in the kernel's order. */
void kiln_ref_static_range(const float *x, float *out, size_t n, size_t b);

/* The tensor_desc kernel's geometry (its comment says what each program does). */
typedef struct KilnRefTensorDesc {
  long m, n, sx, sy, bm, bn, sm, sn; /* 2-D: x, y */
  long gp, gq;                       /* the grid */
  long len, b1;                      /* 1-D: u */
  long d0, d1, d2, s0, s1;           /* 3-D: z, w (blocks of 2 x 4 x 8) */
} KilnRefTensorDesc;

/* The tensor_desc kernel: seen, seen1 and seen3 whole (the blocks, zero outside their tensors);
 * y and w where the kernel writes them (2 x + 1 and 3 z), with ywrote/wwrote set there (1) and
 * left alone elsewhere. y and ywrote have m rows of stride sy; w and wwrote z's extent. */
void kiln_ref_tensor_desc(const KilnRefTensorDesc *g, const float *x, const float *u,
                          const float *z, float *seen, float *y, uint8_t *ywrote, float *seen1,
                          float *seen3, float *w, uint8_t *wwrote);

#endif /* KILN_NUMERIC_REFERENCE_H */
