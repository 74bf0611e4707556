/* gpu_util.c - helpers of the GPU lowering: the PTX approximations' table, parsing small pieces
 * of IR from text (the C API has no builders for attributes such as #nvvm<shfl_kind bfly>, and
 * text is the one stable way to make them), attribute reads. */
#include "gpu_internal.h"

const char *const kiln_gpu_approx_ptx[KILN_GPU_APPROX_COUNT] = {
    [KILN_GPU_APPROX_EX2] = "ex2.approx.ftz.f32",   [KILN_GPU_APPROX_LG2] = "lg2.approx.ftz.f32",
    [KILN_GPU_APPROX_SIN] = "sin.approx.ftz.f32",   [KILN_GPU_APPROX_COS] = "cos.approx.ftz.f32",
    [KILN_GPU_APPROX_RSQRT] = "rsqrt.approx.ftz.f32", [KILN_GPU_APPROX_TANH] = "tanh.approx.f32",
};

MlirOperation kiln_gpu_parse_op(MlirContext ctx, const char *text) {
  return mlirOperationCreateParse(ctx, mlirStringRefCreateFromCString(text),
                                  mlirStringRefCreateFromCString("kiln-gpu"));
}

MlirAttribute kiln_gpu_parse_attr(MlirContext ctx, const char *text) {
  MlirAttribute a = mlirAttributeParseGet(ctx, mlirStringRefCreateFromCString(text));
  KILN_ASSERT(!mlirAttributeIsNull(a));
  return a;
}

MlirType kiln_gpu_parse_type(MlirContext ctx, const char *text) {
  MlirType t = mlirTypeParseGet(ctx, mlirStringRefCreateFromCString(text));
  KILN_ASSERT(!mlirTypeIsNull(t));
  return t;
}

int64_t kiln_gpu_int_attr(MlirOperation op, const char *name, int64_t dflt) {
  int64_t v;
  return kiln_ir_get_int_attr(op, name, &v) ? v : dflt;
}
