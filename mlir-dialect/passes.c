/* passes.c - wrapping our module passes as MLIR external passes, the verifier (`verify`) and a
 * small dead-code elimination for kiln ops (`kiln-dce`).
 *
 * IRDL ops carry no traits, so upstream DCE/CSE never remove a kiln op; kiln-dce removes the
 * unused ones that have no side effect (everything but store and the atomics). */
#include "kiln_mlir_internal.h"

/* ---------------------------------------------------------------- external pass plumbing */

typedef struct PassData {
  KilnPassBody run;
  void *opts;
  size_t opts_size;
} PassData;

/* A pass owns its options: MLIR clones a pass per thread and destroys each copy. */
static PassData *data_copy(const PassData *d) {
  PassData *c = malloc(sizeof *c);
  KILN_ASSERT(c != NULL);
  *c = *d;
  c->opts = NULL;
  if (d->opts_size) {
    c->opts = malloc(d->opts_size);
    KILN_ASSERT(c->opts != NULL);
    memcpy(c->opts, d->opts, d->opts_size);
  }
  return c;
}

static void pass_construct(void *user) { (void)user; }
static void pass_destruct(void *user) {
  PassData *d = user;
  free(d->opts);
  free(d);
}
static MlirLogicalResult pass_initialize(MlirContext ctx, void *user) {
  (void)ctx, (void)user;
  return mlirLogicalResultSuccess();
}
static void *pass_clone(void *user) { return data_copy(user); }
static void pass_run(MlirOperation op, MlirExternalPass pass, void *user) {
  PassData *d = user;
  if (mlirLogicalResultIsFailure(d->run(op, d->opts))) mlirExternalPassSignalFailure(pass);
}

MlirPass kiln_pass_make(MlirTypeID id, const char *name, const char *arg, const char *desc,
                        KilnPassBody run, const void *opts, size_t opts_size) {
  PassData tmpl = {run, (void *)opts, opts_size};
  MlirExternalPassCallbacks cb = {pass_construct, pass_destruct, pass_initialize, pass_clone,
                                  pass_run};
  return mlirCreateExternalPass(
      id, mlirStringRefCreateFromCString(name), mlirStringRefCreateFromCString(arg),
      mlirStringRefCreateFromCString(desc), mlirStringRefCreateFromCString("builtin.module"), 0,
      NULL, cb, data_copy(&tmpl));
}

/* MLIR wants each pass's TypeID from a distinct 8-byte-aligned address. */
static _Alignas(8) char verify_id, dce_id, widen_id;

MlirPass kiln_pass_create_verify(void) {
  return kiln_pass_make(mlirTypeIDCreate(&verify_id), "KilnVerify", "kiln-verify",
                        "check kiln op shapes and types", kiln_verify_module, NULL, 0);
}
MlirPass kiln_pass_create_widen_offsets(const KilnStageOptions *o) {
  KilnStageOptions none = {0};
  return kiln_pass_make(mlirTypeIDCreate(&widen_id), "KilnWidenOffsets", "widen-offsets",
                        "compute pointer offsets in i64 where index_bits is 64",
                        kiln_widen_offsets_module, o ? o : &none, sizeof *o);
}

MlirPass kiln_pass_create_dce(void) {
  return kiln_pass_make(mlirTypeIDCreate(&dce_id), "KilnDCE", "kiln-dce",
                        "remove unused side-effect-free kiln ops", kiln_dce_module, NULL, 0);
}

/* ---------------------------------------------------------------- op collection */

static MlirWalkResult collect_kiln(MlirOperation op, void *user) {
  if (kiln_ir_op_id(op) != KILN_OP_NONE) kiln_op_list_push(user, op);
  return MlirWalkResultAdvance;
}

/* ---------------------------------------------------------------- verifier */

