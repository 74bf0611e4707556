/* safetensors.c — reading and writing safetensors files (format in bert_st.h).
 *
 * Reading trusts nothing in the file: the header length is checked against the file size before
 * the header is parsed (cJSON, with the length given, so no NUL is needed), every entry's dtype,
 * shape and data_offsets are checked (integers, no overflow, end within the data, byte count =
 * numel x element size) before a tensor is handed out, and the data stays in the read-only
 * mapping until a caller converts it. Writing builds the header by hand (cJSON would print large
 * offsets through doubles) and streams the tensors into an atomic file. */
#include "bert_st.h"
#include "bert_file.h"
#include "bert_internal.h"

#include "kiln_base.h" /* the one f16/bf16 conversion */

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensor bytes are copied as they are: the file is little-endian, and so must the host be. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "safetensors.c assumes a little-endian host");

/* The reference implementation refuses headers over 100 MB; so do we, before allocating
 * (KILN_BERT_MAX_ST_HEADER_BYTES, bert_file.h). */

struct KilnBertSt {
  KilnBertFileMap map; /* when opened from a path */
  KilnBertStTensor *tensors;
  size_t n;
  char *strings; /* names and dtypes, NUL-separated */
};

typedef struct DtypeInfo {
  const char *name;
  size_t size;
  KilnBertDtype dt;
} DtypeInfo;

static const DtypeInfo dtypes[] = {
    {"F32", 4, KILN_BERT_DTYPE_F32},       {"F16", 2, KILN_BERT_DTYPE_F16},
    {"BF16", 2, KILN_BERT_DTYPE_BF16},     {"F64", 8, KILN_BERT_DTYPE_OTHER},
    {"I64", 8, KILN_BERT_DTYPE_OTHER},     {"U64", 8, KILN_BERT_DTYPE_OTHER},
    {"I32", 4, KILN_BERT_DTYPE_OTHER},     {"U32", 4, KILN_BERT_DTYPE_OTHER},
    {"I16", 2, KILN_BERT_DTYPE_OTHER},     {"U16", 2, KILN_BERT_DTYPE_OTHER},
    {"I8", 1, KILN_BERT_DTYPE_OTHER},      {"U8", 1, KILN_BERT_DTYPE_OTHER},
    {"BOOL", 1, KILN_BERT_DTYPE_OTHER},    {"F8_E4M3", 1, KILN_BERT_DTYPE_OTHER},
    {"F8_E5M2", 1, KILN_BERT_DTYPE_OTHER},
};

void kiln_bert_st_close(KilnBertSt *st) {
  if (!st) return;
  kiln_bert_file_unmap(&st->map);
  free(st->tensors);
  free(st->strings);
  free(st);
}

size_t kiln_bert_st_count(const KilnBertSt *st) { return st->n; }

const KilnBertStTensor *kiln_bert_st_tensor(const KilnBertSt *st, size_t i) {
  return i < st->n ? &st->tensors[i] : NULL;
}

const KilnBertStTensor *kiln_bert_st_find(const KilnBertSt *st, const char *name) {
  for (size_t i = 0; i < st->n; i++)
    if (!strcmp(st->tensors[i].name, name)) return &st->tensors[i];
  return NULL;
}

/* A JSON number that is a non-negative integer below 2^53 (exact in a double). */
static int json_uint(const cJSON *item, uint64_t *out) {
  if (!cJSON_IsNumber(item)) return -1;
  double d = item->valuedouble;
  if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d) return -1;
  *out = (uint64_t)d;
  return 0;
}

static void shape_str(const int64_t *shape, int ndim, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < ndim && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, i ? ", " : "", shape[i]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

/* Checks one header entry and fills t (name and dtype still point into the cJSON tree). */
static KilnBertStatus parse_entry(const cJSON *e, const char *file, const unsigned char *data,
                                  uint64_t data_size, KilnBertStTensor *t) {
  const char *name = e->string;
  if (!cJSON_IsObject(e))
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: tensor '%s': not a JSON object", file, name);
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
  if (!cJSON_IsString(dtype))
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: tensor '%s': no \"dtype\" string", file,
                          name);
  if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > KILN_BERT_ST_MAX_DIMS)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: tensor '%s': \"shape\" is not an array of at most %d sizes", file,
                          name, KILN_BERT_ST_MAX_DIMS);
  if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: tensor '%s': \"data_offsets\" is not [begin, end]", file, name);
  memset(t, 0, sizeof *t);
  t->name = name;
  t->dtype = dtype->valuestring;
  t->dt = KILN_BERT_DTYPE_OTHER;
  size_t esize = 0;
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (!strcmp(dtypes[i].name, t->dtype)) {
      esize = dtypes[i].size;
      t->dt = dtypes[i].dt;
    }
  t->numel = 1;
  int overflow = 0;
  const cJSON *d;
  cJSON_ArrayForEach(d, shape) {
    uint64_t v;
    if (json_uint(d, &v) != 0)
      return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                            "%s: tensor '%s': a size in \"shape\" is not a non-negative integer",
                            file, name);
    t->shape[t->ndim++] = (int64_t)v;
    if (v && t->numel > UINT64_MAX / v) overflow = 1;
    t->numel *= v;
  }
  uint64_t begin, end;
  if (json_uint(cJSON_GetArrayItem(offs, 0), &begin) ||
      json_uint(cJSON_GetArrayItem(offs, 1), &end))
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: tensor '%s': \"data_offsets\" are not non-negative integers", file,
                          name);
  if (begin > end || end > data_size)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                          "] outside the %" PRIu64 " data bytes (truncated file?)",
                          file, name, begin, end, data_size);
  if (esize && (overflow || t->numel > UINT64_MAX / esize || t->numel * esize != end - begin)) {
    char sh[256];
    shape_str(t->shape, t->ndim, sh, sizeof sh);
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: tensor '%s': shape %s of %s does not fit its %" PRIu64 " bytes",
                          file, name, sh, t->dtype, end - begin);
  }
  t->data = data + begin;
  t->nbytes = (size_t)(end - begin);
  return KILN_BERT_OK;
}

