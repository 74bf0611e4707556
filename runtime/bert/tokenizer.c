/* tokenizer.c — the BERT tokenizer, in the order of the contract's section 3.
 *
 * One pass over the bytes decodes, cleans (drops C* but \t \n \r, U+0000 and U+FFFD; turns
 * \t \n \r and Zs into spaces) and puts spaces around CJK ideographs, collecting a whitespace
 * word (str.split's whitespace) at a time. NFC is skipped: the words are brought to NFD next,
 * and NFD(NFC(x)) = NFD(x). Each word then goes through:
 *   lowercase + NFD per character from the generated table (U+03A3 gets str.lower's final-sigma
 *   rule from the word around it), canonical reordering of combining marks over the whole word
 *   (what NFD of the word does beyond per-character decomposition), dropping Mn, and splitting
 *   off punctuation, which yields the basic tokens;
 *   WordPiece per token: more than 100 code points is [UNK]; else the longest vocabulary entry
 *   from the left ("##" before every piece but the first), and [UNK] for the whole token as soon
 *   as some position matches nothing.
 * Buffers live in the tokenizer and only grow, so tokenizing allocates nothing in the steady
 * state. */
#include "bert_tok.h"
#include "bert_internal.h"
#include "bert_unicode.h"

#include <stdlib.h>
#include <string.h>

struct KilnBertTokenizer {
  const KilnBertVocab *vocab;
  KilnBertSpecialIds special;
  uint32_t *word, *mapped,
      *piece; /* code points: the whitespace word, after lower+NFD, one token */
  size_t word_cap, mapped_cap, piece_cap;
  char *utf8, *key; /* a token's bytes; "##" + a suffix of them */
  size_t utf8_cap, key_cap;
  size_t *offs; /* byte offset of each code point of the token in utf8 */
  size_t offs_cap;
};

/* Called with every basic token; returns 0, or -1 when out of memory. */
typedef int (*TokenFn)(KilnBertTokenizer *tok, const uint32_t *cps, size_t n, void *ctx);

void kiln_bert_ids_free(KilnBertIds *ids) {
  free(ids->v);
  ids->v = NULL;
  ids->n = ids->cap = 0;
}

static int ids_push(KilnBertIds *ids, int32_t id) {
  if (kiln_bert_grow((void **)&ids->v, &ids->cap, ids->n + 1, sizeof *ids->v)) return -1;
  ids->v[ids->n++] = id;
  return 0;
}

KilnBertStatus kiln_bert_tok_create(const KilnBertVocab *vocab, KilnBertTokenizer **out) {
  static const char *const names[4] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]"};
  int32_t ids[4];
  for (int i = 0; i < 4; i++) {
    ids[i] = kiln_bert_vocab_find(vocab, names[i], strlen(names[i]));
    if (ids[i] < 0)
      return kiln_bert_fail(KILN_BERT_ERROR_NOT_FOUND, "the vocabulary has no %s token", names[i]);
  }
  KilnBertTokenizer *tok = calloc(1, sizeof *tok);
  if (!tok) return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory");
  tok->vocab = vocab;
  tok->special = (KilnBertSpecialIds){.pad = ids[0], .unk = ids[1], .cls = ids[2], .sep = ids[3]};
  *out = tok;
  return KILN_BERT_OK;
}

void kiln_bert_tok_destroy(KilnBertTokenizer *tok) {
  if (!tok) return;
  free(tok->word);
  free(tok->mapped);
  free(tok->piece);
  free(tok->utf8);
  free(tok->key);
  free(tok->offs);
  free(tok);
}

const KilnBertSpecialIds *kiln_bert_tok_specials(const KilnBertTokenizer *tok) {
  return &tok->special;
}

/* str.lower's final-sigma rule for the capital sigma at w[i]: a cased letter before it
 * (skipping case-ignorables) and none after it (likewise). */
