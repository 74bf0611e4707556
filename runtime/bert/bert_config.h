/* bert_config.h — the model's shape and hyperparameters, as in a Hugging Face config.json
 * (BertConfig keys): read (missing keys take BertConfig's defaults; num_labels from num_labels,
 * else the size of id2label, else 2; hidden_act must be "gelu"), written next to the weights by
 * --save, and the built-in presets tiny, mini, base and large. */
#ifndef KILN_BERT_CONFIG_H
#define KILN_BERT_CONFIG_H

#include "bert_status.h"

#include <stddef.h>

typedef struct KilnBertConfig {
  int vocab_size;                      /* 30522 */
  int hidden_size;                     /* 768 */
  int num_hidden_layers;               /* 12 */
  int num_attention_heads;             /* 12; divides hidden_size */
  int intermediate_size;               /* 3072 */
  int max_position_embeddings;         /* 512 */
  int type_vocab_size;                 /* 2 */
  int num_labels;                      /* 2 */
  int pad_token_id;                    /* 0 */
  double layer_norm_eps;               /* 1e-12 */
  double hidden_dropout_prob;          /* 0.1 */
  double attention_probs_dropout_prob; /* 0.1 */
  double classifier_dropout;           /* < 0 when unset (null): hidden_dropout_prob applies */
  double initializer_range;            /* 0.02 */
} KilnBertConfig;

/* BertConfig's defaults (the shape of bert-base-uncased). */
void kiln_bert_config_defaults(KilnBertConfig *cfg);
/* "tiny" (2 layers, hidden 128, 2 heads, FFN 512), "base" or "large" (24 layers, hidden 1024,
 * 16 heads, FFN 4096); vocabulary 30522, 512 positions. NOT_FOUND for another name. */
KilnBertStatus kiln_bert_config_preset(const char *name, KilnBertConfig *cfg);

/* Parses config.json text (len bytes; name is used in messages) into *cfg. FORMAT naming the
 * key for a wrong type or value, a hidden_act other than "gelu", a model_type other than
 * "bert", num_labels disagreeing with id2label, or sizes that do not fit together. */
KilnBertStatus kiln_bert_config_parse(const char *json, size_t len, const char *name,
                                      KilnBertConfig *cfg);
/* Reads and parses the file at path. IO when unreadable. */
KilnBertStatus kiln_bert_config_load(const char *path, KilnBertConfig *cfg);
/* Writes cfg as a config.json the reference can load (BertForSequenceClassification, labels
 * LABEL_0..), atomically. */
KilnBertStatus kiln_bert_config_save(const char *path, const KilnBertConfig *cfg);

/* INVALID_ARGUMENT when a row of seq_len tokens ([CLS] and [SEP] included) does not fit the
 * model: seq_len < 2 or above max_position_embeddings. */
KilnBertStatus kiln_bert_config_check_seq_len(const KilnBertConfig *cfg, size_t seq_len);

#endif /* KILN_BERT_CONFIG_H */
