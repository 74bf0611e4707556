/* axis_info.c - contiguity / divisibility / constancy of integer and pointer tiles.
 *
 * Why: a load or store may use a vector instruction along a dim only when the addresses there
 * are contiguous runs that start aligned.  The analysis is one forward walk in program order,
 * with rules per op (the same idea as Triton's AxisInfo):
 *   contig[d]    length of runs of +1 along d (for pointers: +1 element)
 *   divis[d]     a power of two dividing the first element of every run along d (pointers: in
 *                bytes)
 *   constancy[d] length of runs of equal values along d
 *   quad[d]      length of runs along d over which value >> 2 is one value: rand(seed, o) is a
 *                word of the Philox block at counter o >> 2, so such a run needs one block
 *                (o = 4 ctr + w, w in [0, 3], ctr equal over a pair of rows or of columns)
 *   same_bits[d] the bits of the index along d that can be flipped without changing the value
 *   ctr_bits[d]  likewise for the counter value >> 2 (logical).  Unlike runs these see elements
 *                apart: the attention's keep mask takes its counter from `i >> 4`,
 *                `i & 6` and `j >> 1`, one block for rows i and i + 8, which a thread of an
 *                mma tile holds together.  Every element-wise op keeps the bits all its
 *                operands have; runs give their low bits (a run of 2^k from a multiple of 2^k
 *                holds all flips of bits below k); `x & c` adds the bits c clears where x
 *                counts up with the index; `4 ctr + w`, w in [0, 3], has ctr's bits as
 *                counter bits.  Tile sizes are powers of two, so flipping an index bit below
 *                the size stays in the tile.
 *   pair_bits[d] likewise for value >> 1 (words 2 h and 2 h + 1, one half of the block:
 *                `2 x + w`, w in [0, 1], has x's bits), which lets a group take half a block.
 * Besides, `hi` bounds small non-negative values (every element in [0, hi]: `x & 3`, and
 * sums and products of such), which is what makes `4 ctr + w` stay in ctr's block.
 * All runs start at multiples of their length in the tile.
 * Kernel pointer arguments are 16-byte aligned (the runtime's allocations are); integer
 * arguments have unknown divisibility.  Everything not understood is "unknown" (1, 1, 1), which
 * only costs speed, never correctness. */
#include "kiln_mlir_internal.h"

#include <stdlib.h>
#include <string.h>

#define DIV_MAX ((int64_t)1 << 30)

/* An integer attribute of op, or dflt. */
static int64_t int_attr(MlirOperation op, const char *name, int64_t dflt) {
  int64_t v;
  return kiln_ir_get_int_attr(op, name, &v) ? v : dflt;
}

typedef struct Info {
  KilnAxisInfo a;
  bool known_const; /* a scalar or splat integer constant with value `value` */
  int64_t value;
  int64_t hi; /* every element is in [0, hi]; -1: not known */
} Info;

#define HI_MAX ((int64_t)1 << 30)

struct KilnAxisMap {
  KilnPtrMap map;
  Info **all;
  size_t n, cap;
};

