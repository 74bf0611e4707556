/* kiln_mlir_internal.h - shared helpers inside mlir-dialect/ (not for other folders). */
#ifndef KILN_MLIR_INTERNAL_H
#define KILN_MLIR_INTERNAL_H

#include "kiln_mlir.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"
#include "llvm-c/Types.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Broken internal invariants: always on, never compiled out. */
#define KILN_ASSERT(cond)                                                                          \
  do {                                                                                             \
    if (!(cond)) kiln_mlir_assert_fail(__FILE__, __LINE__, __func__, #cond);                       \
  } while (0)
_Noreturn void kiln_mlir_assert_fail(const char *file, int line, const char *func,
                                     const char *cond);

/* A growable string: printing MLIR objects into C strings. */
typedef struct KilnStr {
  char *data;
  size_t len, cap;
} KilnStr;
void kiln_str_append(KilnStr *s, const char *p, size_t n);
void kiln_str_appendf(KilnStr *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kiln_str_free(KilnStr *s);
/* MlirStringCallback appending to a KilnStr passed as userData. */
void kiln_str_callback(MlirStringRef ref, void *user);
/* Printed forms (caller frees .data). */
KilnStr kiln_print_type(MlirType t);
KilnStr kiln_print_loc(MlirLocation l);

/* Generic op creation: every op in mlir-dialect/ is created through here (or the typed
 * builders built on it). */
typedef struct KilnOpSpec {
  const char *name;
  MlirLocation loc;
  const MlirValue *operands;
  size_t n_operands;
  const MlirType *results;
  size_t n_results;
  const MlirNamedAttribute *attrs;
  size_t n_attrs;
  MlirRegion *regions; /* ownership moves to the op */
  size_t n_regions;
  const MlirBlock *successors; /* a branch's destinations (cf.br, cf.cond_br) */
  size_t n_successors;
} KilnOpSpec;
MlirOperation kiln_ir_create(KilnIRBuilder *b, const KilnOpSpec *spec);
MlirNamedAttribute kiln_ir_named(MlirContext ctx, const char *name, MlirAttribute a);
MlirAttribute kiln_ir_attr_i32(MlirContext ctx, int32_t v);
/* Integer attribute value by name (returns false when missing or not an integer). */
bool kiln_ir_get_int_attr(MlirOperation op, const char *name, int64_t *out);
/* String attribute by name into buf; false when missing. */
bool kiln_ir_get_str_attr(MlirOperation op, const char *name, char *buf, size_t cap);
bool kiln_ir_op_is(MlirOperation op, const char *name);
/* Op name as a NUL-terminated copy into buf. */
void kiln_ir_op_name(MlirOperation op, char *buf, size_t cap);

/* Shape helpers on tensor types (rank 0 for scalars). */
int kiln_ir_rank(MlirType t);
int64_t kiln_ir_dim(MlirType t, int i);

/* Emits an error diagnostic at loc, printf-style. */
void kiln_ir_error(MlirLocation loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Adds to an LLVM module translated from m, per kernel of m's kiln.arg_elem_bytes record, a
 * constant u32 array `kiln_offsets_NAME` = {offset bits, n parameters, element bytes of each
 * (0 for scalars)} in address space `addrspace` (0 host, 4 PTX .const), for the runtime's
 * launch check (emit.c).  Nothing for a module without the record. */
void kiln_mlir_add_offset_tables(MlirModule m, LLVMModuleRef mod, unsigned addrspace);

/* ---------------------------------------------------------------- passes
 * Every pass of ours (verify, kiln-dce, convert-kiln-to-cpu, the GPU layouts, the SIMT lowering,
 * the emu rewrite) is one external pass whose body runs on the whole module with its options: a
 * copy of opts[0..opts_size) the pass owns (NULL and 0 for none).  One static MlirTypeID per pass,
 * aligned as MLIR requires. */
typedef MlirLogicalResult (*KilnPassBody)(MlirOperation module, void *opts);
MlirPass kiln_pass_make(MlirTypeID id, const char *name, const char *arg, const char *desc,
                        KilnPassBody run, const void *opts, size_t opts_size);

/* The front's pass bodies (passes.c). */
MlirLogicalResult kiln_verify_module(MlirOperation module, void *opts);
MlirLogicalResult kiln_dce_module(MlirOperation module, void *opts);
/* widen-offsets (widen_offsets.c); opts is a KilnStageOptions. */
MlirLogicalResult kiln_widen_offsets_module(MlirOperation module, void *opts);

/* Loops that may end early (exit_loops.c).  mlirgen marks such an scf.for (its first iter_arg is
 * its i1 break flag; `unbounded`: its range only counts, a `while`); a back that rebuilds a loop
 * copies the marks onto the new one and keeps the flag first; kiln-exit-loops then turns it into
 * an scf.while. */
void kiln_ir_copy_loop_marks(MlirOperation from, MlirOperation to);
MlirLogicalResult kiln_exit_loops_module(MlirOperation module, void *opts);
/* kiln-scf-to-cf (scf_to_cf.c): scf.if and scf.for to blocks and branches, in linear time. */
MlirLogicalResult kiln_scf_to_cf_module(MlirOperation module, void *opts);

/* ---------------------------------------------------------------- the rewrite kit (rewrite.c)
 * What the lowerings that rebuild the IR share (cpu/, gpu/lower*.c, gpu/emu_lower.c). */

/* A map from pointers (an MlirValue's or MlirOperation's .ptr, an interned string) to anything;
 * zero-initialized is empty.  Keys are never NULL. */
typedef struct KilnPtrMap {
  const void **keys;
  void **vals;
  size_t n, cap;
} KilnPtrMap;
void *kiln_ptr_map_get(const KilnPtrMap *m, const void *key); /* NULL when absent */
void kiln_ptr_map_put(KilnPtrMap *m, const void *key, void *val);
void kiln_ptr_map_free(KilnPtrMap *m); /* the table, not the values */

/* A growable list of operations; zero-initialized is empty. */
typedef struct KilnOpList {
  MlirOperation *ops;
  size_t n, cap;
} KilnOpList;
void kiln_op_list_push(KilnOpList *l, MlirOperation op);
void kiln_op_list_free(KilnOpList *l);
/* The top-level `func_op` ops ("func.func", "llvm.func") of module carrying the unit attribute
 * `marker` ("kiln.kernel", "nvvm.kernel"), in order, however many: collected first, so that the
 * caller may replace each one as it goes.  Free with kiln_op_list_free. */
KilnOpList kiln_ir_kernels(MlirOperation module, const char *func_op, const char *marker);

/* An op `name` at b with these operands, results and attributes (kiln_ir_create without the
 * spec); make1 returns its one result. */
MlirOperation kiln_ir_make(KilnIRBuilder *b, MlirLocation loc, const char *name,
                           const MlirValue *ops, size_t n, const MlirType *res, size_t nres,
                           const MlirNamedAttribute *attrs, size_t nattrs);
MlirValue kiln_ir_make1(KilnIRBuilder *b, MlirLocation loc, const char *name, const MlirValue *ops,
                        size_t n, MlirType res, const MlirNamedAttribute *attrs, size_t nattrs);

/* Bits of one element of t (a scalar type, or a tile's element type): iN is N, f16/bf16 16, f32
 * 32, f64 64, and a pointer (!kiln.ptr<T> or !llvm.ptr) 64, whatever it points to: what a
 * pointer points to is kiln_ir_ptr_elem's, for the caller to ask.  0 for any other type. */
int kiln_ir_elem_bits(MlirType t);
/* Bytes one element takes in memory: the bits rounded up (an i1 takes a byte). */
int64_t kiln_ir_elem_bytes(MlirType t);

/* llvm::AtomicRMWInst's binary operations, as the LLVM dialect's `bin_op` stores them. */
enum {
  KILN_LLVM_ATOMIC_XCHG = 0,
  KILN_LLVM_ATOMIC_ADD = 1,
  KILN_LLVM_ATOMIC_MAX = 7,
  KILN_LLVM_ATOMIC_MIN = 8,
  KILN_LLVM_ATOMIC_UMAX = 9,
  KILN_LLVM_ATOMIC_UMIN = 10,
  KILN_LLVM_ATOMIC_FADD = 11,
  KILN_LLVM_ATOMIC_FMAX = 13,
  KILN_LLVM_ATOMIC_FMIN = 14,
};
/* The bin_op of kiln.atomic_rmw `op` (its `kind`) on elements of type elem; false for a kind
 * with none. */
bool kiln_ir_atomic_bin_op(MlirOperation op, MlirType elem, int64_t *out);

/* device_print's pieces, one copy for the cpu and GPU lowerings.  kiln_ir_print_format: the
 * printf format of a print of a rank-`rank` tile (0: a scalar) of `elem` with `text`
 * ("pid (X, Y, Z) idx (I, J) TEXT: VALUE\n", a '%' of the text doubled); malloc'd, the caller
 * frees it; NULL when out of memory. */
char *kiln_ir_print_format(MlirStringRef text, int rank, MlirType elem);
/* `llvm.func @name` of type fnty, external, at the top of module unless a symbol of that name
 * exists. */
void kiln_ir_declare_external_func(MlirOperation module, MlirLocation loc, const char *name,
                                   MlirType fnty);
/* text (with its NUL) as a fresh internal constant global "prefix_N" at the top of module; its
 * address (an llvm.mlir.addressof built at b). */
MlirValue kiln_ir_module_string(KilnIRBuilder *b, MlirLocation loc, MlirOperation module,
                                const char *prefix, const char *text);

/* host_float16.c: defines, in a host module, the float conversions LLVM's code generator may
 * call a runtime library for (weak, hidden). false with a message in err on failure. */
bool kiln_host_builtins_link(LLVMModuleRef mod, char *err, size_t cap);
/* host_float16.c: every f16/bf16 value becomes a 16-bit integer but for the one instruction that
 * computes or consumes it as a float, and f32 <-> bf16 conversions become integer code, so that
 * no 16-bit float crosses a block or a call (run after LLVM's optimizations, before code
 * generation, on a module that kiln_host_builtins_link completed). */
void kiln_host_float16_fixup(LLVMModuleRef mod);

#define KILN_AXIS_MAX_RANK 4

/* ---------------------------------------------------------------- axis analysis (axis_info.c)
 * What the GPU back's vector accesses, cp.async copies and Philox sharing, and the cpu back's
 * vector loads and stores, are decided by.  Tiles of rank above KILN_AXIS_MAX_RANK (the
 * language's limit) are not analysed: kiln_axis_analyze returns NULL for a function that has
 * one, and every caller takes a NULL map as "nothing known".
 * Per tile of integers or pointers, per dim: contiguity (runs of +1, in elements), divisibility
 * (largest power of two dividing the first element of each run; bytes for pointers), constancy
 * (runs of equal values), and quad (runs of equal `value >> 2`: rand's Philox counter, so one
 * block serves such a run).  Values unknown to the analysis get 1 everywhere.  Besides runs,
 * same_bits and ctr_bits say which bits of an element's index along a dim can be flipped
 * without changing the value, or its counter `value >> 2` (logical): elements a thread holds
 * at indices differing only in ctr_bits (rows r and r + 8 of an mma tile, say) share a Philox
 * block though they are no run.  Unknown: 0. */
typedef struct KilnAxisInfo {
  int rank;
  int64_t contig[KILN_AXIS_MAX_RANK];
  int64_t divis[KILN_AXIS_MAX_RANK];
  int64_t constancy[KILN_AXIS_MAX_RANK];
  int64_t quad[KILN_AXIS_MAX_RANK];
  int64_t same_bits[KILN_AXIS_MAX_RANK];
  int64_t ctr_bits[KILN_AXIS_MAX_RANK];
  int64_t pair_bits[KILN_AXIS_MAX_RANK]; /* likewise for value >> 1: one half of the block */
} KilnAxisInfo;

typedef struct KilnAxisMap KilnAxisMap;
/* Analyses every value of func (a func.func) in program order (NULL: a tile of rank above
 * KILN_AXIS_MAX_RANK).  Free with ..._free. */
KilnAxisMap *kiln_axis_analyze(MlirOperation func);
void kiln_axis_free(KilnAxisMap *m);
/* The info of v (the unknown info when v was not analysed). */
KilnAxisInfo kiln_axis_get(const KilnAxisMap *m, MlirValue v);
/* The widest vector (elements) an access through pointer tile `ptrs` may use along `dim`, for
 * elements of elem_bits, capped at 128 bits. */
int kiln_axis_vec(const KilnAxisMap *m, MlirValue ptrs, int dim, int elem_bits);

#endif
