/* tests.h — one entry point per BERT kernel family; each runs its configurations on `dev` (all
 * of them on cpu; on emu the scaled-down set docs/kernels/ lists) and returns whether every one
 * passed. */
#ifndef KILN_BERT_TESTS_H
#define KILN_BERT_TESTS_H

#include "harness.h"

#include <stdbool.h>

bool kiln_bert_test_gelu(const KilnBertDevice *dev);
bool kiln_bert_test_layernorm(const KilnBertDevice *dev);
bool kiln_bert_test_xent(const KilnBertDevice *dev);
bool kiln_bert_test_dropout(const KilnBertDevice *dev);
bool kiln_bert_test_embedding(const KilnBertDevice *dev);
bool kiln_bert_test_adamw(const KilnBertDevice *dev);
bool kiln_bert_test_gemm(const KilnBertDevice *dev);
bool kiln_bert_test_attention(const KilnBertDevice *dev);
bool kiln_bert_test_tanh(const KilnBertDevice *dev);
bool kiln_bert_test_cast(const KilnBertDevice *dev);

#endif /* KILN_BERT_TESTS_H */