static int final_sigma(const uint32_t *w, size_t n, size_t i) {
  size_t j = i;
  while (j > 0 && (kiln_bert_uni_flags(w[j - 1]) & KILN_BERT_UNI_IGNORABLE)) j--;
  if (j == 0 || !(kiln_bert_uni_flags(w[j - 1]) & KILN_BERT_UNI_CASED)) return 0;
  for (j = i + 1; j < n && (kiln_bert_uni_flags(w[j]) & KILN_BERT_UNI_IGNORABLE); j++) continue;
  return j == n || !(kiln_bert_uni_flags(w[j]) & KILN_BERT_UNI_CASED);
}

/* Canonical ordering: within each run of non-starters, a stable sort by combining class. */
static void reorder_marks(uint32_t *s, size_t n) {
  for (size_t i = 1; i < n; i++) {
    unsigned c = kiln_bert_uni_ccc(s[i]);
    if (c == 0) continue;
    size_t j = i;
    uint32_t cp = s[i];
    while (j > 0) {
      unsigned p = kiln_bert_uni_ccc(s[j - 1]);
      if (p == 0 || p <= c) break;
      s[j] = s[j - 1];
      j--;
    }
    s[j] = cp;
  }
}

/* Steps 4 and 5 for one whitespace word of tok->word. */
static int word_tokens(KilnBertTokenizer *tok, size_t n, TokenFn fn, void *ctx) {
  if (kiln_bert_grow((void **)&tok->mapped, &tok->mapped_cap, n * KILN_BERT_UNI_MAX_MAP,
                     sizeof *tok->mapped) ||
      kiln_bert_grow((void **)&tok->piece, &tok->piece_cap, n * KILN_BERT_UNI_MAX_MAP,
                     sizeof *tok->piece))
    return -1;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t cp = tok->word[i];
    if (cp == 0x3A3)
      tok->mapped[m++] = final_sigma(tok->word, n, i) ? 0x3C2 : 0x3C3;
    else
      m += kiln_bert_uni_lower_nfd(cp, tok->mapped + m);
  }
  reorder_marks(tok->mapped, m);
  size_t np = 0;
  for (size_t i = 0; i < m; i++) {
    uint32_t cp = tok->mapped[i];
    unsigned f = kiln_bert_uni_flags(cp);
    if (f & KILN_BERT_UNI_MN) continue;
    if (f & KILN_BERT_UNI_PUNCT) {
      if (np && fn(tok, tok->piece, np, ctx)) return -1;
      np = 0;
      if (fn(tok, &cp, 1, ctx)) return -1;
      continue;
    }
    tok->piece[np++] = cp;
  }
  return np ? fn(tok, tok->piece, np, ctx) : 0;
}

/* Steps 1 to 3: decode, clean, CJK spacing, whitespace split; each word to word_tokens. */
static int basic_tokens(KilnBertTokenizer *tok, const char *text, size_t len, TokenFn fn,
                        void *ctx) {
  const unsigned char *s = (const unsigned char *)text;
  size_t n = 0;
  for (size_t i = 0; i <= len;) {
    uint32_t cp = ' ';
    if (i < len) {
      i += kiln_bert_utf8_decode(s + i, len - i, &cp);
      unsigned f = kiln_bert_uni_flags(cp);
      if (f & KILN_BERT_UNI_DROP) continue;
      if (f & KILN_BERT_UNI_SPACE) cp = ' ';
    } else {
      i++; /* the end of the text ends the last word */
    }
    int cjk = kiln_bert_uni_is_cjk(cp);
    if (cjk || (kiln_bert_uni_flags(cp) & KILN_BERT_UNI_SPLIT)) {
      if (n && word_tokens(tok, n, fn, ctx)) return -1;
      n = 0;
      if (!cjk) continue;
    }
    if (kiln_bert_grow((void **)&tok->word, &tok->word_cap, n + 1, sizeof *tok->word)) return -1;
    tok->word[n++] = cp;
    if (cjk) { /* an ideograph is a word of its own */
      if (word_tokens(tok, n, fn, ctx)) return -1;
      n = 0;
    }
  }
  return 0;
}

/* Puts the UTF-8 of cps into tok->utf8 and the byte offset of each code point into tok->offs
 * (offs[n] = total). */
