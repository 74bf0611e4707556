/* checkpoint.c — train --save / --resume (bert_ckpt.h).
 *
 * Saving copies the parameters and both AdamW moments to the host and writes, each atomically
 * (bert_file): model.safetensors, optimizer.safetensors, config.json, then trainer_state.json
 * with the size and FNV-1a 64 checksum of the two safetensors files as they landed on disk.
 * The state file is the commit point: resuming reads it first and refuses a directory whose
 * weights or moments are not the ones it names (a save interrupted between two files leaves
 * the old state naming the old files, which no longer match), so a resumed run never mixes
 * two checkpoints. Integers that may exceed 2^53 (the seed) are written as strings, since
 * cJSON holds numbers as doubles. */
#include "bert_ckpt.h"
#include "bert_file.h"
#include "bert_internal.h"
#include "bert_params.h"
#include "bert_st.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define STATE_FORMAT "kiln-bert-trainer-state"
#define STATE_VERSION 1

static const char *const checked_files[] = {"model.safetensors", "optimizer.safetensors"};
enum { N_CHECKED = 2 };

void kiln_bert_train_state_init(KilnBertTrainState *ts, uint64_t seed, size_t samples,
                                size_t batch) {
  memset(ts, 0, sizeof *ts);
  ts->scaler.scale = 1.0f;
  ts->seed = seed;
  ts->samples = samples;
  ts->batch = batch;
}

static void join(char *out, size_t cap, const char *dir, const char *name) {
  snprintf(out, cap, "%s/%s", dir, name);
}

/* Size and FNV-1a 64 of the file at path. */
static KilnBertStatus file_digest(const char *path, size_t *size, uint64_t *hash) {
  KilnBertFileMap map = {0};
  KilnBertStatus st = kiln_bert_file_map(path, &map);
  if (st != KILN_BERT_OK) return st;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < map.size; i++) h = (h ^ map.data[i]) * 0x100000001b3ull;
  *size = map.size;
  *hash = h;
  kiln_bert_file_unmap(&map);
  return KILN_BERT_OK;
}

/* The moments as F32 tensors NAME.exp_avg and NAME.exp_avg_sq, in the parameters' order. */
static KilnBertStatus save_moments(const char *path, const KilnBertParams *lay, const float *m,
                                   const float *v) {
  KilnBertStEntry *e = calloc(2 * lay->n, sizeof *e);
  char (*names)[160] = calloc(2 * lay->n, sizeof *names);
  KilnBertStatus st = KILN_BERT_OK;
  if (!e || !names) st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  for (size_t i = 0; st == KILN_BERT_OK && i < lay->n; i++) {
    const KilnBertParam *p = &lay->p[i];
    for (int k = 0; k < 2; k++) {
      KilnBertStEntry *x = &e[2 * i + (size_t)k];
      snprintf(names[2 * i + (size_t)k], sizeof names[0], "%s.%s", p->name,
               k ? "exp_avg_sq" : "exp_avg");
      x->name = names[2 * i + (size_t)k];
      x->data = (k ? v : m) + p->offset;
      x->ndim = p->ndim;
      for (int d = 0; d < p->ndim; d++) x->shape[d] = p->shape[d];
    }
  }
  if (st == KILN_BERT_OK) st = kiln_bert_st_write(path, e, 2 * lay->n);
  free(e);
  free(names);
  return st;
}

