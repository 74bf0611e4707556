/* gpu_util.c - helpers of the GPU lowering: the PTX approximations' table, the text of predicated
 * vector accesses (one definition for the lowering that writes them and the emu rewrite that reads
 * them), parsing small pieces
 * of IR from text (the C API has no builders for attributes such as #nvvm<shfl_kind bfly>, and
 * text is the one stable way to make them), attribute reads. */
#include "gpu_internal.h"

const char *const kiln_gpu_approx_ptx[KILN_GPU_APPROX_COUNT] = {
    [KILN_GPU_APPROX_EX2] = "ex2.approx.ftz.f32",     [KILN_GPU_APPROX_LG2] = "lg2.approx.ftz.f32",
    [KILN_GPU_APPROX_SIN] = "sin.approx.ftz.f32",     [KILN_GPU_APPROX_COS] = "cos.approx.ftz.f32",
    [KILN_GPU_APPROX_RSQRT] = "rsqrt.approx.ftz.f32", [KILN_GPU_APPROX_TANH] = "tanh.approx.f32",
    [KILN_GPU_APPROX_RCP] = "rcp.approx.ftz.f32",
};

void kiln_gpu_pred_access_ptx(bool store, int words, int word_bits, char *text, size_t text_cap,
                              char *cons, size_t cons_cap) {
  KILN_ASSERT(words == 1 || words == 2 || words == 4);
  KILN_ASSERT(word_bits == 32 || (word_bits == 16 && words == 1));
  const char *b = word_bits == 16 ? "b16" : "b32", *r = word_bits == 16 ? "h" : "r";
  char regs[64] = "", shape[16] = "";
  int first = store ? 2 : 0; /* a load's results come first, a store's words last */
  for (int w = 0; w < words; w++)
    snprintf(regs + strlen(regs), sizeof regs - strlen(regs), "%s$%d", w ? ", " : "", first + w);
  if (words > 1) snprintf(shape, sizeof shape, ".v%d", words);
  size_t n = 0;
  if (store) {
    snprintf(text, text_cap, "@$1 st.global%s.%s [$0], %s%s%s;", shape, b, words > 1 ? "{" : "",
             regs, words > 1 ? "}" : "");
    n += (size_t)snprintf(cons, cons_cap, "l,b");
    for (int w = 0; w < words; w++) n += (size_t)snprintf(cons + n, cons_cap - n, ",%s", r);
    return;
  }
  /* the masked-off value first: a predicated-off load leaves its registers as they were */
  for (int w = 0; w < words; w++)
    n += (size_t)snprintf(text + n, text_cap - n, "mov.%s $%d, $%d; ", b, w, words + 2 + w);
  snprintf(text + n, text_cap - n, "@$%d ld.global%s.%s %s%s%s, [$%d];", words + 1, shape, b,
           words > 1 ? "{" : "", regs, words > 1 ? "}" : "", words);
  n = 0;
  for (int w = 0; w < words; w++) n += (size_t)snprintf(cons + n, cons_cap - n, "=%s,", r);
  n += (size_t)snprintf(cons + n, cons_cap - n, "l,b");
  for (int w = 0; w < words; w++) n += (size_t)snprintf(cons + n, cons_cap - n, ",%s", r);
}

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

/* Elements per vector access of a thread (gpu_internal.h): the analysis, capped by the run the
 * layout gives the thread along its fastest dim. */
int kiln_gpu_access_vec(const KilnAxisMap *m, MlirValue ptrs, const KilnGpuOwn *own) {
  MlirType t = mlirValueGetType(ptrs);
  if (!mlirTypeIsARankedTensor(t) || own->rank == 0) return 1;
  int d = own->order[0];
  MlirType elem = kiln_ir_ptr_elem(kiln_ir_elem_type(t));
  int bits = kiln_ir_elem_bits(elem);
  if (bits <= 0) return 1;
  if (bits < 8) bits = 8; /* i1 moves as bytes (lower_memory.c) */
  int v = kiln_axis_vec(m, ptrs, d, bits);
  int run = own->dim[d].spt < own->dim[d].n ? own->dim[d].spt : own->dim[d].n;
  while (v > run) v /= 2;
  while (v > 1 && (own->dim[d].n % v) != 0) v /= 2;
  return v;
}