static int64_t gcd64(int64_t a, int64_t b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static int64_t pow2_factor(int64_t v) {
  if (v == 0) return DIV_MAX;
  int64_t p = 1;
  while ((v & 1) == 0 && p < DIV_MAX) {
    v >>= 1;
    p <<= 1;
  }
  return p;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static Info unknown(MlirType t) {
  Info i;
  memset(&i, 0, sizeof i);
  i.a.rank = kiln_ir_rank(t);
  if (i.a.rank > KILN_AXIS_MAX_RANK) { /* not analysed: like a scalar nothing is known of */
    i.a.rank = 0;
    i.a.divis[0] = 1;
  }
  for (int d = 0; d < i.a.rank; d++)
    i.a.contig[d] = i.a.divis[d] = i.a.constancy[d] = i.a.quad[d] = 1;
  /* same_bits, ctr_bits and pair_bits: 0 (memset) */
  i.hi = -1;
  return i;
}

static Info *lookup(const KilnAxisMap *m, MlirValue v) { return kiln_ptr_map_get(&m->map, v.ptr); }

static void put(KilnAxisMap *m, MlirValue v, const Info *in) {
  Info *p = malloc(sizeof *p);
  KILN_ASSERT(p != NULL);
  *p = *in;
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 64;
    m->all = realloc(m->all, m->cap * sizeof *m->all);
    KILN_ASSERT(m->all != NULL);
  }
  m->all[m->n++] = p;
  kiln_ptr_map_put(&m->map, v.ptr, p);
}

static Info get(const KilnAxisMap *m, MlirValue v) {
  Info *p = m ? lookup(m, v) : NULL;
  return p ? *p : unknown(mlirValueGetType(v));
}

/* The divisibility every element of the value has (runs longer than 1 hold odd offsets). */
static int64_t overall_divis(const Info *i) {
  int64_t d = DIV_MAX;
  for (int k = 0; k < i->a.rank; k++) d = i->a.contig[k] > 1 ? 1 : min64(d, i->a.divis[k]);
  return i->a.rank ? d : i->a.divis[0];
}

/* Scalars are kept as rank 0 with their divisibility in divis[0]. */
static int64_t scalar_divis(const Info *i) { return i->a.rank ? overall_divis(i) : i->a.divis[0]; }

static Info from_scalar(MlirType t, int64_t div) {
  Info i = unknown(t);
  if (i.a.rank == 0) i.a.divis[0] = div;
  for (int d = 0; d < i.a.rank; d++) {
    i.a.divis[d] = div;
    i.a.constancy[d] = kiln_ir_dim(t, d);
  }
  return i;
}

/* Binary add-like rule; `sub` keeps contiguity only from the left operand. */
static Info add_rule(MlirType rt, const Info *x, const Info *y, bool sub, int64_t y_scale) {
  Info r = unknown(rt);
  if (r.a.rank == 0) {
    r.a.divis[0] = gcd64(x->a.divis[0], y->a.divis[0] * y_scale);
    if (x->known_const && y->known_const) {
      r.known_const = true;
      r.value = sub ? x->value - y->value : x->value + y->value;
    }
    return r;
  }
  for (int d = 0; d < r.a.rank; d++) {
    int64_t xc = x->a.rank ? x->a.contig[d] : 1, yc = y->a.rank ? y->a.contig[d] : 1;
    int64_t xk = x->a.rank ? x->a.constancy[d] : kiln_ir_dim(rt, d);
    int64_t yk = y->a.rank ? y->a.constancy[d] : kiln_ir_dim(rt, d);
    int64_t xd = x->a.rank ? x->a.divis[d] : x->a.divis[0];
    int64_t yd = (y->a.rank ? y->a.divis[d] : y->a.divis[0]) * y_scale;
    r.a.contig[d] = max64(gcd64(xc, yk), sub ? 1 : gcd64(xk, yc));
    r.a.divis[d] = gcd64(xd, yd);
    r.a.constancy[d] = gcd64(xk, yk);
  }
  return r;
}

static Info mul_rule(MlirType rt, const Info *x, const Info *y) {
  Info r = unknown(rt);
  if (r.a.rank == 0) {
    r.a.divis[0] = min64(x->a.divis[0] * y->a.divis[0], DIV_MAX);
    if (x->known_const && y->known_const) {
      r.known_const = true;
      r.value = x->value * y->value;
    }
    return r;
  }
  for (int d = 0; d < r.a.rank; d++) {
    int64_t xk = x->a.constancy[d], yk = y->a.constancy[d];
    r.a.constancy[d] = gcd64(xk, yk);
    /* x * 1 keeps x's runs; anything else breaks them. */
    if (y->known_const && y->value == 1) {
      r.a.contig[d] = x->a.contig[d];
      r.a.divis[d] = x->a.divis[d];
    } else if (x->known_const && x->value == 1) {
      r.a.contig[d] = y->a.contig[d];
      r.a.divis[d] = y->a.divis[d];
    } else {
      r.a.contig[d] = 1;
      r.a.divis[d] = min64(overall_divis(x) * overall_divis(y), DIV_MAX);
    }
  }
  return r;
}

/* Bounds of a + b and a * b from the operands' bounds; -1 when one is unknown or the result
 * could pass HI_MAX. */
static int64_t hi_add(int64_t a, int64_t b) {
  return a < 0 || b < 0 || a + b > HI_MAX ? -1 : a + b;
}
static int64_t hi_mul(int64_t a, int64_t b) {
  return a < 0 || b < 0 || (b && a > HI_MAX / b) ? -1 : a * b;
}

/* x's counter runs along d (n the dim's size): a scalar's and a value in [0, 3]'s (whose
 * value >> 2 is 0) are the whole dim. */
static int64_t quad_of(const Info *x, int d, int64_t n) {
  return !x->a.rank || (x->hi >= 0 && x->hi <= 3) ? n : x->a.quad[d];
}

/* The index bits along d that leave x (a scalar: every bit) or its counter x >> 2 (a value in
 * [0, 3]: every bit, the counter being 0) unchanged. */
#define ALL_BITS INT64_MAX
static int64_t same_of(const Info *x, int d) { return x->a.rank ? x->a.same_bits[d] : ALL_BITS; }
static int64_t ctr_of(const Info *x, int d) {
  return !x->a.rank || (x->hi >= 0 && x->hi <= 3) ? ALL_BITS : x->a.ctr_bits[d];
}
static int64_t pair_of(const Info *x, int d) {
  return !x->a.rank || (x->hi >= 0 && x->hi <= 1) ? ALL_BITS : x->a.pair_bits[d];
}

/* Counter runs of x + y: where x is a multiple of 4 at every element, (x + y) >> 2 is
 * (x >> 2) + (y >> 2) (mod 2^30), one value where both are; the same with x and y swapped.
 * `4 ctr + w` with w in [0, 3] so has ctr's runs of equal values. */
static void quad_add(Info *r, MlirType rt, const Info *x, const Info *y) {
  for (int d = 0; d < r->a.rank; d++) {
    int64_t n = kiln_ir_dim(rt, d);
    int64_t xk = x->a.rank ? x->a.constancy[d] : n, yk = y->a.rank ? y->a.constancy[d] : n;
    if (scalar_divis(x) >= 4) r->a.quad[d] = max64(r->a.quad[d], gcd64(xk, quad_of(y, d, n)));
    if (scalar_divis(y) >= 4) r->a.quad[d] = max64(r->a.quad[d], gcd64(yk, quad_of(x, d, n)));
    if (scalar_divis(x) >= 4) r->a.ctr_bits[d] |= same_of(x, d) & ctr_of(y, d);
    if (scalar_divis(y) >= 4) r->a.ctr_bits[d] |= same_of(y, d) & ctr_of(x, d);
    if (scalar_divis(x) >= 2) r->a.pair_bits[d] |= same_of(x, d) & pair_of(y, d);
    if (scalar_divis(y) >= 2) r->a.pair_bits[d] |= same_of(y, d) & pair_of(x, d);
  }
}

/* x >> s (arithmetic or logical) for a known s: x's runs from multiples of 2^s become runs of
 * equal values (floor division keeps them together; for the logical shift 2^32 is a multiple
 * of 2^s), and an element that is its own run keeps its divisibility beyond 2^s. */
static void shr_rule(Info *r, const Info *x, const Info *y) {
  if (!y->known_const || y->value < 0 || y->value > 30) return;
  int64_t p = (int64_t)1 << y->value;
  r->hi = x->hi >= 0 ? x->hi >> y->value : -1;
  if (r->a.rank == 0) {
    r->a.divis[0] = max64(1, x->a.divis[0] / p);
    r->known_const = x->known_const && x->value >= 0;
    r->value = x->value >= 0 ? x->value >> y->value : 0;
    return;
  }
  for (int d = 0; d < r->a.rank; d++) {
    r->a.constancy[d] = max64(x->a.constancy[d], gcd64(gcd64(x->a.contig[d], x->a.divis[d]), p));
    r->a.divis[d] = x->a.contig[d] == 1 ? max64(1, x->a.divis[d] / p) : 1;
  }
}

/* x & c for a known c >= 0: every element in [0, c]; for c = 2^s - 1, x's runs from multiples
 * of g (a power of two <= 2^s) stay runs of g (the low bits count up from a multiple of g). */
static void and_rule(Info *r, const Info *x, const Info *y) {
  const Info *c = y->known_const ? y : x->known_const ? x : NULL;
  const Info *v = c == y ? x : y;
  if (!c || c->value < 0) return;
  r->hi = c->value <= HI_MAX ? c->value : -1;
  if (c->value > HI_MAX || (c->value & (c->value + 1)) != 0 || !v->a.rank) return;
  for (int d = 0; d < r->a.rank; d++) {
    int64_t g = gcd64(gcd64(v->a.contig[d], v->a.divis[d]), c->value + 1);
    if (g > 1) r->a.contig[d] = r->a.divis[d] = g;
  }
}

/* x & c for a known c: where x counts up with the index from multiples of g (a power of two),
 * index bit k < log2 g is value bit k, so flipping it leaves x & c unchanged when c clears it
 * (`i & 6` is one value over i, i ^ 1, i ^ 8 and i ^ 9 where i counts up from multiples of 16). */
static void and_bits_rule(Info *r, const Info *x, const Info *y) {
  const Info *c = y->known_const ? y : x->known_const ? x : NULL;
  const Info *v = c == y ? x : y;
  if (!c || !v->a.rank) return;
  for (int d = 0; d < r->a.rank; d++) {
    int64_t g = gcd64(v->a.contig[d], v->a.divis[d]);
    if (g > 1) r->a.same_bits[d] |= (g - 1) & ~c->value;
  }
}

/* The bits a run of n elements from a multiple of n holds: those below its largest power-of-two
 * factor. */
static int64_t run_bits(int64_t n) { return n >= 1 ? pow2_factor(n) - 1 : 0; }

/* What every rule's result has besides: an element-wise op (every arith op: its operands and
 * result have one shape) is unchanged by flips that change none of its operands; runs of equal
 * values and of equal counters hold their low bits; equal values share a counter. */
static void finish_bits(Info *r, MlirOperation op, const KilnAxisMap *m) {
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  bool elementwise = name.length > 6 && strncmp(name.data, "arith.", 6) == 0 &&
                     !kiln_ir_op_is(op, "arith.constant");
  for (int d = 0; d < r->a.rank; d++) {
    if (elementwise) {
      int64_t all = ALL_BITS;
      for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++) {
        Info o = get(m, mlirOperationGetOperand(op, i));
        all &= o.a.rank == r->a.rank ? o.a.same_bits[d] : o.a.rank == 0 ? ALL_BITS : 0;
      }
      r->a.same_bits[d] |= all;
    }
    r->a.same_bits[d] |= run_bits(r->a.constancy[d]);
    r->a.pair_bits[d] |= r->a.same_bits[d];
    r->a.ctr_bits[d] |= r->a.pair_bits[d] | run_bits(r->a.quad[d]);
  }
}