/* trainer_state.json's text (malloc'ed) for ts and the digests of the checked files. */
static char *state_json(const KilnBertTrainState *ts, const size_t *sizes, const uint64_t *hashes) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  fprintf(f,
          "{\n  \"format\": \"%s\",\n  \"version\": %d,\n  \"step\": %zu,\n"
          "  \"adam_step\": %zu,\n  \"loss_scale\": %.9g,\n  \"good_steps\": %d,\n"
          "  \"seed\": \"%" PRIu64 "\",\n  \"epoch\": %zu,\n  \"position\": %zu,\n"
          "  \"samples\": %zu,\n  \"batch\": %zu,\n  \"files\": {",
          STATE_FORMAT, STATE_VERSION, ts->step, ts->adam_step, (double)ts->scaler.scale,
          ts->scaler.good_steps, ts->seed, ts->epoch, ts->position, ts->samples, ts->batch);
  for (int i = 0; i < N_CHECKED; i++)
    fprintf(f, "%s\n    \"%s\": {\"bytes\": %zu, \"fnv1a64\": \"%016" PRIx64 "\"}", i ? "," : "",
            checked_files[i], sizes[i], hashes[i]);
  fputs("\n  }\n}\n", f);
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

KilnBertStatus kiln_bert_ckpt_save(const char *dir, const KilnBertConfig *cfg, KilnBertModel *m,
                                   const KilnBertTrainState *ts) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", dir, strerror(errno));
  const KilnBertParams *lay = kiln_bert_model_params(m);
  float *p = malloc(lay->total * sizeof *p), *mo = malloc(lay->total * sizeof *mo),
        *vo = malloc(lay->total * sizeof *vo);
  char path[4096];
  size_t sizes[N_CHECKED];
  uint64_t hashes[N_CHECKED];
  KilnBertStatus st = KILN_BERT_OK;
  if (!p || !mo || !vo) st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", dir);
  if (st == KILN_BERT_OK) st = kiln_bert_model_get_params(m, p);
  if (st == KILN_BERT_OK) st = kiln_bert_model_get_moments(m, mo, vo);
  join(path, sizeof path, dir, checked_files[0]);
  if (st == KILN_BERT_OK) st = kiln_bert_params_save(lay, p, path);
  join(path, sizeof path, dir, checked_files[1]);
  if (st == KILN_BERT_OK) st = save_moments(path, lay, mo, vo);
  join(path, sizeof path, dir, "config.json");
  if (st == KILN_BERT_OK) st = kiln_bert_config_save(path, cfg);
  for (int i = 0; st == KILN_BERT_OK && i < N_CHECKED; i++) {
    join(path, sizeof path, dir, checked_files[i]);
    st = file_digest(path, &sizes[i], &hashes[i]);
  }
  if (st == KILN_BERT_OK) {
    char *text = state_json(ts, sizes, hashes);
    join(path, sizeof path, dir, "trainer_state.json");
    st = text ? kiln_bert_file_write_atomic(path, text, strlen(text))
              : kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    free(text);
  }
  free(p);
  free(mo);
  free(vo);
  return st;
}

/* A non-negative integer member below 2^53 (exact in a double). */
static int get_size(const cJSON *o, const char *key, size_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0 ||
      v->valuedouble != (double)(uint64_t)v->valuedouble)
    return -1;
  *out = (size_t)v->valuedouble;
  return 0;
}

/* A member string holding an unsigned integer in base `base`. */
static int get_u64_string(const cJSON *o, const char *key, int base, uint64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v) || !v->valuestring[0] || v->valuestring[0] == '-') return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long x = strtoull(v->valuestring, &end, base);
  if (errno || *end) return -1;
  *out = x;
  return 0;
}

/* The state's scalar members into *ts; the name of the first bad one in *bad. */
static int parse_state(const cJSON *root, KilnBertTrainState *ts, const char **bad) {
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
  const cJSON *scale = cJSON_GetObjectItemCaseSensitive(root, "loss_scale");
  size_t good = 0;
  if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, STATE_FORMAT)) return *bad = "format", -1;
  if (!cJSON_IsNumber(ver) || ver->valuedouble != STATE_VERSION) return *bad = "version", -1;
  if (get_size(root, "step", &ts->step)) return *bad = "step", -1;
  if (get_size(root, "adam_step", &ts->adam_step) || ts->adam_step > ts->step)
    return *bad = "adam_step", -1;
  if (!cJSON_IsNumber(scale) || !(scale->valuedouble > 0) || scale->valuedouble > 3.4e38)
    return *bad = "loss_scale", -1;
  ts->scaler.scale = (float)scale->valuedouble;
  if (get_size(root, "good_steps", &good) || good > KILN_BERT_SCALER_GROWTH_INTERVAL)
    return *bad = "good_steps", -1;
  ts->scaler.good_steps = (int)good;
  if (get_u64_string(root, "seed", 10, &ts->seed)) return *bad = "seed", -1;
  if (get_size(root, "epoch", &ts->epoch)) return *bad = "epoch", -1;
  if (get_size(root, "position", &ts->position)) return *bad = "position", -1;
  if (get_size(root, "samples", &ts->samples) || ts->samples == 0) return *bad = "samples", -1;
  if (get_size(root, "batch", &ts->batch) || ts->batch == 0) return *bad = "batch", -1;
  return 0;
}

