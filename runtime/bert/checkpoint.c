/* checkpoint.c — train --save / --resume (bert_ckpt.h).
 *
 * Saving copies the parameters and both AdamW moments to the host and writes, into a fresh
 * directory DIR.saving next to DIR: model.safetensors, optimizer.safetensors, config.json, then
 * trainer_state.json with the size and FNV-1a 64 checksum of the two safetensors files as they
 * landed on disk; whatever else DIR holds (a vocab.txt) is carried over (files by hard link).
 * Only when all of it is on disk is the new directory exchanged with DIR in one rename
 * (renameat2 RENAME_EXCHANGE), and the old one removed. So DIR names one whole checkpoint at
 * every moment: a save that fails or is killed leaves the previous checkpoint as it was (and at
 * most a DIR.saving, which the next save clears). The state file is also a commit point of its
 * own: resuming reads it first and refuses a directory whose weights or moments are not the
 * ones it names (a damaged file, or files copied in by hand from two saves), so a resumed run
 * never mixes two checkpoints. Integers that may exceed 2^53 (the seed) are written as strings,
 * since cJSON holds numbers as doubles. */
#include "bert_ckpt.h"
#include "bert_file.h"
#include "bert_internal.h"
#include "bert_params.h"
#include "bert_st.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_FORMAT  "kiln-bert-trainer-state"
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
  char(*names)[160] = calloc(2 * lay->n, sizeof *names);
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
  fputs("\n  }", f);
  if (ts->eval.has)
    fprintf(f,
            ",\n  \"eval\": {\"step\": %zu, \"eval_loss\": %.9g, \"accuracy\": %.9g, "
            "\"eval_samples\": %zu}",
            ts->eval.step, ts->eval.loss, ts->eval.accuracy, ts->eval.samples);
  fputs("\n}\n", f);
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

/* A test's forced failure at one stage of a save (KILN_BERT_SAVE_FAIL=model|optimizer|config|
 * state|swap), so that an interrupted save can be checked to leave the previous checkpoint
 * whole; unset, never. */
static KilnBertStatus forced_failure(const char *stage, const char *dir) {
  const char *f = getenv("KILN_BERT_SAVE_FAIL");
  if (!f || strcmp(f, stage)) return KILN_BERT_OK;
  return kiln_bert_fail(KILN_BERT_ERROR_IO,
                        "%s: saving failed before %s (forced by "
                        "KILN_BERT_SAVE_FAIL=%s)",
                        dir, stage, f);
}

/* Writes the four files of a checkpoint into dir (a fresh directory). */
static KilnBertStatus write_files(const char *dir, const KilnBertConfig *cfg, KilnBertModel *m,
                                  const KilnBertTrainState *ts) {
  const KilnBertParams *lay = kiln_bert_model_params(m);
  float *p = malloc(lay->total * sizeof *p), *mo = malloc(lay->total * sizeof *mo),
        *vo = malloc(lay->total * sizeof *vo);
  char path[4200];
  size_t sizes[N_CHECKED];
  uint64_t hashes[N_CHECKED];
  KilnBertStatus st = KILN_BERT_OK;
  if (!p || !mo || !vo)
    st = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", dir);
  if (st == KILN_BERT_OK) st = kiln_bert_model_get_params(m, p);
  if (st == KILN_BERT_OK) st = kiln_bert_model_get_moments(m, mo, vo);
  join(path, sizeof path, dir, checked_files[0]);
  if (st == KILN_BERT_OK) st = forced_failure("model", dir);
  if (st == KILN_BERT_OK) st = kiln_bert_params_save(lay, p, path);
  join(path, sizeof path, dir, checked_files[1]);
  if (st == KILN_BERT_OK) st = forced_failure("optimizer", dir);
  if (st == KILN_BERT_OK) st = save_moments(path, lay, mo, vo);
  join(path, sizeof path, dir, "config.json");
  if (st == KILN_BERT_OK) st = forced_failure("config", dir);
  if (st == KILN_BERT_OK) st = kiln_bert_config_save(path, cfg);
  for (int i = 0; st == KILN_BERT_OK && i < N_CHECKED; i++) {
    join(path, sizeof path, dir, checked_files[i]);
    st = file_digest(path, &sizes[i], &hashes[i]);
  }
  if (st == KILN_BERT_OK) st = forced_failure("state", dir);
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

static int is_ckpt_file(const char *name) {
  return !strcmp(name, checked_files[0]) || !strcmp(name, checked_files[1]) ||
         !strcmp(name, "config.json") || !strcmp(name, "trainer_state.json");
}

static KilnBertStatus sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0 || fsync(fd) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", dir, strerror(e));
  }
  close(fd);
  return KILN_BERT_OK;
}

