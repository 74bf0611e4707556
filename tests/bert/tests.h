/* tests.h — one entry point per BERT kernel family; each runs all its configurations on `dev`
 * and returns whether every one passed. */
#ifndef KILN_BERT_TESTS_H
#define KILN_BERT_TESTS_H

#include <kiln/kilnrt.h>
#include <stdbool.h>

bool kiln_bert_test_gelu(KilnRtDevice *dev);
bool kiln_bert_test_layernorm(KilnRtDevice *dev);
bool kiln_bert_test_xent(KilnRtDevice *dev);
bool kiln_bert_test_dropout(KilnRtDevice *dev);
bool kiln_bert_test_embedding(KilnRtDevice *dev);
bool kiln_bert_test_adamw(KilnRtDevice *dev);
bool kiln_bert_test_gemm(KilnRtDevice *dev);
bool kiln_bert_test_attention(KilnRtDevice *dev);

#endif /* KILN_BERT_TESTS_H */
