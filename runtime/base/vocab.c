/* vocab.c - the names of the targets, the scalar kinds and the reserved tune names, in one table
 * each: the driver, the frontend, the tuner (which must not need the frontend) and the tests
 * spell them alike. */
#include "kiln_base.h"

#include <string.h>

static const char *const target_names[KILN_TARGET_COUNT] = {"cpu", "emu", "sm_80", "sm_90"};

static const char *const scalar_names[KILN_SCALAR_COUNT] = {
    "i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "u8", "u16", "u32", "u64",
};

const char *kiln_target_name(KilnTarget t) {
  return (unsigned)t < KILN_TARGET_COUNT ? target_names[t] : "?";
}

KilnTarget kiln_target_from_name(const char *name) {
  for (int i = 0; i < KILN_TARGET_COUNT; i++)
    if (name && strcmp(name, target_names[i]) == 0) return (KilnTarget)i;
  return KILN_TARGET_COUNT;
}

const char *kiln_scalar_name(KilnScalarKind k) {
  return (unsigned)k < KILN_SCALAR_COUNT ? scalar_names[k] : "?";
}

bool kiln_scalar_from_name(const char *name, KilnScalarKind *out) {
  for (int k = 0; k < KILN_SCALAR_COUNT; k++)
    if (name && strcmp(name, scalar_names[k]) == 0) {
      *out = (KilnScalarKind)k;
      return true;
    }
  return false;
}

bool kiln_scalar_is_float(KilnScalarKind k) {
  return k == KILN_SCALAR_F16 || k == KILN_SCALAR_BF16 || k == KILN_SCALAR_F32 ||
         k == KILN_SCALAR_F64;
}

bool kiln_scalar_is_unsigned(KilnScalarKind k) {
  return k >= KILN_SCALAR_U8 && k <= KILN_SCALAR_U64;
}

/* The reserved tune names with the values each may take. min_blocks asks ptxas for that many
 * resident blocks per SM, and an SM holds at most 32 (compute capabilities 8.0 and 9.0);
 * num_warps and num_stages stay within 64; wgmma is a switch (1: warpgroup MMA on sm_90). */
typedef struct MetaParam {
  const char *name;
  int64_t lo, hi;
} MetaParam;

static const MetaParam meta_params[] = {
    {"num_warps", 1, 64},
    {"num_stages", 1, 64},
    {"min_blocks", 1, 32},
    {"wgmma", 0, 1},
};

static const MetaParam *meta_param(const char *name) {
  for (size_t i = 0; i < sizeof meta_params / sizeof meta_params[0]; i++)
    if (name && strcmp(name, meta_params[i].name) == 0) return &meta_params[i];
  return NULL;
}

bool kiln_meta_param_is(const char *name) { return meta_param(name) != NULL; }

int64_t kiln_meta_param_min(const char *name) {
  const MetaParam *m = meta_param(name);
  return m ? m->lo : 1;
}

int64_t kiln_meta_param_max(const char *name) {
  const MetaParam *m = meta_param(name);
  return m ? m->hi : 64;
}
