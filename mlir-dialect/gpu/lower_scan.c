/* lower_scan.c - kiln.scan (cumsum / cumprod) in the thread, across lanes by shuffles, across
 * warps through one small shared buffer, the way Triton lowers a scan.
 *
 * The scan runs in its operand's layout when that is blocked (or a slice of a blocked one; a
 * power-of-two length along the axis): along the axis a thread holds a run of spt consecutive
 * elements, the lanes and then the warps hold consecutive runs, and a tile longer than the
 * CTA's extent repeats the pattern (reps, extent elements apart).  A line is the thread's
 * elements with the same coordinates in the other dims.  Per line and rep:
 *  1. the thread scans its run in registers: s_0 .. s_{spt-1};
 *  2. the lanes along the axis scan their run totals with shfl.sync.up, one Hillis-Steele step
 *     per lane bit of the axis (lane k combines lane k - d's value when k >= d), then one more
 *     shfl.up by one lane gives each lane the combination of the lanes before it;
 *  3. when warps hold different runs, the last lane of each warp writes the warp's total to a
 *     shared buffer [line][rep][warp]: one barrier (and the one that opens every use of the
 *     arena), then every thread combines the totals of the warps before its own;
 *  4. element e of the run is carry . (warps before) . (lanes before) . s_e, the carry being the
 *     combination of the earlier reps' totals (all warps' totals; within one warp a shfl.idx
 *     from the line's last lane).
 * Lane and warp bits beyond the tile's length along the axis hold copies: they take part in no
 * step and compute what the lanes they copy compute.  The earlier value is always on the left
 * of the combine; the identity (-0.0 for float sums, so that -0.0 stays -0.0; 0; 1) stands in
 * for "nothing before".  Float sums and products are regrouped, no longer in order along the
 * axis: a tree of depth at most spt + log2(lanes) + warps + reps + 3 (docs/gpu-lowering.md).
 * Operands in other layouts (mma, slices of mma) go to a blocked layout through shared memory
 * first, as do those whose axis lies along warps and repetitions only (interleaved below: then
 * to whole lines a thread), and a result whose layout is not the one the scan ran in goes the
 * same way back. */
#include "lower.h"

#include <inttypes.h>

typedef struct Scan {
  bool is_sum, fl;
  bool rev; /* kiln.reverse: from the end of the axis, every step above mirrored */
  MlirType et;
} Scan;

/* Where the runs of the axis sit: spt elements a run in the thread, reps runs a thread, lane and
 * warp id bits that hold different runs (the others hold copies). */
typedef struct Axis {
  int spt, reps;
  int lane_bits, lane_shift, warp_bits, warp_shift;
} Axis;

static MlirValue combine(Low *L, const Scan *s, MlirValue earlier, MlirValue later) {
  const char *name =
      s->is_sum ? (s->fl ? "arith.addf" : "arith.addi") : (s->fl ? "arith.mulf" : "arith.muli");
  return low_bin(L, name, earlier, later);
}

/* earlier . later, where a null earlier means nothing comes before. */
static MlirValue after(Low *L, const Scan *s, MlirValue earlier, MlirValue later) {
  return mlirValueIsNull(earlier) ? later : combine(L, s, earlier, later);
}

static MlirValue identity(Low *L, const Scan *s) {
  if (s->fl)
    return low_const(L, s->et, mlirFloatAttrDoubleGet(L->ctx, s->et, s->is_sum ? -0.0 : 1.0));
  return low_const(L, s->et, mlirIntegerAttrGet(s->et, s->is_sum ? 0 : 1));
}

static MlirValue pick(Low *L, MlirValue cond, MlirValue a, MlirValue b) {
  MlirValue o[3] = {cond, a, b};
  return low_op1(L, "arith.select", o, 3, mlirValueGetType(a));
}

static int imin(int a, int b) { return a < b ? a : b; }

static Axis axis_of(const KilnGpuDimMap *m) {
  Axis a = {0};
  a.spt = m->size < m->spt ? (int)m->size : m->spt;
  a.reps = m->n / a.spt;
  int64_t per_rep = (m->size < m->extent ? m->size : m->extent) / a.spt;
  int useful = m->base_used ? kiln_gpu_ilog2(per_rep) : 0;
  a.lane_bits = imin(m->lane_bits, useful);
  a.lane_shift = m->lane_shift;
  a.warp_bits = a.lane_bits == m->lane_bits ? imin(m->warp_bits, useful - m->lane_bits) : 0;
  a.warp_shift = m->warp_shift;
  return a;
}

