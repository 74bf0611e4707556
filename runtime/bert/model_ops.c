/* model_ops.c — the four KilnBertOps tables (bert_model_ops.h): model_ops.inc instantiated for
 * the f32, f16 and bf16 kernel libraries that runtime/bert/CMakeLists.txt generates with
 * `kiln lib -D T=...`, and once more for f32 with the gemm libraries built with -D TF32=1
 * (`--precision fp32 --tf32`: the f32 table but for its matrix products). One template rather than three copies, so that a kernel added to the model
 * is wrapped once for every precision. The emu copy (KILN_BERT_EMU_BUILD) compiles this file
 * again against the emu libraries of the same names, all three tables included. */
#include "bert_model_ops.h"

#include "kb_adamw.h"
#include "kb_attn_d16_f32.h"
#include "kb_attn_d64_f32.h"
#include "kb_attn_drop_d16_f32.h"
#include "kb_attn_drop_d64_f32.h"
#include "kb_drop_f32.h"
#include "kb_emb_f32.h"
#include "kb_gelu_f32.h"
#include "kb_gemm0_f32.h"
#include "kb_gemm1_f32.h"
#include "kb_gemm3_f32.h"
#include "kb_gemm4_f32.h"
#include "kb_gemm0_tf32.h"
#include "kb_gemm1_tf32.h"
#include "kb_gemm3_tf32.h"
#include "kb_gemm4_tf32.h"
#include "kb_ln_f32.h"
#include "kb_tanh_f32.h"
#include "kb_xent_f32.h"
#include "kb_adamw_bf16.h"
#include "kb_adamw_f16.h"
#include "kb_attn_d16_bf16.h"
#include "kb_attn_d16_f16.h"
#include "kb_attn_d64_bf16.h"
#include "kb_attn_d64_f16.h"
#include "kb_attn_drop_d16_bf16.h"
#include "kb_attn_drop_d16_f16.h"
#include "kb_attn_drop_d64_bf16.h"
#include "kb_attn_drop_d64_f16.h"
#include "kb_cast_bf16.h"
#include "kb_cast_f16.h"
#include "kb_drop_bf16.h"
#include "kb_drop_f16.h"
#include "kb_emb_bf16.h"
#include "kb_emb_f16.h"
#include "kb_gelu_bf16.h"
#include "kb_gelu_f16.h"
#include "kb_gemm0_bf16.h"
#include "kb_gemm0_f16.h"
#include "kb_gemm1_bf16.h"
#include "kb_gemm1_f16.h"
#include "kb_gemm3_bf16.h"
#include "kb_gemm4_bf16.h"
#include "kb_gemm3_f16.h"
#include "kb_gemm4_f16.h"
#include "kb_ln_bf16.h"
#include "kb_ln_f16.h"
#include "kb_tanh_bf16.h"
#include "kb_tanh_f16.h"
#include "kb_xent_bf16.h"
#include "kb_xent_f16.h"

#include <stddef.h>

#define P     f32
#define ADAMW kb_adamw
#define HALF  0
#include "model_ops.inc"
#undef P
#undef ADAMW
#undef HALF

/* fp32 with TF32 gemms: every other kernel is the f32 table's (its own static copy) */
#define P      f32
#define GEMM_P tf32
#define TAG    tf32
#define ADAMW  kb_adamw
#define HALF   0
#include "model_ops.inc"
#undef P
#undef ADAMW
#undef HALF

#define P     f16
#define ADAMW kb_adamw_f16
#define HALF  1
#include "model_ops.inc"
#undef P
#undef ADAMW
#undef HALF

#define P     bf16
#define ADAMW kb_adamw_bf16
#define HALF  1
#include "model_ops.inc"
#undef P
#undef ADAMW
#undef HALF