/* Copies names and dtypes out of the cJSON tree into one allocation owned by st. */
static int keep_strings(KilnBertSt *st) {
  size_t total = 0;
  for (size_t i = 0; i < st->n; i++)
    total += strlen(st->tensors[i].name) + strlen(st->tensors[i].dtype) + 2;
  if (!(st->strings = malloc(total ? total : 1))) return -1;
  char *p = st->strings;
  for (size_t i = 0; i < st->n; i++) {
    const char *src[2] = {st->tensors[i].name, st->tensors[i].dtype};
    for (int k = 0; k < 2; k++) {
      size_t len = strlen(src[k]) + 1;
      memcpy(p, src[k], len);
      if (k == 0)
        st->tensors[i].name = p;
      else
        st->tensors[i].dtype = p;
      p += len;
    }
  }
  return 0;
}

static KilnBertStatus parse_header(KilnBertSt *st, const unsigned char *bytes, size_t size,
                                   const char *file) {
  if (size < 8)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: %zu bytes, too short for the 8-byte header length", file, size);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | bytes[i];
  if (hlen > size - 8)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: header length %" PRIu64 " goes beyond the file's %zu bytes "
                          "(truncated or not a safetensors file)",
                          file, hlen, size);
  if (hlen > KILN_BERT_MAX_ST_HEADER_BYTES)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: header length %" PRIu64
                          " over KILN_BERT_MAX_ST_HEADER_BYTES (%zu bytes)",
                          file, hlen, KILN_BERT_MAX_ST_HEADER_BYTES);
  const char *text = (const char *)bytes + 8, *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)hlen, &end, 0);
  if (!root)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: the header is not valid JSON (near byte %zu)", file,
                          (size_t)(8 + (end ? end - text : 0)));
  for (const char *p = end; p < text + hlen; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0') {
      cJSON_Delete(root);
      return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: text after the header's JSON object",
                            file);
    }
  KilnBertStatus status = KILN_BERT_OK;
  if (!cJSON_IsObject(root))
    status = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: the header is not a JSON object", file);
  size_t count = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, root) count++;
  if (status == KILN_BERT_OK && count && !(st->tensors = calloc(count, sizeof *st->tensors)))
    status = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", file);
  const unsigned char *data = bytes + 8 + hlen;
  uint64_t data_size = size - 8 - hlen;
  cJSON_ArrayForEach(e, root) {
    if (status != KILN_BERT_OK) break;
    if (!strcmp(e->string, "__metadata__")) continue;
    status = parse_entry(e, file, data, data_size, &st->tensors[st->n]);
    for (size_t i = 0; status == KILN_BERT_OK && i < st->n; i++)
      if (!strcmp(st->tensors[i].name, e->string))
        status = kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: tensor '%s' appears twice", file,
                                e->string);
    if (status == KILN_BERT_OK) st->n++;
  }
  if (status == KILN_BERT_OK && keep_strings(st) != 0)
    status = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", file);
  cJSON_Delete(root);
  return status;
}