static MlirValue id_bits(Low *L, MlirValue id, int shift, int nbits) {
  if (nbits == 0) return low_i32(L, 0);
  MlirValue v = shift ? low_bin(L, "arith.shrui", id, low_i32(L, shift)) : id;
  return low_bin(L, "arith.andi", v, low_i32(L, (1 << nbits) - 1));
}

/* Whether the scan can run in layout l: blocked along the axis, a power-of-two length. */
static bool scans_in(const KilnGpuLayout *l, const KilnGpuOwn *o, int axis) {
  bool blocked = l->kind == KILN_GPU_LAYOUT_BLOCKED ||
                 (l->kind == KILN_GPU_LAYOUT_SLICE && l->parent == KILN_GPU_LAYOUT_BLOCKED);
  int64_t n = o->shape[axis];
  return blocked && n > 0 && (n & (n - 1)) == 0;
}

/* Whether the axis lies along warps and repetitions only (no lane holds another part of a run):
 * then every run is one element of a thread and every run's total would cross the warps, about
 * the whole tile through shared memory plus the warps' prefixes per rep.  With a line for at
 * least every other thread (the rest hold copies), a trip through shared memory to whole lines
 * in each thread (whole_lines), a serial scan in registers and the trip back cost less
 * (docs/gpu-lowering.md, "Scans"). */
static bool interleaved(const KilnGpuOwn *o, int axis, int num_warps) {
  Axis a = axis_of(&o->dim[axis]);
  int64_t lines = 1;
  for (int d = 0; d < o->rank; d++)
    if (d != axis) lines *= o->shape[d];
  return a.lane_bits == 0 && a.warp_bits > 0 && a.reps > 1 &&
         2 * lines >= (int64_t)KILN_GPU_WARP * num_warps;
}

/* A blocked layout that gives each thread whole lines along the axis (the lanes and warps over
 * the other dims, the fastest first). */
static KilnGpuLayout whole_lines(const KilnGpuOwn *o, int axis, int num_warps) {
  int order[KILN_GPU_MAX_RANK], k = 0;
  order[k++] = axis;
  for (int d = o->rank - 1; d >= 0; d--)
    if (d != axis) order[k++] = d;
  return kiln_gpu_layout_blocked(o->rank, o->shape, num_warps, (int)o->shape[axis], order);
}

/* Whether the lane d positions earlier in the scan's order (d before it forwards, d after it
 * reversed) exists along the axis: lane >= d, or lane + d <= last. */
static MlirValue has_lane(Low *L, const Scan *s, MlirValue lane, int d, int last) {
  return s->rev ? low_cmpi(L, "ule", lane, low_i32(L, last - d))
                : low_cmpi(L, "uge", lane, low_i32(L, d));
}

/* Row-major index of the line that list position j lies on (its coordinates but the axis'). */
static MlirValue line_index(Low *L, const KilnGpuOwn *o, int64_t j, int axis) {
  MlirValue li = low_i32(L, 0);
  for (int d = 0; d < o->rank; d++) {
    if (d == axis) continue;
    li = low_bin(L, "arith.muli", li, low_i32(L, o->shape[d]));
    li = low_bin(L, "arith.addi", li, low_coord(L, o, j, d));
  }
  return li;
}

