/* libFuzzer target: any byte string through the trainer's input formats. The first byte picks
 * the reader: the tokenizer (basic words and ids, over the test vocabulary, whose path is
 * compiled in), a vocabulary file, a safetensors file (every readable tensor converted), or a
 * config.json. Must never crash, hang or leak; refusals are fine. */
#include "bert_config.h"
#include "bert_st.h"
#include "bert_tok.h"
#include "bert_vocab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static KilnBertVocab *vocab;
static KilnBertTokenizer *tok;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if (!tok && (kiln_bert_vocab_load(KILN_FUZZ_BERT_VOCAB, &vocab) != KILN_BERT_OK ||
               kiln_bert_tok_create(vocab, &tok) != KILN_BERT_OK))
    abort(); /* a broken setup, not a finding */
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  switch (data[0] % 4) {
  case 0: {
    KilnBertIds ids = {0};
    char *words = NULL;
    if (kiln_bert_tok_encode(tok, text, len, &ids) == KILN_BERT_OK) {
      int32_t *row = malloc((ids.n + 2) * sizeof *row);
      if (row) kiln_bert_tok_row(tok, ids.v, ids.n, 0, row);
      free(row);
    }
    if (kiln_bert_tok_basic(tok, text, len, &words) == KILN_BERT_OK) free(words);
    kiln_bert_ids_free(&ids);
    break;
  }
  case 1: {
    KilnBertVocab *v = NULL;
    if (kiln_bert_vocab_parse(text, len, "fuzz.txt", &v) == KILN_BERT_OK)
      for (size_t i = 0; i < kiln_bert_vocab_size(v); i++) {
        const char *t = kiln_bert_vocab_token(v, (int32_t)i);
        (void)kiln_bert_vocab_find(v, t, strlen(t));
      }
    kiln_bert_vocab_destroy(v);
    break;
  }
  case 2: {
    KilnBertSt *st = NULL;
    if (kiln_bert_st_parse(text, len, "fuzz.safetensors", &st) == KILN_BERT_OK)
      for (size_t i = 0; i < kiln_bert_st_count(st); i++) {
        const KilnBertStTensor *t = kiln_bert_st_tensor(st, i);
        if (t->dt == KILN_BERT_DTYPE_OTHER || t->numel > (1u << 20)) continue;
        float *out = malloc((size_t)t->numel * sizeof *out + 1);
        if (out) kiln_bert_st_read_f32(st, t->name, t->shape, t->ndim, out);
        free(out);
      }
    kiln_bert_st_close(st);
    break;
  }
  default: {
    KilnBertConfig cfg;
    kiln_bert_config_parse(text, len, "fuzz.json", &cfg);
    break;
  }
  }
  return 0;
}