KilnBertStatus kiln_bert_st_parse(const void *data, size_t size, const char *name,
                                  KilnBertSt **out) {
  KilnBertSt *st = calloc(1, sizeof *st);
  if (!st) return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", name);
  KilnBertStatus status = parse_header(st, data, size, name);
  if (status != KILN_BERT_OK) {
    kiln_bert_st_close(st);
    return status;
  }
  *out = st;
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_st_open(const char *path, KilnBertSt **out) {
  KilnBertFileMap map;
  KilnBertStatus status = kiln_bert_file_map(path, &map);
  if (status != KILN_BERT_OK) return status;
  KilnBertSt *st = NULL;
  static const unsigned char empty[1];
  status = kiln_bert_st_parse(map.data ? map.data : empty, map.size, path, &st);
  if (status != KILN_BERT_OK) {
    kiln_bert_file_unmap(&map);
    return status;
  }
  st->map = map;
  *out = st;
  return KILN_BERT_OK;
}

void kiln_bert_dtype_to_f32(KilnBertDtype dt, const void *src, size_t n, float *dst) {
  const unsigned char *s = src;
  if (dt == KILN_BERT_DTYPE_F32) {
    memcpy(dst, s, n * 4);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    uint16_t h = (uint16_t)(s[2 * i] | s[2 * i + 1] << 8);
    dst[i] = dt == KILN_BERT_DTYPE_F16 ? kiln_f16_to_f32(h) : kiln_bf16_to_f32(h);
  }
}

KilnBertStatus kiln_bert_st_read_f32(const KilnBertSt *st, const char *name, const int64_t *shape,
                                     int ndim, float *out) {
  const KilnBertStTensor *t = kiln_bert_st_find(st, name);
  if (!t) return kiln_bert_fail(KILN_BERT_ERROR_NOT_FOUND, "no tensor '%s' in the weights", name);
  int same = t->ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
  if (!same) {
    char have[256], want[256];
    shape_str(t->shape, t->ndim, have, sizeof have);
    shape_str(shape, ndim, want, sizeof want);
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "tensor '%s' has shape %s, expected %s", name,
                          have, want);
  }
  if (t->dt == KILN_BERT_DTYPE_OTHER)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "tensor '%s' is %s; only F32, F16 and BF16 weights can be read", name,
                          t->dtype);
  kiln_bert_dtype_to_f32(t->dt, t->data, (size_t)t->numel, out);
  return KILN_BERT_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

typedef struct Text {
  char *s;
  size_t n, cap;
  int oom;
} Text;

static void put(Text *t, const char *s, size_t n) {
  if (t->oom || kiln_bert_grow((void **)&t->s, &t->cap, t->n + n + 1, 1)) {
    t->oom = 1;
    return;
  }
  memcpy(t->s + t->n, s, n);
  t->n += n;
  t->s[t->n] = '\0';
}

static void put_str(Text *t, const char *s) { put(t, s, strlen(s)); }

static void putf(Text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(Text *t, const char *fmt, ...) {
  char buf[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  put(t, buf, (size_t)n);
}

/* A JSON string: quotes, backslashes and control bytes escaped; other bytes as they are. */
static void put_json_string(Text *t, const char *s) {
  put(t, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', (char)c};
      put(t, esc, 2);
    } else if (c < 0x20) {
      putf(t, "\\u%04x", c);
    } else {
      put(t, (const char *)&c, 1);
    }
  }
  put(t, "\"", 1);
}

static KilnBertStatus check_entries(const KilnBertStEntry *e, size_t n, const char *path,
                                    uint64_t *numel) {
  for (size_t i = 0; i < n; i++) {
    if (!e[i].name || !strcmp(e[i].name, "__metadata__") || !e[i].name[0])
      return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                            "%s: tensor %zu has a reserved or "
                            "empty name",
                            path, i);
    if (e[i].ndim < 0 || e[i].ndim > KILN_BERT_ST_MAX_DIMS)
      return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "%s: tensor '%s': %d dimensions",
                            path, e[i].name, e[i].ndim);
    numel[i] = 1;
    for (int d = 0; d < e[i].ndim; d++) {
      if (e[i].shape[d] < 0 ||
          (e[i].shape[d] && numel[i] > (UINT64_MAX / 4) / (uint64_t)e[i].shape[d]))
        return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "%s: tensor '%s': bad shape", path,
                              e[i].name);
      numel[i] *= (uint64_t)e[i].shape[d];
    }
    if (numel[i] && !e[i].data)
      return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "%s: tensor '%s' has no data", path,
                            e[i].name);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(e[i].name, e[j].name))
        return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT, "%s: tensor '%s' given twice", path,
                              e[i].name);
  }
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_st_write(const char *path, const KilnBertStEntry *e, size_t n) {
  uint64_t *numel = calloc(n ? n : 1, sizeof *numel);
  if (!numel) return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  KilnBertStatus status = check_entries(e, n, path, numel);
  Text h = {0};
  put(&h, "{", 1);
  uint64_t off = 0;
  for (size_t i = 0; status == KILN_BERT_OK && i < n; i++) {
    put_json_string(&h, e[i].name);
    put_str(&h, ":{\"dtype\":\"F32\",\"shape\":[");
    for (int d = 0; d < e[i].ndim; d++) putf(&h, "%s%" PRId64, d ? "," : "", e[i].shape[d]);
    putf(&h, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]},", off, off + numel[i] * 4);
    off += numel[i] * 4;
  }
  put_str(&h, "\"__metadata__\":{\"format\":\"pt\"}}");
  while (h.n % 8) put(&h, " ", 1); /* the data starts 8-byte aligned after the 8 length bytes */
  if (status == KILN_BERT_OK && h.oom)
    status = kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  KilnBertAtomicFile af;
  if (status == KILN_BERT_OK) status = kiln_bert_file_begin(path, &af);
  if (status == KILN_BERT_OK) {
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    kiln_bert_file_write(&af, len, 8);
    kiln_bert_file_write(&af, h.s, h.n);
    for (size_t i = 0; i < n; i++) kiln_bert_file_write(&af, e[i].data, (size_t)numel[i] * 4);
    status = kiln_bert_file_commit(&af);
  }
  free(h.s);
  free(numel);
  return status;
}