/* The scan of X (held as o says) along axis, in o's layout: the list of results in o's order. */
static Vals *scan_vals(Low *L, const Scan *s, Vals *X, const KilnGpuOwn *o, int axis) {
  const KilnGpuDimMap *m = &o->dim[axis];
  Axis a = axis_of(m);
  int64_t nlines = o->count / m->n, lines_total = 1;
  for (int d = 0; d < o->rank; d++)
    if (d != axis) lines_total *= o->shape[d];
  int64_t nruns = nlines * a.reps;
  Vals *out = low_vals(L, o->count);
  /* the first list position of each line (local index 0 along the axis) */
  int64_t *first = low_alloc(L, (size_t)nlines * sizeof *first);
  for (int64_t j = 0, k = 0; j < o->count; j++) {
    int local[KILN_GPU_MAX_RANK];
    kiln_gpu_own_local(o, j, local);
    if (local[axis] == 0) first[k++] = j;
  }
  MlirValue *total = low_alloc(L, (size_t)nruns * sizeof *total);   /* lanes' inclusive scan */
  MlirValue *before = low_alloc(L, (size_t)nruns * sizeof *before); /* lanes before, or null */
  MlirValue lane =
      a.lane_bits ? id_bits(L, low_lane(L), a.lane_shift, a.lane_bits) : (MlirValue){0};
  int last_lane = (1 << a.lane_bits) - 1;

  /* 1. and 2.: in the thread, then across the lanes */
  for (int64_t k = 0; k < nlines; k++) {
    int local[KILN_GPU_MAX_RANK];
    kiln_gpu_own_local(o, first[k], local);
    for (int r = 0; r < a.reps; r++) {
      MlirValue acc = {NULL};
      for (int e = 0; e < a.spt; e++) {
        local[axis] = r * a.spt + (s->rev ? a.spt - 1 - e : e);
        int64_t j = kiln_gpu_own_index(o, local);
        acc = after(L, s, acc, X->v[j]);
        out->v[j] = acc;
      }
      /* forwards lane k takes lane k - d's value when k >= d (shfl.up); reversed lane k takes
       * lane k + d's when k + d <= the last lane (shfl.down) */
      const char *dir = s->rev ? "down" : "up";
      int clamp = s->rev ? 0x1f : 0;
      MlirValue t = acc, ex = {NULL};
      for (int b = 0; b < a.lane_bits; b++) {
        MlirValue y = low_shuffle(L, t, dir, low_i32(L, (1 << b) << a.lane_shift), clamp);
        t = pick(L, has_lane(L, s, lane, 1 << b, last_lane), combine(L, s, y, t), t);
      }
      if (a.lane_bits) {
        MlirValue y = low_shuffle(L, t, dir, low_i32(L, 1 << a.lane_shift), clamp);
        ex = pick(L, has_lane(L, s, lane, 1, last_lane), y, identity(L, s));
      }
      total[k * a.reps + r] = t;
      before[k * a.reps + r] = ex;
    }
  }

  /* 3. across the warps: each warp's totals through the arena */
  int W = 1 << a.warp_bits;
  MlirValue warp = {NULL}, base = {NULL};
  MlirType et = s->et;
  int64_t slot = kiln_ir_elem_bits(et) < 8 ? 1 : kiln_ir_elem_bits(et) / 8;
  if (W > 1) {
    warp = id_bits(L, low_warp(L), a.warp_shift, a.warp_bits);
    low_barrier(L);
    base = low_smem(L, 0, lines_total * a.reps * W * slot);
    /* the line's last lane in the scan's order holds the run's total: the first reversed */
    MlirValue cond =
        a.lane_bits ? low_cmpi(L, "eq", lane, low_i32(L, s->rev ? 0 : last_lane)) : (MlirValue){0};
    KilnIRIf f = {0};
    KilnIRBuilder saved = L->b;
    if (!mlirValueIsNull(cond)) {
      f = kiln_ir_build_if(&L->b, L->loc, cond, NULL, 0);
      kiln_ir_builder_set_end(&L->b, f.then_block);
    }
    for (int64_t k = 0; k < nlines; k++) {
      MlirValue li = low_bin(L, "arith.muli", line_index(L, o, first[k], axis),
                             low_i32(L, (int64_t)a.reps * W));
      for (int r = 0; r < a.reps; r++) {
        MlirValue at = low_bin(L, "arith.addi", li, low_i32(L, (int64_t)r * W));
        at = low_bin(L, "arith.addi", at, warp);
        MlirValue st[2] = {total[k * a.reps + r], low_gep(L, base, at, et)};
        low_op(L, "llvm.store", st, 2, NULL, 0, NULL, 0);
      }
    }
    if (!mlirValueIsNull(cond)) {
      kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
      kiln_ir_builder_set_end(&L->b, f.else_block);
      kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
      L->b = saved;
    }
    low_barrier(L);
  }

  /* 4. the prefix of each run, then its elements */
  for (int64_t k = 0; k < nlines; k++) {
    int local[KILN_GPU_MAX_RANK];
    kiln_gpu_own_local(o, first[k], local);
    MlirValue li = {NULL};
    if (W > 1)
      li = low_bin(L, "arith.muli", line_index(L, o, first[k], axis),
                   low_i32(L, (int64_t)a.reps * W));
    MlirValue carry = {NULL};
    for (int ri = 0; ri < a.reps; ri++) {
      int r = s->rev ? a.reps - 1 - ri : ri; /* reps in the scan's order */
      MlirValue prefix = carry, rep_total = {NULL};
      bool last_rep = ri == a.reps - 1;
      if (W > 1) {
        /* the warps' totals in order after the carry (reversed: from the last warp): this
         * warp's prefix is the running combination where the warp index is reached, the next
         * rep's carry the whole run */
        MlirValue run = carry;
        for (int wi = 0; wi < W; wi++) {
          int w = s->rev ? W - 1 - wi : wi;
          if (wi > 0) {
            MlirValue mine = low_cmpi(L, "eq", warp, low_i32(L, w));
            prefix =
                pick(L, mine, run, wi == 1 && mlirValueIsNull(carry) ? identity(L, s) : prefix);
          }
          if (wi == W - 1 && last_rep) break; /* no later warp or rep needs the last total */
          MlirValue at = low_bin(L, "arith.addi", li, low_i32(L, (int64_t)r * W + w));
          MlirValue p = low_gep(L, base, at, et);
          run = after(L, s, run, low_op1(L, "llvm.load", &p, 1, et));
        }
        if (!last_rep) carry = run;
      } else if (!last_rep) {
        /* within the warp: the line's last lane (in the scan's order) holds the rep's total */
        rep_total = total[k * a.reps + r];
        if (a.lane_bits) {
          MlirValue src = s->rev ? low_bin(L, "arith.andi", low_lane(L),
                                           low_i32(L, ~((int64_t)last_lane << a.lane_shift)))
                                 : low_bin(L, "arith.ori", low_lane(L),
                                           low_i32(L, (int64_t)last_lane << a.lane_shift));
          rep_total = low_shuffle(L, rep_total, "idx", src, 0x1f);
        }
      }
      if (!mlirValueIsNull(before[k * a.reps + r]))
        prefix = after(L, s, prefix, before[k * a.reps + r]);
      if (!mlirValueIsNull(prefix))
        for (int e = 0; e < a.spt; e++) {
          local[axis] = r * a.spt + e; /* the prefix comes first in either order */
          int64_t j = kiln_gpu_own_index(o, local);
          out->v[j] = combine(L, s, prefix, out->v[j]);
        }
      if (W == 1 && !last_rep) carry = after(L, s, carry, rep_total);
    }
  }
  return out;
}