/* Empties and removes a directory this file made (a save's scratch, or the previous checkpoint
 * after the swap): its entries that are not directories are unlinked (the checkpoint files, and
 * links to files that the new checkpoint also holds); a subdirectory is never removed, so the
 * directory then stays and IO names it. */
static KilnBertStatus remove_scratch(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return errno == ENOENT ? KILN_BERT_OK
                           : kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", dir, strerror(errno));
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    unlinkat(dirfd(d), e->d_name, 0); /* EISDIR/EPERM for a subdirectory: kept */
  }
  closedir(d);
  if (rmdir(dir) != 0)
    return kiln_bert_fail(KILN_BERT_ERROR_IO,
                          "%s: cannot remove it (%s): it is left over from an "
                          "interrupted save; move what it holds away",
                          dir, strerror(errno));
  return KILN_BERT_OK;
}

/* What else dir holds (a vocab.txt next to the model, say) goes into the new checkpoint too:
 * files by hard link (the old directory is removed after the swap, the link stays), and
 * subdirectories moved, last, right before the swap (moved = 1). */
static KilnBertStatus carry_over(const char *dir, const char *tmp, int moved) {
  DIR *d = opendir(dir);
  if (!d)
    return errno == ENOENT ? KILN_BERT_OK
                           : kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", dir, strerror(errno));
  int to = open(tmp, O_RDONLY | O_DIRECTORY);
  KilnBertStatus st =
      to < 0 ? kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", tmp, strerror(errno)) : KILN_BERT_OK;
  struct dirent *e;
  while (st == KILN_BERT_OK && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || is_ckpt_file(e->d_name)) continue;
    struct stat sb;
    if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) continue;
    int sub = S_ISDIR(sb.st_mode);
    if (sub != moved) continue;
    int rc = sub ? renameat(dirfd(d), e->d_name, to, e->d_name)
                 : linkat(dirfd(d), e->d_name, to, e->d_name, 0);
    if (rc != 0)
      st = kiln_bert_fail(KILN_BERT_ERROR_IO, "%s/%s: cannot carry it into the new checkpoint: %s",
                          dir, e->d_name, strerror(errno));
  }
  if (to >= 0) close(to);
  closedir(d);
  return st;
}

/* Puts the complete checkpoint in tmp at dir in one step: exchanged with the old directory
 * (renameat2 RENAME_EXCHANGE), so that dir always names one whole checkpoint, and the old one
 * lands at tmp; a first save is a plain rename. Where the file system cannot exchange, the old
 * directory is renamed to DIR.old first (a crash between the two renames leaves it there). */
static KilnBertStatus swap_in(const char *tmp, const char *dir, int exists, char *old, size_t cap) {
  snprintf(old, cap, "%s", tmp);
  if (!exists) {
    if (rename(tmp, dir) != 0)
      return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", dir, strerror(errno));
    old[0] = 0;
    return KILN_BERT_OK;
  }
  if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) return KILN_BERT_OK;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", dir, strerror(errno));
  snprintf(old, cap, "%s.old", dir);
  KilnBertStatus st = remove_scratch(old);
  if (st != KILN_BERT_OK) return st;
  if (rename(dir, old) != 0)
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", dir, strerror(errno));
  if (rename(tmp, dir) != 0) {
    int e = errno;
    rename(old, dir);
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", dir, strerror(e));
  }
  return KILN_BERT_OK;
}