/* What every rule's result has besides: equal values share a counter, and a contiguous run
 * from a multiple of g <= 4 is one block's words. */
static void finish_quad(Info *r) {
  for (int d = 0; d < r->a.rank; d++) {
    int64_t g = r->a.contig[d] > 1 ? gcd64(gcd64(r->a.contig[d], r->a.divis[d]), 4) : 1;
    r->a.quad[d] = max64(r->a.quad[d], max64(r->a.constancy[d], g));
  }
}

static void analyze_op(KilnAxisMap *m, MlirOperation op);
static void apply_hints(MlirOperation op, Info *r);

/* Constancy of a comparison (what makes a mask one predicate per vector).  Equal operands give
 * equal results.  And `x < y` with x contiguous from a multiple of s and y constant and a
 * multiple of s over aligned blocks of s elements is one value on each block: the block's x are
 * k s .. k s + s - 1, all below y or none (Triton's rule for masks like `c < cols`).  `x >= y`
 * is its negation; `y > x` and `y <= x` the same with the operands swapped. */
static void cmp_rule(Info *r, MlirOperation op, const Info *x, const Info *y) {
  int64_t pred = int_attr(op, "predicate", -1);
  /* arith.cmpi predicates: slt 2, sle 3, sgt 4, sge 5, ult 6, ule 7, ugt 8, uge 9 */
  bool x_runs = pred == 2 || pred == 5 || pred == 6 || pred == 9;
  bool y_runs = pred == 3 || pred == 4 || pred == 7 || pred == 8;
  for (int d = 0; d < r->a.rank; d++) {
    r->a.constancy[d] = 1;
    if (!x->a.rank || !y->a.rank) /* tiles compare tiles; a scalar operand is not analysed */
      continue;
    int64_t n = gcd64(x->a.constancy[d], y->a.constancy[d]);
    const Info *run = x_runs ? x : y_runs ? y : NULL, *lim = x_runs ? y : x;
    if (run) {
      int64_t s = gcd64(gcd64(run->a.contig[d], run->a.divis[d]),
                        gcd64(lim->a.constancy[d], overall_divis(lim)));
      n = max64(n, s);
    }
    r->a.constancy[d] = n;
  }
}