/* "[64,32]" or "scalar" */
static void shape_str(MlirType t, char *buf, size_t cap) {
  if (!mlirTypeIsARankedTensor(t)) {
    snprintf(buf, cap, "scalar");
    return;
  }
  size_t o = 0;
  o += (size_t)snprintf(buf + o, cap - o, "[");
  for (int i = 0; i < kiln_ir_rank(t) && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%lld", i ? "," : "", (long long)kiln_ir_dim(t, i));
  if (o < cap) snprintf(buf + o, cap - o, "]");
}

static bool same_shape(MlirType a, MlirType b) {
  int r = kiln_ir_rank(a);
  if (r != kiln_ir_rank(b) || mlirTypeIsARankedTensor(a) != mlirTypeIsARankedTensor(b))
    return false;
  for (int i = 0; i < r; i++)
    if (kiln_ir_dim(a, i) != kiln_ir_dim(b, i)) return false;
  return true;
}

static bool is_i1(MlirType t) {
  MlirType e = kiln_ir_elem_type(t);
  return mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 1;
}

static bool is_i32(MlirType t) { return mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 32; }

typedef struct VCtx {
  MlirOperation op;
  const char *what; /* user-facing op name */
  bool ok;
} VCtx;

static void verr(VCtx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verr(VCtx *v, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kiln_ir_error(mlirOperationGetLocation(v->op), "%s: %s", v->what, msg);
  v->ok = false;
}

static MlirType operand_type(MlirOperation op, int i) {
  return mlirValueGetType(mlirOperationGetOperand(op, i));
}

static MlirType result_type(MlirOperation op) {
  return mlirValueGetType(mlirOperationGetResult(op, 0));
}

/* The two shapes must agree; `a_name`/`b_name` name them for the message. */
static void check_same_shape(VCtx *v, MlirType a, const char *a_name, MlirType b,
                             const char *b_name) {
  if (same_shape(a, b)) return;
  char sa[64], sb[64];
  shape_str(a, sa, sizeof sa);
  shape_str(b, sb, sizeof sb);
  verr(v, "%s shape %s does not match %s shape %s", b_name, sb, a_name, sa);
}

/* ptrs must be a pointer or tile of pointers; returns the pointee (null type on error). */
static MlirType check_ptrs(VCtx *v, MlirType pt) {
  MlirType elem = kiln_ir_ptr_elem(kiln_ir_elem_type(pt));
  if (mlirTypeIsNull(elem)) verr(v, "expects a pointer or a tile of pointers");
  return elem;
}

static void check_elem(VCtx *v, MlirType pointee, MlirType value_type, const char *value_name) {
  if (mlirTypeIsNull(pointee) || mlirTypeEqual(pointee, kiln_ir_elem_type(value_type))) return;
  KilnStr a = kiln_print_type(pointee), b = kiln_print_type(kiln_ir_elem_type(value_type));
  verr(v, "%s element type %s does not match the pointer's element type %s", value_name, b.data,
       a.data);
  kiln_str_free(&a);
  kiln_str_free(&b);
}

static bool get_axis(VCtx *v, int64_t *axis) {
  if (!kiln_ir_get_int_attr(v->op, "axis", axis)) {
    verr(v, "missing integer attribute 'axis'");
    return false;
  }
  return true;
}

static void verify_memory(VCtx *v, KilnOpId id) {
  MlirOperation op = v->op;
  MlirType pt = operand_type(op, 0);
  MlirType pointee = check_ptrs(v, pt);
  if (id == KILN_OP_LOAD) {
    MlirType mt = operand_type(op, 1), ot = operand_type(op, 2), rt = result_type(op);
    check_same_shape(v, pt, "pointer", mt, "mask");
    if (!is_i1(mt)) verr(v, "mask must be a boolean (i1) tile");
    check_same_shape(v, pt, "pointer", ot, "other");
    check_same_shape(v, pt, "pointer", rt, "result");
    check_elem(v, pointee, rt, "loaded value");
    return;
  }
  if (id == KILN_OP_ATOMIC_CAS) {
    MlirType ct = operand_type(op, 1), vt = operand_type(op, 2), mt = operand_type(op, 3);
    check_same_shape(v, pt, "pointer", ct, "compare value");
    check_same_shape(v, pt, "pointer", vt, "value");
    check_same_shape(v, pt, "pointer", mt, "mask");
    if (!is_i1(mt)) verr(v, "mask must be a boolean (i1) tile");
    check_elem(v, pointee, ct, "compare value");
    check_elem(v, pointee, vt, "stored value");
    if (!mlirTypeEqual(vt, result_type(op))) verr(v, "result type must equal the value type");
    return;
  }
  MlirType vt = operand_type(op, 1), mt = operand_type(op, 2);
  check_same_shape(v, pt, "pointer", vt, "value");
  check_same_shape(v, pt, "pointer", mt, "mask");
  if (!is_i1(mt)) verr(v, "mask must be a boolean (i1) tile");
  check_elem(v, pointee, vt, "stored value");
  if (id == KILN_OP_ATOMIC_RMW && !mlirTypeEqual(vt, result_type(op)))
    verr(v, "result type must equal the value type");
}

static void verify_dot(VCtx *v) {
  MlirType a = operand_type(v->op, 0), b = operand_type(v->op, 1), c = operand_type(v->op, 2);
  if (kiln_ir_rank(a) != 2 || kiln_ir_rank(b) != 2 || kiln_ir_rank(c) != 2) {
    verr(v, "operands must be 2-D tiles");
    return;
  }
  int64_t m = kiln_ir_dim(a, 0), k = kiln_ir_dim(a, 1);
  if (kiln_ir_dim(b, 0) != k) {
    char sa[64], sb[64];
    shape_str(a, sa, sizeof sa);
    shape_str(b, sb, sizeof sb);
    verr(v, "inner dimensions differ: a is %s, b is %s", sa, sb);
  }
  if (kiln_ir_dim(c, 0) != m || kiln_ir_dim(c, 1) != kiln_ir_dim(b, 1)) {
    char sc[64];
    shape_str(c, sc, sizeof sc);
    verr(v, "accumulator shape %s must be [%lld,%lld]", sc, (long long)m,
         (long long)kiln_ir_dim(b, 1));
  }
  if (kiln_ir_type_is_float(a) != kiln_ir_type_is_float(c) ||
      kiln_ir_type_is_float(b) != kiln_ir_type_is_float(c))
    verr(v, "operands and accumulator must all be floating point or all integer");
  if (!mlirTypeEqual(c, result_type(v->op))) verr(v, "result type must equal the accumulator type");
  if (kiln_ir_dot_is_tf32(v->op) &&
      !(mlirTypeIsAF32(kiln_ir_elem_type(a)) && mlirTypeIsAF32(kiln_ir_elem_type(b))))
    verr(v, "tf32 rounds f32 operands: a and b must be f32 tiles");
}

static void verify_reduce(VCtx *v) {
  MlirType t = operand_type(v->op, 0), rt = result_type(v->op);
  int64_t axis;
  char kind[16] = "";
  kiln_ir_get_str_attr(v->op, "kind", kind, sizeof kind);
  if (!get_axis(v, &axis)) return;
  int rank = kiln_ir_rank(t);
  if (axis < 0 || axis >= rank) {
    verr(v, "axis %lld is out of range for a %d-D tile", (long long)axis, rank);
    return;
  }
  /* mlirgen widens i1/i8/i16 tiles first (the lowerings combine integers with signed
   * compares, in which an i1 true is -1, and sums must not wrap at 8 or 16 bits). */
  MlirType in_elem = kiln_ir_elem_type(t);
  if (mlirTypeIsAInteger(in_elem) && mlirIntegerTypeGetWidth(in_elem) < 32)
    verr(v, "an i%u tile is reduced in i32: widen it first", mlirIntegerTypeGetWidth(in_elem));
  bool arg = strncmp(kind, "arg", 3) == 0;
  MlirType want_elem = arg ? mlirIntegerTypeGet(mlirTypeGetContext(t), 32) : kiln_ir_elem_type(t);
  if (!mlirTypeEqual(kiln_ir_elem_type(rt), want_elem))
    verr(v, "result element type must be %s", arg ? "i32" : "the input's element type");
  if (rank == 1) {
    if (mlirTypeIsARankedTensor(rt)) verr(v, "reducing a 1-D tile yields a scalar");
    return;
  }
  bool ok = kiln_ir_rank(rt) == rank - 1;
  for (int i = 0, r = 0; ok && i < rank; i++)
    if (i != axis) ok = kiln_ir_dim(rt, r++) == kiln_ir_dim(t, i);
  if (!ok) verr(v, "result shape does not match the input with axis %lld removed", (long long)axis);
}

static void verify_shape_ops(VCtx *v, KilnOpId id) {
  MlirOperation op = v->op;
  MlirType rt = result_type(op);
  if (id == KILN_OP_SPLAT) {
    MlirType st = operand_type(op, 0);
    if (mlirTypeIsARankedTensor(st))
      verr(v, "operand must be a scalar");
    else if (!mlirTypeEqual(st, kiln_ir_elem_type(rt)))
      verr(v, "result element type differs from the scalar's type");
    return;
  }
  MlirType t = operand_type(op, 0);
  if (!mlirTypeEqual(kiln_ir_elem_type(t), kiln_ir_elem_type(rt)))
    verr(v, "result element type differs from the operand's");
  int rank = kiln_ir_rank(t);
  if (id == KILN_OP_BROADCAST) {
    char sa[64], sb[64];
    shape_str(t, sa, sizeof sa);
    shape_str(rt, sb, sizeof sb);
    bool ok = kiln_ir_rank(rt) == rank;
    for (int i = 0; ok && i < rank; i++)
      ok = kiln_ir_dim(t, i) == 1 || kiln_ir_dim(t, i) == kiln_ir_dim(rt, i);
    if (!ok) verr(v, "shape %s cannot be broadcast to %s", sa, sb);
  } else if (id == KILN_OP_EXPAND_DIMS) {
    int64_t axis;
    if (!get_axis(v, &axis)) return;
    if (axis < 0 || axis > rank) {
      verr(v, "axis %lld is out of range for a %d-D tile", (long long)axis, rank);
      return;
    }
    bool ok = kiln_ir_rank(rt) == rank + 1 && kiln_ir_dim(rt, (int)axis) == 1;
    for (int i = 0, r = 0; ok && i < rank; i++, r++) {
      if (r == axis) r++;
      ok = kiln_ir_dim(rt, r) == kiln_ir_dim(t, i);
    }
    if (!ok)
      verr(v, "result shape must be the operand's with a 1 inserted at axis %lld", (long long)axis);
  } else if (id == KILN_OP_RESHAPE) {
    if (kiln_ir_type_numel(t) != kiln_ir_type_numel(rt))
      verr(v, "result must have as many elements as the operand");
  } else if (id == KILN_OP_FLIP || id == KILN_OP_SCAN) {
    int64_t axis;
    if (!get_axis(v, &axis)) return;
    if (axis < 0 || axis >= rank)
      verr(v, "axis %lld is out of range for a %d-D tile", (long long)axis, rank);
    if (!same_shape(t, rt)) verr(v, "result shape must be the operand's");
  } else if (id == KILN_OP_RESIZE) {
    if (kiln_ir_rank(rt) != rank) verr(v, "result must have the operand's rank");
  } else if (id == KILN_OP_TRANS) {
    if (rank != 2 || kiln_ir_rank(rt) != 2)
      verr(v, "expects a 2-D tile");
    else if (kiln_ir_dim(rt, 0) != kiln_ir_dim(t, 1) || kiln_ir_dim(rt, 1) != kiln_ir_dim(t, 0))
      verr(v, "result shape must be the operand's transposed");
  }
}

static void verify_op(VCtx *v, KilnOpId id) {
  MlirOperation op = v->op;
  int64_t axis, start, end;
  switch (id) {
  case KILN_OP_PROGRAM_ID:
  case KILN_OP_NUM_PROGRAMS:
    if (get_axis(v, &axis) && (axis < 0 || axis > 2))
      verr(v, "axis must be 0, 1 or 2 (got %lld)", (long long)axis);
    break;
  case KILN_OP_RANGE:
    if (!kiln_ir_get_int_attr(op, "start", &start) || !kiln_ir_get_int_attr(op, "end", &end)) {
      verr(v, "missing start/end");
      break;
    }
    if (end <= start) {
      verr(v, "end (%lld) must be greater than start (%lld)", (long long)end, (long long)start);
      break;
    }
    if (kiln_ir_rank(result_type(op)) != 1 || kiln_ir_dim(result_type(op), 0) != end - start ||
        !is_i32(kiln_ir_elem_type(result_type(op))))
      verr(v, "result must be tensor<%lldxi32>", (long long)(end - start));
    break;
  case KILN_OP_SPLAT:
  case KILN_OP_BROADCAST:
  case KILN_OP_EXPAND_DIMS:
  case KILN_OP_TRANS:
  case KILN_OP_FLIP:
  case KILN_OP_SCAN:
  case KILN_OP_RESIZE:
  case KILN_OP_RESHAPE: verify_shape_ops(v, id); break;
  case KILN_OP_ADDPTR: {
    MlirType pt = operand_type(op, 0), ot = operand_type(op, 1);
    check_ptrs(v, pt);
    MlirType oe = kiln_ir_elem_type(ot);
    if (!mlirTypeIsAInteger(oe) ||
        (mlirIntegerTypeGetWidth(oe) != 32 && mlirIntegerTypeGetWidth(oe) != 64))
      verr(v, "offsets must be i32 or i64");
    check_same_shape(v, pt, "pointer", ot, "offset");
    if (!mlirTypeEqual(pt, result_type(op))) verr(v, "result type must equal the pointer type");
    break;
  }
  case KILN_OP_LOAD:
  case KILN_OP_STORE:
  case KILN_OP_ATOMIC_RMW:
  case KILN_OP_ATOMIC_CAS: verify_memory(v, id); break;
  case KILN_OP_DOT: verify_dot(v); break;
  case KILN_OP_REDUCE: verify_reduce(v); break;
  case KILN_OP_RAND: {
    MlirType st = operand_type(op, 0), ot = operand_type(op, 1), rt = result_type(op);
    if (!is_i32(st)) verr(v, "seed must be an i32 scalar");
    if (!is_i32(kiln_ir_elem_type(ot))) verr(v, "offsets must be an i32 tile");
    check_same_shape(v, ot, "offset", rt, "result");
    if (!mlirTypeIsAF32(kiln_ir_elem_type(rt)) && !is_i32(kiln_ir_elem_type(rt)))
      verr(v, "result must be an f32 tile (uniform) or an i32 tile (the raw word)");
    break;
  }
  case KILN_OP_PRINT: {
    MlirType t = operand_type(op, 0);
    if (kiln_ir_type_is_ptr(kiln_ir_elem_type(t))) verr(v, "prints numbers, not pointers");
    break;
  }
  case KILN_OP_ASSERT: {
    MlirType e = kiln_ir_elem_type(operand_type(op, 0));
    if (!mlirTypeIsAInteger(e) || mlirIntegerTypeGetWidth(e) != 1) verr(v, "condition must be i1");
    break;
  }
  default: break;
  }
}

static const char *user_name(KilnOpId id) {
  static const char *const names[KILN_OP_COUNT] = {[KILN_OP_PROGRAM_ID] = "program_id",
                                                   [KILN_OP_NUM_PROGRAMS] = "num_programs",
                                                   [KILN_OP_RANGE] = "arange",
                                                   [KILN_OP_SPLAT] = "splat",
                                                   [KILN_OP_BROADCAST] = "broadcast",
                                                   [KILN_OP_EXPAND_DIMS] = "expand_dims",
                                                   [KILN_OP_TRANS] = "trans",
                                                   [KILN_OP_ADDPTR] = "pointer arithmetic",
                                                   [KILN_OP_LOAD] = "load",
                                                   [KILN_OP_STORE] = "store",
                                                   [KILN_OP_ATOMIC_RMW] = "atomic",
                                                   [KILN_OP_ATOMIC_CAS] = "atomic_cas",
                                                   [KILN_OP_DOT] = "dot",
                                                   [KILN_OP_REDUCE] = "reduction",
                                                   [KILN_OP_FLIP] = "flip",
                                                   [KILN_OP_SCAN] = "scan",
                                                   [KILN_OP_RESHAPE] = "reshape",
                                                   [KILN_OP_RESIZE] = "resize",
                                                   [KILN_OP_RAND] = "rand",
                                                   [KILN_OP_PRINT] = "device_print",
                                                   [KILN_OP_ASSERT] = "device_assert"};
  return names[id];
}

MlirLogicalResult kiln_verify_module(MlirOperation module, void *opts) {
  (void)opts;
  KilnOpList l = {0};
  mlirOperationWalk(module, collect_kiln, &l, MlirWalkPreOrder);
  bool ok = true;
  for (size_t i = 0; i < l.n; i++) {
    KilnOpId id = kiln_ir_op_id(l.ops[i]);
    VCtx v = {l.ops[i], user_name(id), true};
    verify_op(&v, id);
    ok &= v.ok;
  }
  kiln_op_list_free(&l);
  /* IRDL's constraints and upstream verifiers are the safety net behind ours. */
  if (ok && !mlirOperationVerify(module)) ok = false;
  return ok ? mlirLogicalResultSuccess() : mlirLogicalResultFailure();
}

/* ---------------------------------------------------------------- DCE */

static bool has_side_effect(KilnOpId id) {
  return id == KILN_OP_STORE || id == KILN_OP_ATOMIC_RMW || id == KILN_OP_ATOMIC_CAS ||
         id == KILN_OP_PRINT || id == KILN_OP_ASSERT;
}

static bool unused(MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++)
    if (!mlirOpOperandIsNull(mlirValueGetFirstUse(mlirOperationGetResult(op, i)))) return false;
  return true;
}

MlirLogicalResult kiln_dce_module(MlirOperation module, void *opts) {
  (void)opts;
  /* Walking the post-order list backwards visits users before the ops they use within a
   * block, so chains die in one round; values used across regions may need another round. */
  for (bool changed = true; changed;) {
    changed = false;
    KilnOpList l = {0};
    mlirOperationWalk(module, collect_kiln, &l, MlirWalkPostOrder);
    for (size_t i = l.n; i-- > 0;) {
      MlirOperation op = l.ops[i];
      if (!has_side_effect(kiln_ir_op_id(op)) && unused(op)) {
        mlirOperationDestroy(op);
        changed = true;
      }
    }
    kiln_op_list_free(&l);
  }
  return mlirLogicalResultSuccess();
}
