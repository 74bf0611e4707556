/* lower_reduce.c - kiln.reduce: inside the thread, across lanes, across warps.
 *
 * 1. Each thread combines its own elements along the axis (in order).
 * 2. The lanes that hold different elements along the axis exchange partials with
 *    shfl.sync.bfly, one butterfly step per lane-id bit of that dim; afterwards every lane holds
 *    the warp's result.  Lane bits whose lanes hold copies (a tile smaller than the layout's
 *    extent) are skipped, so nothing is counted twice.
 * 3. When several warps hold different elements along the axis, each writes its partial to
 *    shared memory, and after a barrier every thread combines all warps' partials in warp order.
 * argmax/argmin carry (value, index) pairs; ties keep the smaller index.
 * The same steps serve an mma operand (a dot's accumulator fragments), whose dim maps say which
 * lane and warp bits select the axis: along columns lane bits 0..1 (t = l & 3), so a row
 * reduction is the thread's own elements and then two shfl.bfly (offsets 1 and 2); across warps
 * only when the layout splits the columns over warps.
 * The result is laid out as slice{axis, input layout}, i.e. the list order of the remaining
 * dims, which is what the layout pass gave the result type. */
#include "lower.h"

typedef struct Red {
  KilnReduceKind kind;
  bool is_float;
  MlirType et;
} Red;

static bool kind_of(MlirOperation op, KilnReduceKind *k) {
  char buf[16];
  if (!kiln_ir_get_str_attr(op, "kind", buf, sizeof buf)) return false;
  for (int i = 0; i < KILN_REDUCE_COUNT; i++)
    if (strcmp(buf, kiln_reduce_kind_name((KilnReduceKind)i)) == 0) {
      *k = (KilnReduceKind)i;
      return true;
    }
  return false;
}

/* Combines (a, ai) with (b, bi); ai/bi only for argmax/argmin.  Returns the value, *idx the
 * index. */
static MlirValue combine(Low *L, const Red *r, MlirValue a, MlirValue ai, MlirValue b, MlirValue bi,
                         MlirValue *idx) {
  switch (r->kind) {
  case KILN_REDUCE_SUM: return low_bin(L, r->is_float ? "arith.addf" : "arith.addi", a, b);
  case KILN_REDUCE_MAX: return low_bin(L, r->is_float ? "arith.maximumf" : "arith.maxsi", a, b);
  case KILN_REDUCE_MIN: return low_bin(L, r->is_float ? "arith.minimumf" : "arith.minsi", a, b);
  default: break;
  }
  bool mx = r->kind == KILN_REDUCE_ARGMAX;
  MlirValue better, equal;
  if (r->is_float) {
    better = low_cmpf(L, mx ? "ogt" : "olt", b, a);
    equal = low_cmpf(L, "oeq", b, a);
  } else {
    better = low_cmpi(L, mx ? "sgt" : "slt", b, a);
    equal = low_cmpi(L, "eq", b, a);
  }
  MlirValue smaller = low_cmpi(L, "slt", bi, ai);
  MlirValue take = low_bin(L, "arith.ori", better, low_bin(L, "arith.andi", equal, smaller));
  MlirValue s1[3] = {take, b, a}, s2[3] = {take, bi, ai};
  *idx = low_op1(L, "arith.select", s2, 3, L->i32);
  return low_op1(L, "arith.select", s1, 3, mlirValueGetType(a));
}

/* Folds (x, xi) into the running value (*acc, *acci) of a reduction; the first one starts it. */
static void fold(Low *L, const Red *r, MlirValue *acc, MlirValue *acci, MlirValue x, MlirValue xi) {
  if (mlirValueIsNull(*acc)) {
    *acc = x;
    *acci = xi;
    return;
  }
  MlirValue ni = {NULL};
  *acc = combine(L, r, *acc, *acci, x, xi, &ni);
  *acci = ni;
}

/* A 64-bit scalar (i64, f64) shuffled as its two 32-bit words (shfl.sync moves 32 bits). */
static MlirValue shuffle64(Low *L, MlirValue v, const char *kind, MlirValue b, int c) {
  MlirType t = mlirValueGetType(v);
  bool is_f = mlirTypeIsAFloat(t);
  MlirValue x = is_f ? low_op1(L, "arith.bitcast", &v, 1, L->i64) : v;
  MlirValue hi64 =
      low_bin(L, "arith.shrui", x, low_const(L, L->i64, mlirIntegerAttrGet(L->i64, 32)));
  MlirValue lo = low_op1(L, "arith.trunci", &x, 1, L->i32);
  MlirValue hi = low_op1(L, "arith.trunci", &hi64, 1, L->i32);
  lo = low_shuffle(L, lo, kind, b, c);
  hi = low_shuffle(L, hi, kind, b, c);
  MlirValue lo64 = low_op1(L, "arith.extui", &lo, 1, L->i64);
  hi64 = low_op1(L, "arith.extui", &hi, 1, L->i64);
  MlirValue r =
      low_bin(L, "arith.ori", lo64,
              low_bin(L, "arith.shli", hi64, low_const(L, L->i64, mlirIntegerAttrGet(L->i64, 32))));
  return is_f ? low_op1(L, "arith.bitcast", &r, 1, t) : r;
}