static void analyze_region(KilnAxisMap *m, MlirRegion r) {
  for (MlirBlock b = mlirRegionGetFirstBlock(r); !mlirBlockIsNull(b);
       b = mlirBlockGetNextInRegion(b))
    for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
         o = mlirOperationGetNextInBlock(o))
      analyze_op(m, o);
}

static void analyze_op(KilnAxisMap *m, MlirOperation op) {
  intptr_t nres = mlirOperationGetNumResults(op);
  if (kiln_ir_op_is(op, "scf.for")) {
    /* The induction variable: lo + i*step, so divisible by gcd(lo, step). */
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
    Info lo = get(m, mlirOperationGetOperand(op, 0)), st = get(m, mlirOperationGetOperand(op, 2));
    MlirValue iv = mlirBlockGetArgument(body, 0);
    Info ivi = unknown(mlirValueGetType(iv));
    ivi.a.divis[0] = gcd64(scalar_divis(&lo), scalar_divis(&st));
    put(m, iv, &ivi);
  }
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++)
    analyze_region(m, mlirOperationGetRegion(op, r));
  if (nres != 1) return;
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType rt = mlirValueGetType(res);
  MlirType et = kiln_ir_elem_type(rt);
  if (!mlirTypeIsAInteger(et) && !kiln_ir_type_is_ptr(et)) return;
  Info r = unknown(rt);
  KilnOpId id = kiln_ir_op_id(op);
  intptr_t nops = mlirOperationGetNumOperands(op);
  Info x = nops > 0 ? get(m, mlirOperationGetOperand(op, 0)) : unknown(rt);
  Info y = nops > 1 ? get(m, mlirOperationGetOperand(op, 1)) : unknown(rt);
  if (id == KILN_OP_RANGE) {
    int64_t start = int_attr(op, "start", 0);
    r.a.contig[0] = kiln_ir_dim(rt, 0);
    r.a.divis[0] = pow2_factor(start);
  } else if (id == KILN_OP_SPLAT) {
    r = from_scalar(rt, scalar_divis(&x));
    r.known_const = x.known_const;
    r.value = x.value;
    r.hi = x.hi;
  } else if (id == KILN_OP_EXPAND_DIMS) {
    int axis = (int)int_attr(op, "axis", 0);
    int k = 0;
    for (int d = 0; d < r.a.rank; d++) {
      if (d == axis) {
        r.a.contig[d] = 1;
        r.a.constancy[d] = 1;
        r.a.divis[d] = overall_divis(&x);
        continue;
      }
      r.a.contig[d] = x.a.contig[k];
      r.a.divis[d] = x.a.divis[k];
      r.a.constancy[d] = x.a.constancy[k];
      r.a.quad[d] = x.a.quad[k];
      r.a.same_bits[d] = x.a.same_bits[k];
      r.a.ctr_bits[d] = x.a.ctr_bits[k];
      r.a.pair_bits[d] = x.a.pair_bits[k];
      k++;
    }
    r.known_const = x.known_const;
    r.value = x.value;
    r.hi = x.hi;
  } else if (id == KILN_OP_BROADCAST || id == KILN_OP_CONVERT_LAYOUT) {
    MlirType xt = mlirValueGetType(mlirOperationGetOperand(op, 0));
    for (int d = 0; d < r.a.rank; d++) {
      bool stretched = kiln_ir_dim(xt, d) == 1 && kiln_ir_dim(rt, d) != 1;
      r.a.contig[d] = stretched ? 1 : x.a.contig[d];
      r.a.divis[d] = stretched ? overall_divis(&x) : x.a.divis[d];
      r.a.constancy[d] = stretched ? kiln_ir_dim(rt, d) : x.a.constancy[d];
      r.a.quad[d] = stretched ? kiln_ir_dim(rt, d) : x.a.quad[d];
      r.a.same_bits[d] = stretched ? ALL_BITS : x.a.same_bits[d];
      r.a.ctr_bits[d] = stretched ? ALL_BITS : x.a.ctr_bits[d];
      r.a.pair_bits[d] = stretched ? ALL_BITS : x.a.pair_bits[d];
    }
    r.known_const = x.known_const;
    r.value = x.value;
    r.hi = x.hi;
  } else if (id == KILN_OP_ADDPTR) {
    r = add_rule(rt, &x, &y, false, kiln_ir_elem_bytes(kiln_ir_ptr_elem(kiln_ir_elem_type(rt))));
    r.known_const = false;
  } else if (id == KILN_OP_PROGRAM_ID || id == KILN_OP_NUM_PROGRAMS) {
    r.a.divis[0] = 1;
  } else if (kiln_ir_op_is(op, "arith.constant")) {
    MlirAttribute v = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
    if (mlirAttributeIsAInteger(v)) {
      r.known_const = true;
      r.value = mlirIntegerAttrGetValueInt(v);
    } else if (mlirAttributeIsADenseElements(v) && mlirDenseElementsAttrIsSplat(v) &&
               mlirTypeIsAInteger(et) && mlirIntegerTypeGetWidth(et) > 1) {
      MlirAttribute s = mlirDenseElementsAttrGetSplatValue(v);
      r.known_const = true;
      r.value = mlirIntegerAttrGetValueInt(s);
    }
    if (r.known_const) {
      Info c = from_scalar(rt, pow2_factor(r.value));
      c.known_const = true;
      c.value = r.value;
      c.hi = r.value >= 0 && r.value <= HI_MAX ? r.value : -1;
      r = c;
    }
  } else if (kiln_ir_op_is(op, "arith.addi")) {
    r = add_rule(rt, &x, &y, false, 1);
    r.hi = hi_add(x.hi, y.hi);
    quad_add(&r, rt, &x, &y);
  } else if (kiln_ir_op_is(op, "arith.subi")) {
    r = add_rule(rt, &x, &y, true, 1);
  } else if (kiln_ir_op_is(op, "arith.muli")) {
    r = mul_rule(rt, &x, &y);
    r.hi = hi_mul(x.hi, y.hi);
  } else if (kiln_ir_op_is(op, "arith.shrsi") || kiln_ir_op_is(op, "arith.shrui")) {
    shr_rule(&r, &x, &y);
  } else if (kiln_ir_op_is(op, "arith.remsi") || kiln_ir_op_is(op, "arith.remui")) {
    for (int d = 0; d < r.a.rank; d++) {
      int64_t yd = y.a.rank ? overall_divis(&y) : y.a.divis[0];
      bool y_uniform = y.a.rank == 0 || y.a.constancy[d] == kiln_ir_dim(rt, d);
      r.a.contig[d] = y_uniform ? gcd64(x.a.contig[d], yd) : 1;
      r.a.divis[d] = gcd64(x.a.divis[d], yd);
      r.a.constancy[d] = gcd64(x.a.constancy[d], y.a.rank ? y.a.constancy[d] : x.a.constancy[d]);
    }
  } else if (kiln_ir_op_is(op, "arith.extsi") || kiln_ir_op_is(op, "arith.extui") ||
             kiln_ir_op_is(op, "arith.index_cast")) {
    r = x;
  } else if (kiln_ir_op_is(op, "arith.cmpi")) {
    cmp_rule(&r, op, &x, &y);
  } else if (kiln_ir_op_is(op, "arith.andi") || kiln_ir_op_is(op, "arith.ori") ||
             kiln_ir_op_is(op, "arith.xori")) {
    /* bitwise: equal where both operands are (a mask `r < rows && c < cols`) */
    for (int d = 0; d < r.a.rank; d++)
      r.a.constancy[d] = gcd64(x.a.rank ? x.a.constancy[d] : kiln_ir_dim(rt, d),
                               y.a.rank ? y.a.constancy[d] : kiln_ir_dim(rt, d));
    if (kiln_ir_op_is(op, "arith.andi")) {
      and_rule(&r, &x, &y);
      and_bits_rule(&r, &x, &y);
    }
  } else if (kiln_ir_op_is(op, "arith.divsi") || kiln_ir_op_is(op, "arith.divui")) {
    for (int d = 0; d < r.a.rank; d++) r.a.constancy[d] = x.a.constancy[d];
  }
  apply_hints(op, &r);
  finish_quad(&r);
  finish_bits(&r, op, m);
  put(m, res, &r);
}

