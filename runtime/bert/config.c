/* config.c — config.json in the Hugging Face BertConfig layout: defaults, presets, parsing
 * with a check of every key kiln-bert reads, and writing. Unknown keys are ignored (a config
 * carries many the classifier does not use: architectures, torch_dtype, transformers_version). */
#include "bert_config.h"
#include "bert_file.h"
#include "bert_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kiln_bert_config_defaults(KilnBertConfig *cfg) {
  *cfg = (KilnBertConfig){
      .vocab_size = 30522,
      .hidden_size = 768,
      .num_hidden_layers = 12,
      .num_attention_heads = 12,
      .intermediate_size = 3072,
      .max_position_embeddings = 512,
      .type_vocab_size = 2,
      .num_labels = 2,
      .pad_token_id = 0,
      .layer_norm_eps = 1e-12,
      .hidden_dropout_prob = 0.1,
      .attention_probs_dropout_prob = 0.1,
      .classifier_dropout = -1,
      .initializer_range = 0.02,
  };
}

KilnBertStatus kiln_bert_config_preset(const char *name, KilnBertConfig *cfg) {
  static const struct {
    const char *name;
    int layers, hidden, heads, ffn;
  } presets[] = {{"tiny", 2, 128, 2, 512},
                 {"mini", 4, 256, 4, 1024},
                 {"base", 12, 768, 12, 3072},
                 {"large", 24, 1024, 16, 4096}};
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (!strcmp(name, presets[i].name)) {
      kiln_bert_config_defaults(cfg);
      cfg->num_hidden_layers = presets[i].layers;
      cfg->hidden_size = presets[i].hidden;
      cfg->num_attention_heads = presets[i].heads;
      cfg->intermediate_size = presets[i].ffn;
      return KILN_BERT_OK;
    }
  return kiln_bert_fail(KILN_BERT_ERROR_NOT_FOUND,
                        "no model configuration '%s' (tiny, mini, base, large or a config.json)",
                        name);
}

/* An integer key in [lo, hi], if present. */
static KilnBertStatus get_int(const cJSON *root, const char *key, int lo, int hi, int *out,
                              const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!v) return KILN_BERT_OK;
  if (!cJSON_IsNumber(v) || v->valuedouble != (double)(long long)v->valuedouble ||
      v->valuedouble < lo || v->valuedouble > hi)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: \"%s\" must be an integer in [%d, %d]", name,
                          key, lo, hi);
  *out = (int)v->valuedouble;
  return KILN_BERT_OK;
}

/* A number key in [lo, hi), if present; with null_ok, null leaves *out alone. */
static KilnBertStatus get_num(const cJSON *root, const char *key, double lo, double hi, int null_ok,
                              double *out, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!v || (null_ok && cJSON_IsNull(v))) return KILN_BERT_OK;
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble < hi))
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: \"%s\" must be a number in [%g, %g)%s", name,
                          key, lo, hi, null_ok ? " or null" : "");
  *out = v->valuedouble;
  return KILN_BERT_OK;
}

/* A string key that, if present, must equal want. */
static KilnBertStatus get_fixed(const cJSON *root, const char *key, const char *want,
                                const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!v) return KILN_BERT_OK;
  if (!cJSON_IsString(v) || strcmp(v->valuestring, want))
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: \"%s\" must be \"%s\"%s%s%s", name, key,
                          want, cJSON_IsString(v) ? ", not \"" : "",
                          cJSON_IsString(v) ? v->valuestring : "", cJSON_IsString(v) ? "\"" : "");
  return KILN_BERT_OK;
}

static KilnBertStatus parse_root(const cJSON *root, const char *name, KilnBertConfig *c) {
  const int big = 1 << 30;
  KilnBertStatus st;
#define TRY(call)                                                                                  \
  do {                                                                                             \
    if ((st = (call)) != KILN_BERT_OK) return st;                                                  \
  } while (0)
  TRY(get_fixed(root, "model_type", "bert", name));
  TRY(get_fixed(root, "hidden_act", "gelu", name));
  TRY(get_fixed(root, "position_embedding_type", "absolute", name));
  TRY(get_int(root, "vocab_size", 1, big, &c->vocab_size, name));
  TRY(get_int(root, "hidden_size", 1, big, &c->hidden_size, name));
  TRY(get_int(root, "num_hidden_layers", 1, big, &c->num_hidden_layers, name));
  TRY(get_int(root, "num_attention_heads", 1, big, &c->num_attention_heads, name));
  TRY(get_int(root, "intermediate_size", 1, big, &c->intermediate_size, name));
  TRY(get_int(root, "max_position_embeddings", 2, big, &c->max_position_embeddings, name));
  TRY(get_int(root, "type_vocab_size", 1, big, &c->type_vocab_size, name));
  TRY(get_int(root, "pad_token_id", 0, big, &c->pad_token_id, name));
  TRY(get_num(root, "layer_norm_eps", 0, 1, 0, &c->layer_norm_eps, name));
  TRY(get_num(root, "hidden_dropout_prob", 0, 1, 0, &c->hidden_dropout_prob, name));
  TRY(get_num(root, "attention_probs_dropout_prob", 0, 1, 0, &c->attention_probs_dropout_prob,
              name));
  TRY(get_num(root, "classifier_dropout", 0, 1, 1, &c->classifier_dropout, name));
  TRY(get_num(root, "initializer_range", 0, 1e30, 0, &c->initializer_range, name));
#undef TRY
  if (c->layer_norm_eps <= 0)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: \"layer_norm_eps\" must be positive", name);
  if (c->hidden_size % c->num_attention_heads)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: hidden_size %d is not a multiple of num_attention_heads %d", name,
                          c->hidden_size, c->num_attention_heads);
  if (c->pad_token_id >= c->vocab_size)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: pad_token_id %d outside the vocabulary",
                          name, c->pad_token_id);
  /* num_labels: the key, else the size of id2label, else the default 2 */
  const cJSON *id2label = cJSON_GetObjectItemCaseSensitive(root, "id2label");
  int from_map = -1;
  if (id2label && !cJSON_IsNull(id2label)) {
    if (!cJSON_IsObject(id2label))
      return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: \"id2label\" must be an object", name);
    from_map = cJSON_GetArraySize(id2label);
  }
  int nl = -1;
  if ((st = get_int(root, "num_labels", 1, big, &nl, name)) != KILN_BERT_OK) return st;
  if (nl > 0 && from_map >= 0 && nl != from_map)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: num_labels %d but id2label has %d labels",
                          name, nl, from_map);
  c->num_labels = nl > 0 ? nl : from_map > 0 ? from_map : 2;
  if (c->num_labels < 2)
    return kiln_bert_fail(KILN_BERT_ERROR_FORMAT,
                          "%s: a classifier needs at least 2 labels, "
                          "id2label has %d",
                          name, c->num_labels);
  return KILN_BERT_OK;
}