MlirValue low_shuffle(Low *L, MlirValue v, const char *kind, MlirValue b, int c) {
  MlirType t = mlirValueGetType(v);
  MlirValue x = v;
  bool is_f = mlirTypeIsAFloat(t);
  int bits = kiln_ir_elem_bits(t);
  if (bits == 64) return shuffle64(L, v, kind, b, c);
  if (bits < 32) x = low_op1(L, is_f ? "arith.extf" : "arith.extsi", &v, 1, is_f ? L->f32 : L->i32);
  MlirType xt = mlirValueGetType(x);
  MlirValue o[4] = {low_i32(L, -1), x, b, low_i32(L, c)};
  char text[40];
  snprintf(text, sizeof text, "#nvvm<shfl_kind %s>", kind);
  MlirNamedAttribute k = kiln_ir_named(L->ctx, "kind", kiln_gpu_parse_attr(L->ctx, text));
  MlirValue r = mlirOperationGetResult(low_op(L, "nvvm.shfl.sync", o, 4, &xt, 1, &k, 1), 0);
  if (bits < 32) r = low_op1(L, is_f ? "arith.truncf" : "arith.trunci", &r, 1, t);
  return r;
}

/* shfl.sync.bfly by a constant lane offset (the reduction's butterfly step). */
static MlirValue shuffle(Low *L, MlirValue v, int offset) {
  return low_shuffle(L, v, "bfly", low_i32(L, offset), 0x1f);
}