/* Each checked file must have the size and checksum the state recorded for it. */
static KilnBertStatus check_files(const char *dir, const char *spath, const cJSON *root) {
  const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
  for (int i = 0; i < N_CHECKED; i++) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(files, checked_files[i]);
    size_t want_size = 0, size = 0;
    uint64_t want_hash = 0, hash = 0;
    if (!cJSON_IsObject(e) || get_size(e, "bytes", &want_size) ||
        get_u64_string(e, "fnv1a64", 16, &want_hash))
      return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: no valid entry files.\"%s\"", spath,
                            checked_files[i]);
    char path[4096];
    join(path, sizeof path, dir, checked_files[i]);
    KilnBertStatus st = file_digest(path, &size, &hash);
    if (st != KILN_BERT_OK) return st;
    if (size != want_size || hash != want_hash)
      return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                            "%s: not the file %s describes (%zu bytes, checksum %016" PRIx64
                            "; expected %zu bytes, %016" PRIx64 "): the checkpoint is damaged or "
                            "was overwritten partly",
                            path, spath, size, hash, want_size, want_hash);
  }
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_ckpt_read_state(const char *dir, KilnBertTrainState *ts) {
  char path[4096];
  join(path, sizeof path, dir, "trainer_state.json");
  char *text = NULL;
  size_t len = 0;
  KilnBertStatus st = kiln_bert_file_read(path, &text, &len);
  if (st != KILN_BERT_OK) return st;
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  KilnBertTrainState got;
  memset(&got, 0, sizeof got);
  const char *bad = NULL;
  if (!cJSON_IsObject(root))
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: not a JSON object", path);
  else if (parse_state(root, &got, &bad))
    st = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: missing or bad \"%s\"", path, bad);
  else
    st = check_files(dir, path, root);
  cJSON_Delete(root);
  if (st == KILN_BERT_OK) *ts = got;
  return st;
}

KilnBertStatus kiln_bert_ckpt_load_moments(const char *dir, KilnBertModel *m) {
  char path[4096], name[160];
  join(path, sizeof path, dir, checked_files[1]);
  const KilnBertParams *lay = kiln_bert_model_params(m);
  float *mo = calloc(lay->total, sizeof *mo), *vo = calloc(lay->total, sizeof *vo);
  KilnBertSt *sf = NULL;
  KilnBertStatus st = KILN_BERT_OK;
  if (!mo || !vo) st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  if (st == KILN_BERT_OK) st = kiln_bert_st_open(path, &sf);
  for (size_t i = 0; st == KILN_BERT_OK && i < lay->n; i++) {
    const KilnBertParam *p = &lay->p[i];
    for (int k = 0; st == KILN_BERT_OK && k < 2; k++) {
      snprintf(name, sizeof name, "%s.%s", p->name, k ? "exp_avg_sq" : "exp_avg");
      st = kiln_bert_st_read_f32(sf, name, p->shape, p->ndim, (k ? vo : mo) + p->offset);
    }
  }
  if (st == KILN_BERT_OK) st = kiln_bert_model_set_moments(m, mo, vo);
  kiln_bert_st_close(sf);
  free(mo);
  free(vo);
  return st;
}
