/* shared.c - shared-memory buffers in the IR: their type and their printable encoding.
 *
 * Why: the pipelining pass (pipeline_pass.c) stages dot operands in rings of shared buffers, and
 * the lowering, the allocator and FileCheck must all read the same description of them.  A
 * buffer is the result of kiln.local_alloc, a memref whose shape is [stages, rows, cols] (the
 * tile's shape after the stage dim) and whose memory space is a builtin DictionaryAttr, the
 * shared encoding (as tensor layouts are dictionaries, layout.c):
 *   memref<3x128x32xf16, {kind = "shared", vec = 8 : i32, perPhase = 2 : i32,
 *                         maxPhase = 4 : i32, order = array<i32: 1, 0>}>
 * order is the tile's dims fastest first in shared memory: [1, 0] a row-major staging (rows of
 * the staged tile are the tile's rows), [0, 1] a transposed one (a column-major operand staged
 * S[col][row], so its 16-byte copies stay vectors).  The swizzle is lower_dot.c's: 16-byte chunk
 * c of staged row r lives at chunk c ^ ((r / perPhase) % maxPhase), vec = 8 16-bit elements a
 * chunk, perPhase = max(1, 8 / chunks), maxPhase = min(8, chunks), chunks = staged row / 8.
 * A ring the FMA path's dot reads (`fma = 1`) has no swizzle (vec, perPhase and maxPhase 1):
 * its reader loads elements, not chunks, and the staging is the dot operand's own row-major
 * tile (A's m rows, B's k rows; order [0, 1] when that is the loaded tile's transpose), the
 * arena layout lower_shared.c stages an FMA operand in.
 * One slot (stage) takes rows * cols * element bytes rounded up to 128 bytes. */
#include "gpu_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <string.h>

KilnGpuShared kiln_gpu_shared_swizzled(int64_t rows, int64_t cols, bool trans) {
  int64_t chunks = (trans ? rows : cols) / 8;
  KilnGpuShared s = {.vec = 8, .trans = trans};
  s.per_phase = chunks >= 8 ? 1 : (int)(chunks > 0 ? 8 / chunks : 1);
  s.max_phase = chunks < 8 ? (int)(chunks > 0 ? chunks : 1) : 8;
  return s;
}

MlirAttribute kiln_gpu_shared_attr(MlirContext ctx, const KilnGpuShared *s) {
  int32_t order[2] = {s->trans ? 0 : 1, s->trans ? 1 : 0};
  MlirNamedAttribute e[7] = {
      kiln_ir_named(ctx, "kind", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString("shared"))),
      kiln_ir_named(ctx, "vec", kiln_ir_attr_i32(ctx, s->vec)),
      kiln_ir_named(ctx, "perPhase", kiln_ir_attr_i32(ctx, s->per_phase)),
      kiln_ir_named(ctx, "maxPhase", kiln_ir_attr_i32(ctx, s->max_phase)),
      kiln_ir_named(ctx, "order", mlirDenseI32ArrayGet(ctx, 2, order)),
      kiln_ir_named(ctx, "wgmma", kiln_ir_attr_i32(ctx, 1)),
      kiln_ir_named(ctx, "fma", kiln_ir_attr_i32(ctx, 1)),
  };
  if (s->fma) e[5] = e[6];
  return mlirDictionaryAttrGet(ctx, s->wgmma || s->fma ? 6 : 5, e);
}

static int dict_i32(MlirAttribute d, const char *name, int dflt) {
  MlirAttribute a = mlirDictionaryAttrGetElementByName(d, mlirStringRefCreateFromCString(name));
  return !mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a) ? (int)mlirIntegerAttrGetValueInt(a)
                                                               : dflt;
}

bool kiln_gpu_buffer_parse(MlirType t, KilnGpuBuffer *b) {
  memset(b, 0, sizeof *b);
  if (!mlirTypeIsAMemRef(t) || mlirShapedTypeGetRank(t) != 3) return false;
  MlirAttribute d = mlirMemRefTypeGetMemorySpace(t);
  if (mlirAttributeIsNull(d) || !mlirAttributeIsADictionary(d)) return false;
  MlirAttribute kind =
      mlirDictionaryAttrGetElementByName(d, mlirStringRefCreateFromCString("kind"));
  if (mlirAttributeIsNull(kind) || !mlirAttributeIsAString(kind)) return false;
  MlirStringRef k = mlirStringAttrGetValue(kind);
  if (k.length != 6 || memcmp(k.data, "shared", 6) != 0) return false;
  MlirAttribute order =
      mlirDictionaryAttrGetElementByName(d, mlirStringRefCreateFromCString("order"));
  if (mlirAttributeIsNull(order) || !mlirAttributeIsADenseI32Array(order) ||
      mlirDenseArrayGetNumElements(order) != 2)
    return false;
  b->enc.trans = mlirDenseI32ArrayGetElement(order, 0) == 0;
  b->enc.vec = dict_i32(d, "vec", 8);
  b->enc.per_phase = dict_i32(d, "perPhase", 1);
  b->enc.max_phase = dict_i32(d, "maxPhase", 1);
  b->enc.wgmma = dict_i32(d, "wgmma", 0) == 1;
  b->enc.fma = dict_i32(d, "fma", 0) == 1;
  b->stages = mlirShapedTypeGetDimSize(t, 0);
  b->rows = mlirShapedTypeGetDimSize(t, 1);
  b->cols = mlirShapedTypeGetDimSize(t, 2);
  b->elem = mlirShapedTypeGetElementType(t);
  int64_t bytes = b->rows * b->cols * kiln_ir_elem_bytes(b->elem);
  int64_t align = b->enc.wgmma ? KILN_GPU_WGMMA_ALIGN : 128;
  b->slot_bytes = (bytes + align - 1) / align * align;
  return b->stages > 0 && b->rows > 0 && b->cols > 0;
}

MlirType kiln_gpu_buffer_type(MlirContext ctx, int64_t stages, int64_t rows, int64_t cols,
                              MlirType elem, bool trans, KilnGpuReader reader) {
  int64_t shape[3] = {stages, rows, cols};
  KilnGpuShared s = kiln_gpu_shared_swizzled(rows, cols, trans);
  s.wgmma = reader == KILN_GPU_READ_WGMMA;
  if (reader == KILN_GPU_READ_FMA) s = (KilnGpuShared){1, 1, 1, .trans = trans, .fma = true};
  return mlirMemRefTypeContiguousGet(elem, 3, shape, kiln_gpu_shared_attr(ctx, &s));
}
