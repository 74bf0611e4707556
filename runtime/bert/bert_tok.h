/* bert_tok.h — the BERT tokenizer of the kiln-bert contract (section 3): the uncased basic
 * tokenizer (clean, space around CJK ideographs, split on whitespace, lowercase, strip accents,
 * split off punctuation) and greedy longest-match WordPiece, producing the same ids as the
 * Python reference for the same vocabulary; plus the model row [CLS] ids [SEP] [PAD]...
 *
 * A tokenizer keeps scratch buffers, so one tokenizer serves one thread at a time; several may
 * share one vocabulary. */
#ifndef KILN_BERT_TOK_H
#define KILN_BERT_TOK_H

#include "bert_status.h"
#include "bert_vocab.h"

#include <stddef.h>
#include <stdint.h>

/* Words longer than this many code points (after the basic tokenizer) become one [UNK]. */
#define KILN_BERT_TOK_MAX_WORD_CHARS 100

typedef struct KilnBertTokenizer KilnBertTokenizer;

/* The ids of the special tokens, looked up in the vocabulary. */
typedef struct KilnBertSpecialIds {
  int32_t pad, unk, cls, sep;
} KilnBertSpecialIds;

/* A growable list of ids; zero-initialize it, release it with kiln_bert_ids_free. */
typedef struct KilnBertIds {
  int32_t *v;
  size_t n, cap;
} KilnBertIds;

void kiln_bert_ids_free(KilnBertIds *ids);

/* Creates a tokenizer over vocab, which is borrowed and must outlive it. NOT_FOUND naming the
 * token when [PAD], [UNK], [CLS] or [SEP] is missing from the vocabulary. */
KilnBertStatus kiln_bert_tok_create(const KilnBertVocab *vocab, KilnBertTokenizer **out);
/* NULL is a no-op. */
void kiln_bert_tok_destroy(KilnBertTokenizer *tok);
const KilnBertSpecialIds *kiln_bert_tok_specials(const KilnBertTokenizer *tok);

/* Appends the WordPiece ids of text[0..len) (UTF-8; NUL bytes and invalid sequences allowed:
 * both are dropped) to ids, without [CLS]/[SEP]. OUT_OF_MEMORY is the only failure; ids then
 * holds what it held before. */
KilnBertStatus kiln_bert_tok_encode(KilnBertTokenizer *tok, const char *text, size_t len,
                                    KilnBertIds *ids);

/* The basic tokenizer alone: the words WordPiece would be given, each as UTF-8, joined by
 * single spaces, in *out (malloc'ed, NUL-terminated; free() it). For tests and debugging. */
KilnBertStatus kiln_bert_tok_basic(KilnBertTokenizer *tok, const char *text, size_t len,
                                   char **out);

/* Writes the row the model reads for ids[0..n) and returns the number of real tokens in it
 * (attention mask 1): [CLS] ids[:seq_len-2] [SEP], then [PAD] up to seq_len; the row holds
 * seq_len ids (seq_len >= 2). With seq_len == 0: [CLS] ids [SEP], no truncation and no padding,
 * and the row must hold n + 2 ids. seq_len == 1 writes nothing and returns 0. */
size_t kiln_bert_tok_row(const KilnBertTokenizer *tok, const int32_t *ids, size_t n, size_t seq_len,
                         int32_t *row);

#endif /* KILN_BERT_TOK_H */