static int to_utf8(KilnBertTokenizer *tok, const uint32_t *cps, size_t n) {
  if (kiln_bert_grow((void **)&tok->utf8, &tok->utf8_cap, 4 * n + 1, 1) ||
      kiln_bert_grow((void **)&tok->offs, &tok->offs_cap, n + 1, sizeof *tok->offs) ||
      kiln_bert_grow((void **)&tok->key, &tok->key_cap, 4 * n + 3, 1))
    return -1;
  size_t b = 0;
  for (size_t i = 0; i < n; i++) {
    tok->offs[i] = b;
    b += kiln_bert_utf8_encode(cps[i], tok->utf8 + b);
  }
  tok->offs[n] = b;
  tok->utf8[b] = '\0';
  return 0;
}

/* Step 6 for one basic token; appends to the KilnBertIds in ctx. */
static int wordpiece(KilnBertTokenizer *tok, const uint32_t *cps, size_t n, void *ctx) {
  KilnBertIds *ids = ctx;
  if (n > KILN_BERT_TOK_MAX_WORD_CHARS) return ids_push(ids, tok->special.unk);
  if (to_utf8(tok, cps, n)) return -1;
  size_t first = ids->n;
  for (size_t start = 0; start < n;) {
    const char *base = tok->utf8;
    size_t pre = 0;
    if (start > 0) { /* "##" + the rest of the token, so every candidate is a prefix of key */
      tok->key[0] = tok->key[1] = '#';
      memcpy(tok->key + 2, tok->utf8 + tok->offs[start], tok->offs[n] - tok->offs[start]);
      base = tok->key;
      pre = 2;
    }
    int32_t id = -1;
    size_t end = n;
    for (; end > start; end--) {
      id = kiln_bert_vocab_find(tok->vocab, base, pre + tok->offs[end] - tok->offs[start]);
      if (id >= 0) break;
    }
    if (id < 0) { /* no piece fits here: the whole token is unknown */
      ids->n = first;
      return ids_push(ids, tok->special.unk);
    }
    if (ids_push(ids, id)) return -1;
    start = end;
  }
  return 0;
}

KilnBertStatus kiln_bert_tok_encode(KilnBertTokenizer *tok, const char *text, size_t len,
                                    KilnBertIds *ids) {
  size_t before = ids->n;
  if (basic_tokens(tok, text, len, wordpiece, ids)) {
    ids->n = before;
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory tokenizing a text");
  }
  return KILN_BERT_OK;
}

typedef struct Joined {
  char *s;
  size_t n, cap;
} Joined;

static int join_token(KilnBertTokenizer *tok, const uint32_t *cps, size_t n, void *ctx) {
  Joined *j = ctx;
  if (to_utf8(tok, cps, n)) return -1;
  size_t b = tok->offs[n];
  if (kiln_bert_grow((void **)&j->s, &j->cap, j->n + b + 2, 1)) return -1;
  if (j->n) j->s[j->n++] = ' ';
  memcpy(j->s + j->n, tok->utf8, b);
  j->n += b;
  j->s[j->n] = '\0';
  return 0;
}

KilnBertStatus kiln_bert_tok_basic(KilnBertTokenizer *tok, const char *text, size_t len,
                                   char **out) {
  Joined j = {NULL, 0, 0};
  if (basic_tokens(tok, text, len, join_token, &j) || (!j.s && !(j.s = calloc(1, 1)))) {
    free(j.s);
    return kiln_bert_fail(KILN_BERT_ERROR_OUT_OF_MEMORY, "out of memory tokenizing a text");
  }
  *out = j.s;
  return KILN_BERT_OK;
}

size_t kiln_bert_tok_row(const KilnBertTokenizer *tok, const int32_t *ids, size_t n, size_t seq_len,
                         int32_t *row) {
  if (seq_len == 1) return 0; /* no row has room for [CLS] and [SEP]; callers check L >= 2 */
  size_t keep = n;
  if (seq_len && keep > seq_len - 2) keep = seq_len - 2;
  row[0] = tok->special.cls;
  if (keep) memcpy(row + 1, ids, keep * sizeof *ids);
  row[keep + 1] = tok->special.sep;
  for (size_t i = keep + 2; i < seq_len; i++) row[i] = tok->special.pad;
  return keep + 2;
}