/* An integer attribute's value; 0 when absent or not an integer. */
static int64_t hint_of(MlirAttribute a) {
  return !mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a) ? mlirIntegerAttrGetValueInt(a) : 0;
}

/* The user's promises (multiple_of, contiguous / max_contiguous, recorded by mlirgen) raise
 * what the rules found: a multiple of n has every element divisible by n's power-of-two part;
 * a contiguous promise is about the fastest (last) dim. */
static void apply_hint_values(Info *r, int64_t multiple, int64_t contig) {
  if (multiple > 0) {
    int64_t p = pow2_factor(multiple);
    int n = r->a.rank ? r->a.rank : 1;
    for (int d = 0; d < n; d++) r->a.divis[d] = max64(r->a.divis[d], p);
  }
  if (contig > 0 && r->a.rank > 0) {
    int d = r->a.rank - 1;
    r->a.contig[d] = max64(r->a.contig[d], contig);
  }
}

static void apply_hints(MlirOperation op, Info *r) {
  int64_t mult = int_attr(op, "kiln.multiple_of", 0);
  int64_t contig = int_attr(op, "kiln.contiguous", 0);
  int64_t maxc = int_attr(op, "kiln.max_contiguous", 0);
  apply_hint_values(r, mult, contig > maxc ? contig : maxc);
}