/* The directory a save targets: dir resolved (a symbolic link to a checkpoint is replaced
 * where it points), without trailing slashes; *exists says whether it is there. */
static KilnBertStatus target_dir(const char *dir, char *out, size_t cap, int *exists) {
  struct stat sb;
  *exists = stat(dir, &sb) == 0;
  if (*exists && !S_ISDIR(sb.st_mode))
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: not a directory", dir);
  char real[PATH_MAX];
  const char *base = *exists && realpath(dir, real) ? real : dir;
  size_t n = strlen(base);
  while (n > 1 && base[n - 1] == '/') n--;
  if (n + 16 >= cap) return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: path too long", dir);
  memcpy(out, base, n);
  out[n] = 0;
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_ckpt_save(const char *dir, const KilnBertConfig *cfg, KilnBertModel *m,
                                   const KilnBertTrainState *ts) {
  char target[4000], tmp[4096], old[4096], parent[4000];
  int exists = 0;
  KilnBertStatus st = target_dir(dir, target, sizeof target, &exists);
  if (st != KILN_BERT_OK) return st;
  snprintf(tmp, sizeof tmp, "%s.saving", target);
  /* what an earlier save that died left behind */
  if ((st = remove_scratch(tmp)) != KILN_BERT_OK) return st;
  if (mkdir(tmp, 0777) != 0)
    return kiln_bert_fail(KILN_BERT_ERROR_IO, "%s: %s", tmp, strerror(errno));
  st = write_files(tmp, cfg, m, ts);
  if (st == KILN_BERT_OK) st = carry_over(target, tmp, 0);
  if (st == KILN_BERT_OK) st = sync_dir(tmp);
  if (st == KILN_BERT_OK) st = forced_failure("swap", dir);
  if (st == KILN_BERT_OK) st = carry_over(target, tmp, 1);
  if (st == KILN_BERT_OK) st = swap_in(tmp, target, exists, old, sizeof old);
  if (st != KILN_BERT_OK) {
    /* the old checkpoint is untouched and the new one was never whole: give back what was
     * moved, drop the rest */
    carry_over(tmp, target, 1);
    remove_scratch(tmp);
    return st;
  }
  snprintf(parent, sizeof parent, "%s", target);
  char *slash = strrchr(parent, '/');
  if (slash == parent)
    parent[1] = 0;
  else if (slash)
    *slash = 0;
  else
    snprintf(parent, sizeof parent, ".");
  st = sync_dir(parent);
  /* the previous checkpoint, now at old: removing it is tidying, the save itself is done */
  if (st == KILN_BERT_OK && old[0]) remove_scratch(old);
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
  /* the evaluation of a --save-best checkpoint: optional, checked whole when present */
  const cJSON *ev = cJSON_GetObjectItemCaseSensitive(root, "eval");
  if (!ev) return 0;
  const cJSON *loss = cJSON_GetObjectItemCaseSensitive(ev, "eval_loss");
  const cJSON *acc = cJSON_GetObjectItemCaseSensitive(ev, "accuracy");
  if (!cJSON_IsObject(ev) || get_size(ev, "step", &ts->eval.step) || ts->eval.step > ts->step ||
      !cJSON_IsNumber(loss) || !isfinite(loss->valuedouble) || loss->valuedouble < 0 ||
      !cJSON_IsNumber(acc) || !(acc->valuedouble >= 0) || acc->valuedouble > 1 ||
      get_size(ev, "eval_samples", &ts->eval.samples) || ts->eval.samples == 0)
    return *bad = "eval", -1;
  ts->eval.has = 1;
  ts->eval.loss = loss->valuedouble;
  ts->eval.accuracy = acc->valuedouble;
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
  KilnBertStatus st =
      kiln_bert_file_read(path, KILN_BERT_MAX_JSON_BYTES, "KILN_BERT_MAX_JSON_BYTES", &text, &len);
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
