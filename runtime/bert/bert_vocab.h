/* bert_vocab.h — a WordPiece vocabulary (vocab.txt): one token per line, a token's id is its
 * 0-based line number. Lines end in \n, \r\n or \r (the reference reads the file in Python's
 * universal-newline text mode); a last line without a terminator counts, no token follows a
 * final terminator. A token that appears twice maps to its last line, as in the reference's dict.
 * Lookups are by the token's UTF-8 bytes. */
#ifndef KILN_BERT_VOCAB_H
#define KILN_BERT_VOCAB_H

#include "bert_status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct KilnBertVocab KilnBertVocab;

/* Reads and indexes the vocabulary file at path. On success *out is owned by the caller
 * (kiln_bert_vocab_destroy). IO when unreadable; FORMAT (naming the line) for invalid UTF-8 or
 * an empty file. */
KilnBertStatus kiln_bert_vocab_load(const char *path, KilnBertVocab **out);
/* The same from len bytes at data (copied); `name` is used in messages. */
KilnBertStatus kiln_bert_vocab_parse(const char *data, size_t len, const char *name,
                                     KilnBertVocab **out);
/* NULL is a no-op. */
void kiln_bert_vocab_destroy(KilnBertVocab *vocab);

/* The number of lines, so ids are 0..size-1. */
size_t kiln_bert_vocab_size(const KilnBertVocab *vocab);
/* The id of the token whose bytes are tok[0..len), or -1. */
int32_t kiln_bert_vocab_find(const KilnBertVocab *vocab, const char *tok, size_t len);
/* The token on line `id` (NUL-terminated, owned by the vocabulary), or NULL out of range. */
const char *kiln_bert_vocab_token(const KilnBertVocab *vocab, int32_t id);

#endif /* KILN_BERT_VOCAB_H */