/* Hints on kernel parameters live in the func's arg_attrs (one dictionary per argument). */
static void apply_arg_hints(MlirOperation func, intptr_t i, Info *in) {
  MlirAttribute all =
      mlirOperationGetAttributeByName(func, mlirStringRefCreateFromCString("arg_attrs"));
  if (mlirAttributeIsNull(all) || !mlirAttributeIsAArray(all) ||
      i >= mlirArrayAttrGetNumElements(all))
    return;
  MlirAttribute d = mlirArrayAttrGetElement(all, i);
  if (!mlirAttributeIsADictionary(d)) return;
  int64_t c1 = hint_of(
      mlirDictionaryAttrGetElementByName(d, mlirStringRefCreateFromCString("kiln.contiguous")));
  int64_t c2 = hint_of(
      mlirDictionaryAttrGetElementByName(d, mlirStringRefCreateFromCString("kiln.max_contiguous")));
  apply_hint_values(in,
                    hint_of(mlirDictionaryAttrGetElementByName(
                        d, mlirStringRefCreateFromCString("kiln.multiple_of"))),
                    c1 > c2 ? c1 : c2);
}

static MlirWalkResult find_high_rank(MlirOperation op, void *user) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++)
    if (kiln_ir_rank(mlirValueGetType(mlirOperationGetResult(op, i))) > KILN_AXIS_MAX_RANK) {
      *(bool *)user = true;
      return MlirWalkResultInterrupt;
    }
  return MlirWalkResultAdvance;
}