bool low_reduce(Low *L, MlirOperation op) {
  Red r;
  if (!kind_of(op, &r.kind)) {
    low_error(L, "GPU lowering: reduce without a known kind");
    return false;
  }
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  MlirType st = mlirValueGetType(src);
  r.et = kiln_ir_elem_type(st);
  r.is_float = mlirTypeIsAFloat(r.et);
  bool arg = r.kind == KILN_REDUCE_ARGMAX || r.kind == KILN_REDUCE_ARGMIN;
  int axis = (int)kiln_gpu_int_attr(op, "axis", 0);
  KilnGpuOwn in = kiln_gpu_own_of_type(st);
  KilnGpuLayout il = kiln_gpu_layout_of_type(st);
  if (il.kind != KILN_GPU_LAYOUT_BLOCKED && il.kind != KILN_GPU_LAYOUT_MMA) {
    low_error(L, "GPU lowering: reduce expects a blocked or mma operand");
    return false;
  }
  Vals *X = low_get(L, src);
  /* The result's list: the slice of the input layout, rank-1 dims (a scalar for rank 1). */
  KilnGpuLayout sl = kiln_gpu_layout_slice(&il, axis);
  int orank = in.rank - 1;
  int64_t oshape[KILN_GPU_MAX_RANK];
  for (int d = 0, k = 0; d < in.rank; d++)
    if (d != axis) oshape[k++] = in.shape[d];
  if (orank > 0) {
    /* the values below are listed as the slice owns them: a result typed otherwise would read
     * other elements than it names (the layout pass gives reduce results only this slice) */
    KilnGpuLayout rl = kiln_gpu_layout_of_type(mlirValueGetType(res));
    if (!kiln_gpu_layout_equal(&rl, &sl)) {
      low_error(L, "GPU lowering: a reduce's result must be laid out as the slice of its "
                   "operand's layout along the axis");
      return false;
    }
  }
  KilnGpuOwn out;
  if (orank > 0)
    kiln_gpu_own(&sl, orank, oshape, &out);
  else {
    memset(&out, 0, sizeof out);
    out.count = 1;
  }
  Vals *R = low_vals(L, out.count), *RI = low_vals(L, out.count);
  const KilnGpuDimMap *am = &in.dim[axis];

  /* 1. inside the thread */
  for (int64_t jo = 0; jo < out.count; jo++) {
    int ol[KILN_GPU_MAX_RANK] = {0}, il_[KILN_GPU_MAX_RANK];
    if (orank > 0) kiln_gpu_own_local(&out, jo, ol);
    for (int d = 0, k = 0; d < in.rank; d++) il_[d] = d == axis ? 0 : ol[k++];
    MlirValue acc = {NULL}, acci = {NULL};
    for (int i = 0; i < am->n; i++) {
      il_[axis] = i;
      int64_t j = kiln_gpu_own_index(&in, il_);
      MlirValue x = X->v[j], xi = {NULL};
      if (arg) xi = low_coord(L, &in, j, axis);
      fold(L, &r, &acc, &acci, x, xi);
    }
    R->v[jo] = acc;
    RI->v[jo] = acci;
  }

  /* 2. across lanes: only lane bits whose lanes hold different elements of the axis */
  int64_t chunks = am->size / am->spt; /* distinct runs along the axis */
  if (chunks < 1) chunks = 1;
  int chunk_bits = kiln_gpu_ilog2(chunks);
  int lane_useful = am->lane_bits < chunk_bits ? am->lane_bits : chunk_bits;
  if (am->size < am->spt) lane_useful = 0;
  for (int bit = 0; bit < lane_useful; bit++) {
    int offset = 1 << (am->lane_shift + bit);
    for (int64_t jo = 0; jo < out.count; jo++) {
      MlirValue o = shuffle(L, R->v[jo], offset), oi = {NULL}, ni = {NULL};
      if (arg) oi = shuffle(L, RI->v[jo], offset);
      R->v[jo] = combine(L, &r, R->v[jo], RI->v[jo], o, oi, &ni);
      RI->v[jo] = ni;
    }
  }

  /* 3. across warps, through shared memory */
  int64_t wchunks = chunks / am->tpw;
  int wchunk_bits = kiln_gpu_ilog2(wchunks);
  int warp_useful = wchunks > 1 ? (am->warp_bits < wchunk_bits ? am->warp_bits : wchunk_bits) : 0;
  if (warp_useful > 0 && lane_useful < am->lane_bits)
    warp_useful = 0; /* a smaller tile never reaches the warps' bits */
  if (warp_useful > 0) {
    int W = 1 << warp_useful;
    int64_t numel_out = 1;
    for (int d = 0; d < orank; d++) numel_out *= oshape[d];
    bool wide = kiln_ir_elem_bits(r.et) == 64;
    int64_t slot = wide ? 8 : 4; /* partials travel as 32-bit words, 64-bit ones as themselves */
    int64_t bytes = numel_out * W * slot * (arg ? 2 : 1);
    MlirValue warp_a =
        low_bin(L, "arith.andi",
                am->warp_shift ? low_bin(L, "arith.shrui", low_warp(L), low_i32(L, am->warp_shift))
                               : low_warp(L),
                low_i32(L, W - 1));
    MlirType word = wide ? r.et : r.is_float ? L->f32 : L->i32;
    low_barrier(L);
    MlirValue base = low_smem(L, 0, bytes);
    MlirValue ibase = arg ? low_smem(L, numel_out * W * slot, bytes) : base;
    MlirValue *lin = low_alloc(L, (size_t)out.count * sizeof *lin);
    for (int64_t jo = 0; jo < out.count; jo++) {
      /* row-major linear index of the output element */
      MlirValue li = low_i32(L, 0);
      for (int d = 0; d < orank; d++) {
        li = low_bin(L, "arith.muli", li, low_i32(L, oshape[d]));
        li = low_bin(L, "arith.addi", li, low_coord(L, &out, jo, d));
      }
      lin[jo] = low_bin(L, "arith.muli", li, low_i32(L, W));
      MlirValue at = low_bin(L, "arith.addi", lin[jo], warp_a);
      MlirValue v = R->v[jo];
      if (kiln_ir_elem_bits(r.et) < 32)
        v = low_op1(L, r.is_float ? "arith.extf" : "arith.extsi", &v, 1, word);
      MlirValue o[2] = {v, low_gep(L, base, at, word)};
      low_op(L, "llvm.store", o, 2, NULL, 0, NULL, 0);
      if (arg) {
        MlirValue oi[2] = {RI->v[jo], low_gep(L, ibase, at, L->i32)};
        low_op(L, "llvm.store", oi, 2, NULL, 0, NULL, 0);
      }
    }
    low_barrier(L);
    for (int64_t jo = 0; jo < out.count; jo++) {
      MlirValue acc = {NULL}, acci = {NULL};
      for (int w = 0; w < W; w++) {
        MlirValue at = low_bin(L, "arith.addi", lin[jo], low_i32(L, w));
        MlirValue p = low_gep(L, base, at, word);
        MlirValue v = low_op1(L, "llvm.load", &p, 1, word), vi = {NULL};
        if (kiln_ir_elem_bits(r.et) < 32)
          v = low_op1(L, r.is_float ? "arith.truncf" : "arith.trunci", &v, 1, r.et);
        if (arg) {
          MlirValue pi = low_gep(L, ibase, at, L->i32);
          vi = low_op1(L, "llvm.load", &pi, 1, L->i32);
        }
        fold(L, &r, &acc, &acci, v, vi);
      }
      R->v[jo] = acc;
      RI->v[jo] = acci;
    }
  }
  low_set(L, res, arg ? RI : R);
  return true;
}
