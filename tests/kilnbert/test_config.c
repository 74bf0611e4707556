/* test_config.c — config.json: BertConfig's defaults for missing keys, num_labels from the key,
 * from id2label or 2, the refusals (hidden_act, model_type, wrong types and sizes), a save/load
 * round trip, the presets and the --seq-len bound. Usage: test_config SCRATCH_DIR */
#include "bert_config.h"
#include "check.h"
#include "scratch_dir.h"

#include <string.h>
#include <unistd.h>

static KilnBertStatus parse(const char *json, KilnBertConfig *cfg) {
  return kiln_bert_config_parse(json, strlen(json), "config.json", cfg);
}

/* Expects json to be refused with a message containing needle. */
static void refuse(const char *json, const char *needle) {
  KilnBertConfig cfg;
  KilnBertStatus st = parse(json, &cfg);
  CHECK(st == KILN_BERT_ERROR_FORMAT, "%s: accepted", json);
  CHECK(st == KILN_BERT_OK || strstr(kiln_bert_last_error(), needle), "%s: message '%s' lacks '%s'",
        json, kiln_bert_last_error(), needle);
}

static void test_defaults(void) {
  KilnBertConfig c;
  CHECK(parse("{}", &c) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  CHECK(c.vocab_size == 30522 && c.hidden_size == 768 && c.num_hidden_layers == 12 &&
            c.num_attention_heads == 12 && c.intermediate_size == 3072 &&
            c.max_position_embeddings == 512 && c.type_vocab_size == 2 && c.num_labels == 2 &&
            c.pad_token_id == 0,
        "integer defaults");
  CHECK(c.layer_norm_eps == 1e-12 && c.hidden_dropout_prob == 0.1 &&
            c.attention_probs_dropout_prob == 0.1 && c.classifier_dropout < 0 &&
            c.initializer_range == 0.02,
        "real defaults");

  /* a bert-base-uncased style file: keys the classifier ignores are ignored */
  static const char base[] =
      "{\n  \"architectures\": [\"BertForMaskedLM\"],\n  \"attention_probs_dropout_prob\": 0.1,\n"
      "  \"gradient_checkpointing\": false,\n  \"hidden_act\": \"gelu\",\n"
      "  \"hidden_dropout_prob\": 0.1,\n  \"hidden_size\": 1024,\n  \"initializer_range\": 0.02,\n"
      "  \"intermediate_size\": 4096,\n  \"layer_norm_eps\": 1e-12,\n"
      "  \"max_position_embeddings\": 512,\n  \"model_type\": \"bert\",\n"
      "  \"num_attention_heads\": 16,\n  \"num_hidden_layers\": 24,\n  \"pad_token_id\": 0,\n"
      "  \"position_embedding_type\": \"absolute\",\n  \"transformers_version\": \"4.6.0.dev0\",\n"
      "  \"type_vocab_size\": 2,\n  \"use_cache\": true,\n  \"vocab_size\": 30522\n}\n";
  CHECK(parse(base, &c) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  CHECK(c.hidden_size == 1024 && c.num_hidden_layers == 24 && c.num_attention_heads == 16 &&
            c.intermediate_size == 4096 && c.num_labels == 2,
        "large shape");

  CHECK(parse("{\"layer_norm_eps\": 1e-5, \"classifier_dropout\": 0.2}", &c) == KILN_BERT_OK &&
            c.layer_norm_eps == 1e-5 && c.classifier_dropout == 0.2,
        "eps and classifier dropout");
  CHECK(parse("{\"classifier_dropout\": null}", &c) == KILN_BERT_OK && c.classifier_dropout < 0,
        "null classifier dropout");
}

static void test_labels(void) {
  KilnBertConfig c;
  CHECK(parse("{\"id2label\": {\"0\": \"NEG\", \"1\": \"NEU\", \"2\": \"POS\"}}", &c) ==
                KILN_BERT_OK &&
            c.num_labels == 3,
        "num_labels from id2label: %d", c.num_labels);
  CHECK(parse("{\"num_labels\": 5}", &c) == KILN_BERT_OK && c.num_labels == 5, "num_labels key");
  CHECK(parse("{\"num_labels\": 3, \"id2label\": {\"0\": \"a\", \"1\": \"b\", \"2\": \"c\"}}",
              &c) == KILN_BERT_OK &&
            c.num_labels == 3,
        "both, agreeing");
  refuse("{\"num_labels\": 2, \"id2label\": {\"0\": \"a\", \"1\": \"b\", \"2\": \"c\"}}",
         "id2label");
  refuse("{\"id2label\": [\"a\", \"b\"]}", "id2label");
  refuse("{\"id2label\": {\"0\": \"only\"}}", "2 labels");
}

static void test_refusals(void) {
  refuse("{\"hidden_act\": \"gelu_new\"}", "hidden_act");
  refuse("{\"hidden_act\": \"relu\"}", "\"relu\"");
  refuse("{\"hidden_act\": 3}", "hidden_act");
  refuse("{\"model_type\": \"roberta\"}", "model_type");
  refuse("{\"position_embedding_type\": \"relative_key\"}", "position_embedding_type");
  refuse("{\"hidden_size\": \"768\"}", "hidden_size");
  refuse("{\"hidden_size\": 768.5}", "hidden_size");
  refuse("{\"num_hidden_layers\": 0}", "num_hidden_layers");
  refuse("{\"hidden_size\": 100, \"num_attention_heads\": 12}", "multiple");
  refuse("{\"layer_norm_eps\": 0}", "layer_norm_eps");
  refuse("{\"hidden_dropout_prob\": 1.5}", "hidden_dropout_prob");
  refuse("{\"pad_token_id\": 40000}", "pad_token_id");
  refuse("[1, 2]", "object");
  refuse("{\"vocab_size\": ", "JSON");
}

static int same_config(const KilnBertConfig *a, const KilnBertConfig *b) {
  return a->vocab_size == b->vocab_size && a->hidden_size == b->hidden_size &&
         a->num_hidden_layers == b->num_hidden_layers &&
         a->num_attention_heads == b->num_attention_heads &&
         a->intermediate_size == b->intermediate_size &&
         a->max_position_embeddings == b->max_position_embeddings &&
         a->type_vocab_size == b->type_vocab_size && a->num_labels == b->num_labels &&
         a->pad_token_id == b->pad_token_id && a->layer_norm_eps == b->layer_norm_eps &&
         a->hidden_dropout_prob == b->hidden_dropout_prob &&
         a->attention_probs_dropout_prob == b->attention_probs_dropout_prob &&
         a->classifier_dropout == b->classifier_dropout &&
         a->initializer_range == b->initializer_range;
}

static void test_save_load(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/config.json", dir);
  KilnBertConfig c, back;
  CHECK(kiln_bert_config_preset("tiny", &c) == KILN_BERT_OK && c.num_hidden_layers == 2 &&
            c.hidden_size == 128 && c.num_attention_heads == 2 && c.intermediate_size == 512,
        "tiny preset");
  c.num_labels = 3;
  c.layer_norm_eps = 1e-12;
  c.hidden_dropout_prob = 0.1;
  c.classifier_dropout = 0.3;
  CHECK(kiln_bert_config_save(path, &c) == KILN_BERT_OK, "save: %s", kiln_bert_last_error());
  CHECK(kiln_bert_config_load(path, &back) == KILN_BERT_OK, "load: %s", kiln_bert_last_error());
  CHECK(same_config(&c, &back), "round trip keeps every field exactly");
  unlink(path);
  CHECK(kiln_bert_config_load(path, &back) == KILN_BERT_ERROR_IO &&
            strstr(kiln_bert_last_error(), path),
        "missing file: %s", kiln_bert_last_error());

  CHECK(kiln_bert_config_preset("mini", &c) == KILN_BERT_OK && c.num_hidden_layers == 4 &&
            c.hidden_size == 256 && c.num_attention_heads == 4 && c.intermediate_size == 1024,
        "mini");
  CHECK(kiln_bert_config_preset("base", &c) == KILN_BERT_OK && c.hidden_size == 768, "base");
  CHECK(kiln_bert_config_preset("large", &c) == KILN_BERT_OK && c.num_hidden_layers == 24 &&
            c.hidden_size == 1024 && c.num_attention_heads == 16 && c.intermediate_size == 4096,
        "large");
  CHECK(kiln_bert_config_preset("huge", &c) == KILN_BERT_ERROR_NOT_FOUND, "unknown preset");
  CHECK(kiln_bert_config_check_seq_len(&c, 512) == KILN_BERT_OK, "512 fits");
  CHECK(kiln_bert_config_check_seq_len(&c, 513) == KILN_BERT_ERROR_INVALID_ARGUMENT &&
            strstr(kiln_bert_last_error(), "512"),
        "513 is over max_position_embeddings: %s", kiln_bert_last_error());
  CHECK(kiln_bert_config_check_seq_len(&c, 1) == KILN_BERT_ERROR_INVALID_ARGUMENT, "1");
}

int main(int argc, char **argv) {
  int rc = kb_test_scratch_dir(argc, argv);
  if (rc) return rc;
  test_defaults();
  test_labels();
  test_refusals();
  test_save_load(argv[1]);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
