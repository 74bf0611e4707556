/* tok_dump.c — prints the basic tokenizer's words for each line of stdin (split on \n only,
 * as `kiln-bert tokenize` does), joined by single spaces, so that tok_ref.py can compare them
 * with its Python rendering of the contract over every code point; ids alone would hide most
 * differences behind [UNK]. Usage: tok_dump VOCAB < lines */
#include "bert_tok.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  KilnBertVocab *v = NULL;
  KilnBertTokenizer *tok = NULL;
  if (argc != 2 || kiln_bert_vocab_load(argv[1], &v) != KILN_BERT_OK ||
      kiln_bert_tok_create(v, &tok) != KILN_BERT_OK) {
    fprintf(stderr, "usage: tok_dump VOCAB < lines (%s)\n", kiln_bert_last_error());
    kiln_bert_vocab_destroy(v);
    return 2;
  }
  char *line = NULL, *words = NULL;
  size_t cap = 0;
  ssize_t got;
  int rc = 0;
  while ((got = getdelim(&line, &cap, '\n', stdin)) > 0) {
    size_t len = (size_t)got - (line[got - 1] == '\n');
    if (kiln_bert_tok_basic(tok, line, len, &words) != KILN_BERT_OK) {
      rc = 1;
      break;
    }
    printf("%s\n", words);
    free(words);
  }
  free(line);
  kiln_bert_tok_destroy(tok);
  kiln_bert_vocab_destroy(v);
  return rc;
}