KilnBertStatus kiln_bert_config_parse(const char *json, size_t len, const char *name,
                                      KilnBertConfig *cfg) {
  cJSON *root = cJSON_ParseWithLength(json, len);
  if (!root) return kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: not valid JSON", name);
  KilnBertConfig c;
  kiln_bert_config_defaults(&c);
  KilnBertStatus st = cJSON_IsObject(root)
                          ? parse_root(root, name, &c)
                          : kiln_bert_fail(KILN_BERT_ERROR_FORMAT, "%s: not a JSON object", name);
  cJSON_Delete(root);
  if (st == KILN_BERT_OK) *cfg = c;
  return st;
}

KilnBertStatus kiln_bert_config_load(const char *path, KilnBertConfig *cfg) {
  char *text;
  size_t len;
  KilnBertStatus st =
      kiln_bert_file_read(path, KILN_BERT_MAX_JSON_BYTES, "KILN_BERT_MAX_JSON_BYTES", &text, &len);
  if (st != KILN_BERT_OK) return st;
  st = kiln_bert_config_parse(text, len, path, cfg);
  free(text);
  return st;
}

/* The shortest %g text that reads back as exactly x. */
static void fmt_double(char *buf, size_t cap, double x) {
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, cap, "%.*g", prec, x);
    if (strtod(buf, NULL) == x) return;
  }
}

KilnBertStatus kiln_bert_config_save(const char *path, const KilnBertConfig *c) {
  char eps[32], hd[32], ad[32], cd[32], ir[32];
  fmt_double(eps, sizeof eps, c->layer_norm_eps);
  fmt_double(hd, sizeof hd, c->hidden_dropout_prob);
  fmt_double(ad, sizeof ad, c->attention_probs_dropout_prob);
  fmt_double(ir, sizeof ir, c->initializer_range);
  if (c->classifier_dropout < 0)
    snprintf(cd, sizeof cd, "null");
  else
    fmt_double(cd, sizeof cd, c->classifier_dropout);
  size_t cap = 1024 + (size_t)c->num_labels * 48, n = 0;
  char *s = malloc(cap);
  if (!s) return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  n += (size_t)snprintf(s + n, cap - n,
                        "{\n  \"architectures\": [\"BertForSequenceClassification\"],\n"
                        "  \"model_type\": \"bert\",\n  \"hidden_act\": \"gelu\",\n"
                        "  \"position_embedding_type\": \"absolute\",\n"
                        "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n"
                        "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n"
                        "  \"intermediate_size\": %d,\n  \"max_position_embeddings\": %d,\n"
                        "  \"type_vocab_size\": %d,\n  \"pad_token_id\": %d,\n"
                        "  \"layer_norm_eps\": %s,\n  \"hidden_dropout_prob\": %s,\n"
                        "  \"attention_probs_dropout_prob\": %s,\n  \"classifier_dropout\": %s,\n"
                        "  \"initializer_range\": %s,\n  \"id2label\": {",
                        c->vocab_size, c->hidden_size, c->num_hidden_layers, c->num_attention_heads,
                        c->intermediate_size, c->max_position_embeddings, c->type_vocab_size,
                        c->pad_token_id, eps, hd, ad, cd, ir);
  for (int i = 0; i < c->num_labels; i++)
    n += (size_t)snprintf(s + n, cap - n, "%s\"%d\": \"LABEL_%d\"", i ? ", " : "", i, i);
  n += (size_t)snprintf(s + n, cap - n, "},\n  \"label2id\": {");
  for (int i = 0; i < c->num_labels; i++)
    n += (size_t)snprintf(s + n, cap - n, "%s\"LABEL_%d\": %d", i ? ", " : "", i, i);
  n += (size_t)snprintf(s + n, cap - n, "}\n}\n");
  KilnBertStatus st = kiln_bert_file_write_atomic(path, s, n);
  free(s);
  return st;
}

KilnBertStatus kiln_bert_config_check_seq_len(const KilnBertConfig *cfg, size_t seq_len) {
  if (seq_len < 2 || seq_len > (size_t)cfg->max_position_embeddings)
    return kiln_bert_fail(KILN_BERT_ERROR_INVALID_ARGUMENT,
                          "--seq-len %zu: must be between 2 and the model's "
                          "max_position_embeddings (%d)",
                          seq_len, cfg->max_position_embeddings);
  return KILN_BERT_OK;
}
