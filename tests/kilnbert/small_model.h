/* small_model.h — the small BERT the model tests share: 2 layers, hidden 32, 2 heads of 16,
 * FFN 64, 32 positions, 2 labels, the given vocabulary size. Small enough that the double
 * reference (model_ref.c) and the emulator run a step in seconds, large enough for every part
 * of the model (multi-head attention, padding, two layers) to matter. */
#ifndef KILN_TEST_SMALL_MODEL_H
#define KILN_TEST_SMALL_MODEL_H

#include "bert_config.h"

static inline void kb_test_small_config(KilnBertConfig *c, int vocab_size) {
  kiln_bert_config_defaults(c);
  c->vocab_size = vocab_size;
  c->hidden_size = 32;
  c->num_hidden_layers = 2;
  c->num_attention_heads = 2;
  c->intermediate_size = 64;
  c->max_position_embeddings = 32;
  c->num_labels = 2;
}

#endif /* KILN_TEST_SMALL_MODEL_H */