bool low_scan(Low *L, MlirOperation op) {
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  MlirType st = mlirValueGetType(src), rt = mlirValueGetType(res);
  KilnGpuLayout sl = kiln_gpu_layout_of_type(st), rl = kiln_gpu_layout_of_type(rt);
  KilnGpuOwn so = kiln_gpu_own_of_type(st), ro = kiln_gpu_own_of_type(rt);
  int axis = (int)kiln_gpu_int_attr(op, "axis", 0);
  char kind[8] = "";
  kiln_ir_get_str_attr(op, "kind", kind, sizeof kind);
  Scan s = {.is_sum = strcmp(kind, "sum") == 0,
            .rev = kiln_ir_scan_is_reverse(op),
            .et = kiln_ir_elem_type(rt)};
  s.fl = mlirTypeIsAFloat(s.et);
  if (axis < 0 || axis >= so.rank) {
    low_error(L, "GPU lowering: scan axis %d out of range", axis);
    return false;
  }
  if (!scans_in(&sl, &so, axis) && !scans_in(&rl, &ro, axis)) {
    int64_t n = so.shape[axis];
    if (n <= 0 || (n & (n - 1)) != 0) {
      low_error(L, "GPU lowering: scan along a length that is not a power of two (%" PRId64 ")", n);
      return false;
    }
  }
  Vals *X = low_get(L, src);
  /* the layout the scan runs in: the operand's, else the result's, else a blocked one */
  KilnGpuLayout wl = sl;
  KilnGpuOwn wo = so;
  if (!scans_in(&sl, &so, axis)) {
    wl = scans_in(&rl, &ro, axis)
             ? rl
             : kiln_gpu_layout_blocked(so.rank, so.shape, L->num_warps, 1, NULL);
    kiln_gpu_own(&wl, so.rank, so.shape, &wo);
    X = low_relayout(L, X, &so, &wo, s.et);
  }
  if (interleaved(&wo, axis, L->num_warps)) {
    KilnGpuLayout tl = whole_lines(&wo, axis, L->num_warps);
    KilnGpuOwn to;
    kiln_gpu_own(&tl, wo.rank, wo.shape, &to);
    X = low_relayout(L, X, &wo, &to, s.et);
    wl = tl, wo = to;
  }
  Vals *out = scan_vals(L, &s, X, &wo, axis);
  if (!kiln_gpu_layout_equal(&wl, &rl)) out = low_relayout(L, out, &wo, &ro, s.et);
  low_set(L, res, out);
  return true;
}