KilnAxisMap *kiln_axis_analyze(MlirOperation func) {
  bool high = false; /* the rules keep KILN_AXIS_MAX_RANK dims a value */
  mlirOperationWalk(func, find_high_rank, &high, MlirWalkPreOrder);
  if (high) return NULL;
  KilnAxisMap *m = calloc(1, sizeof *m);
  KILN_ASSERT(m != NULL);
  MlirRegion body = mlirOperationGetRegion(func, 0);
  MlirBlock entry = mlirRegionGetFirstBlock(body);
  for (intptr_t i = 0; i < mlirBlockGetNumArguments(entry); i++) {
    MlirValue a = mlirBlockGetArgument(entry, i);
    Info in = unknown(mlirValueGetType(a));
    /* Pointer arguments: 16-byte aligned; integers: nothing known. */
    in.a.divis[0] = kiln_ir_type_is_ptr(mlirValueGetType(a)) ? 16 : 1;
    apply_arg_hints(func, i, &in);
    put(m, a, &in);
  }
  analyze_region(m, body);
  return m;
}

void kiln_axis_free(KilnAxisMap *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n; i++) free(m->all[i]);
  free(m->all);
  kiln_ptr_map_free(&m->map);
  free(m);
}

KilnAxisInfo kiln_axis_get(const KilnAxisMap *m, MlirValue v) { return get(m, v).a; }

int kiln_axis_vec(const KilnAxisMap *m, MlirValue ptrs, int dim, int elem_bits) {
  Info i = get(m, ptrs);
  if (i.a.rank == 0 || elem_bits <= 0) return 1;
  int64_t eb = elem_bits >= 8 ? elem_bits / 8 : 1;
  int64_t v = min64(i.a.contig[dim], i.a.divis[dim] / eb);
  v = min64(v, 16 / eb);
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return (int)p;
}
