/* test_tokenizer.c — the vocabulary and the tokenizer against the contract's section 3, with
 * the small hand-made vocabulary tests/kilnbert/vocab.txt (path in argv[1]). Each case gives a
 * text, the basic tokenizer's words and the WordPiece tokens expected; tokens are turned into
 * ids through the vocabulary, whose own ids are checked against line numbers first.
 * Usage: test_tokenizer VOCAB */
#include "bert_tok.h"
#include "bert_unicode.h"
#include "bert_vocab.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

typedef struct Case {
  const char *text;
  size_t len;         /* 0: strlen(text) */
  const char *words;  /* the basic tokens, joined by spaces */
  const char *pieces; /* the WordPiece tokens, joined by spaces */
} Case;

static const Case cases[] = {
    /* plain, lowercase, punctuation */
    {"The movie was GREAT!", 0, "the movie was great !", "the movie was great !"},
    {"", 0, "", ""},
    {"   \t  ", 0, "", ""},
    {"unwanted, unwanted.", 0, "unwanted , unwanted .", "un ##want ##ed , un ##want ##ed ."},
    {"un-wanted", 0, "un - wanted", "un - want ##ed"},
    {"it's", 0, "it ' s", "it ' s"},
    /* ASCII punctuation includes symbols ($ + < = > ^ ` | ~ and backslash) */
    {"$5~", 0, "$ 5 ~", "$ 5 ~"},
    {"a+b<a=b>a^b`a|b\\a", 0, "a + b < a = b > a ^ b ` a | b \\ a",
     "a + b < a = b > a ^ b ` a | b \\ a"},
    /* Unicode punctuation (P*) is split off; symbols (Sc, So) are not */
    {"\xe2\x80\x9cGreat\xe2\x80\x9d", 0, "\xe2\x80\x9c great \xe2\x80\x9d",
     "\xe2\x80\x9c great \xe2\x80\x9d"},
    {"\xc2\xbfQu\xc3\xa9?", 0, "\xc2\xbf que ?", "\xc2\xbf que ?"},
    {"a\xe2\x80\x94"
     "b\xe2\x80\xa6"
     "a\xc2\xb7"
     "b",
     0, "a \xe2\x80\x94 b \xe2\x80\xa6 a \xc2\xb7 b", "a \xe2\x80\x94 b \xe2\x80\xa6 a \xc2\xb7 b"},
    {"5\xe2\x82\xac", 0, "5\xe2\x82\xac", "5 ##\xe2\x82\xac"},
    {"great\xf0\x9f\x98\x80", 0, "great\xf0\x9f\x98\x80",
     "[UNK]"}, /* no ##U+1F600: the whole word */
    /* accents: precomposed and combining, upper and lower case */
    {"Caf\xc3\xa9 na\xc3\xafve NA\xc3\x8fVE", 0, "cafe naive naive", "cafe naive naive"},
    {"cafe\xcc\x81", 0, "cafe", "cafe"},
    {"R\xc3\x89SUM\xc3\x89", 0, "resume", "resume"},
    {"\xc4\xb0stanbul", 0, "istanbul", "istanbul"}, /* İ lowers to i + U+0307 (Mn) */
    /* a compatibility-equivalent grave accent decomposes to ASCII ` (punctuation) */
    {"a\xe1\xbf\xaf"
     "b",
     0, "a ` b", "a ` b"},
    /* final sigma: ς at the end of a word, σ inside */
    {"\xce\x9f\xce\x94\xce\x9f\xce\xa3", 0, "\xce\xbf\xce\xb4\xce\xbf\xcf\x82",
     "\xce\xbf\xce\xb4\xce\xbf\xcf\x82"},
    {"\xce\x9f\xce\x94\xce\x9f\xce\xa3"
     "A",
     0,
     "\xce\xbf\xce\xb4\xce\xbf\xcf\x83"
     "a",
     "\xce\xbf\xce\xb4\xce\xbf\xcf\x83 ##a"},
    /* Hangul syllables become their jamo */
    {"\xed\x95\x9c", 0, "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab",
     "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab"},
    /* CJK ideographs are words of their own; kana are not */
    {"\xe4\xb8\xad\xe5\x9b\xbdmovie", 0, "\xe4\xb8\xad \xe5\x9b\xbd movie",
     "\xe4\xb8\xad \xe5\x9b\xbd movie"},
    {"movie\xe3\x81\xae", 0, "movie\xe3\x81\xae", "[UNK]"},
    /* WordPiece: longest match first, no backtracking */
    {"walking maxx movies", 0, "walking maxx movies", "walk ##ing [UNK] movie ##s"},
    {"100", 0, "100", "10 ##0"},
    /* the cleaner: format characters vanish and join their neighbours */
    {"hel\xe2\x80\x8blo", 0, "hello", "hello"},         /* U+200B */
    {"hel\xc2\xadlo", 0, "hello", "hello"},             /* U+00AD */
    {"\xef\xbb\xbfhello", 0, "hello", "hello"},         /* BOM */
    {"hello\fworld", 0, "helloworld", "hello ##world"}, /* \f is Cc */
    {"hel\alo", 0, "hello", "hello"},                   /* BEL */
    {"hel\0lo", 7, "hello", "hello"},                   /* NUL */
    /* whitespace: \r, \t, NBSP (Zs), U+2028 (not Zs, but str.split splits on it) */
    {"hello\rworld\r", 0, "hello world", "hello world"},
    {"hello\tworld\xc2\xa0hello\xe2\x80\xa8world", 0, "hello world hello world",
     "hello world hello world"},
    /* invalid UTF-8 becomes U+FFFD, which the cleaner drops */
    {"hel\xfflo", 0, "hello", "hello"},
    {"\xe2\x82hello", 0, "hello", "hello"}, /* truncated sequence */
    {"a\xc0\xaf"
     "b",
     0, "ab", "[UNK]"}, /* overlong '/': no slash appears */
    {"a\xed\xa0\x80"
     "b",
     0, "ab", "[UNK]"},                         /* a surrogate */
    {"\xef\xbf\xbdhello", 0, "hello", "hello"}, /* a literal U+FFFD */
    {"hello\xf0\x9f", 0, "hello", "hello"},     /* cut at the end */
};

/* Resolves "tok tok ..." through the vocabulary. */
static size_t expected_ids(const KilnBertVocab *v, const char *pieces, int32_t *out, size_t cap) {
  size_t n = 0;
  char buf[256];
  for (const char *p = pieces; *p;) {
    while (*p == ' ') p++;
    size_t len = strcspn(p, " ");
    if (!len) break;
    snprintf(buf, sizeof buf, "%.*s", (int)len, p);
    p += len;
    int32_t id = kiln_bert_vocab_find(v, buf, strlen(buf));
    if (id < 0) printf("test bug: '%s' is not in the vocabulary\n", buf);
    if (n < cap) out[n++] = id;
  }
  return n;
}

static void test_vocab(const char *path) {
  KilnBertVocab *v = NULL;
  CHECK(kiln_bert_vocab_load(path, &v) == KILN_BERT_OK, "%s", kiln_bert_last_error());
  if (!v) return;
  CHECK(kiln_bert_vocab_size(v) == 66, "size %zu", kiln_bert_vocab_size(v));
  CHECK(kiln_bert_vocab_find(v, "[PAD]", 5) == 0, "[PAD]");
  CHECK(kiln_bert_vocab_find(v, "[CLS]", 5) == 2, "[CLS]");
  CHECK(kiln_bert_vocab_find(v, "##want", 6) == 13, "##want");
  CHECK(kiln_bert_vocab_find(v, "##wan", 5) == -1, "a prefix is not a token");
  CHECK(kiln_bert_vocab_find(v, "##0", 3) == 65, "last line");
  CHECK(!strcmp(kiln_bert_vocab_token(v, 5), "the"), "token 5");
  CHECK(kiln_bert_vocab_token(v, 66) == NULL && kiln_bert_vocab_token(v, -1) == NULL, "range");
  kiln_bert_vocab_destroy(v);

  /* universal newlines, an unterminated last line, an empty line, a duplicate (last wins) */
  static const char text[] = "a\r\nb\rc\n\nd\na";
  CHECK(kiln_bert_vocab_parse(text, sizeof text - 1, "mem", &v) == KILN_BERT_OK, "%s",
        kiln_bert_last_error());
  if (v) {
    CHECK(kiln_bert_vocab_size(v) == 6, "size %zu", kiln_bert_vocab_size(v));
    CHECK(kiln_bert_vocab_find(v, "b", 1) == 1 && kiln_bert_vocab_find(v, "c", 1) == 2 &&
              kiln_bert_vocab_find(v, "", 0) == 3 && kiln_bert_vocab_find(v, "d", 1) == 4,
          "line ids");
    CHECK(kiln_bert_vocab_find(v, "a", 1) == 5, "a duplicate maps to its last line");
    CHECK(!strcmp(kiln_bert_vocab_token(v, 0), "a"), "token 0 keeps its text");
    kiln_bert_vocab_destroy(v);
  }
  v = NULL;
  CHECK(kiln_bert_vocab_parse("a\n\xff\n", 4, "bad", &v) == KILN_BERT_ERROR_FORMAT && !v,
        "invalid UTF-8");
  CHECK(strstr(kiln_bert_last_error(), "bad:2"), "names the line: %s", kiln_bert_last_error());
  CHECK(kiln_bert_vocab_parse("", 0, "empty", &v) == KILN_BERT_ERROR_FORMAT, "empty");
  CHECK(kiln_bert_vocab_load("no/such/vocab.txt", &v) == KILN_BERT_ERROR_IO, "missing file");

  /* a vocabulary without the special tokens cannot make a tokenizer */
  KilnBertTokenizer *tok = NULL;
  CHECK(kiln_bert_vocab_parse("[PAD]\n[UNK]\n[CLS]\n", 18, "mem", &v) == KILN_BERT_OK, "parse");
  if (v) {
    CHECK(kiln_bert_tok_create(v, &tok) == KILN_BERT_ERROR_NOT_FOUND && !tok, "no [SEP]");
    CHECK(strstr(kiln_bert_last_error(), "[SEP]"), "names it: %s", kiln_bert_last_error());
    kiln_bert_vocab_destroy(v);
  }
}

static void test_cases(KilnBertTokenizer *tok, const KilnBertVocab *v) {
  KilnBertIds ids = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const Case *c = &cases[i];
    size_t len = c->len ? c->len : strlen(c->text);
    char *words = NULL;
    CHECK(kiln_bert_tok_basic(tok, c->text, len, &words) == KILN_BERT_OK, "case %zu", i);
    CHECK(words && !strcmp(words, c->words), "case %zu: words '%s', expected '%s'", i,
          words ? words : "(null)", c->words);
    free(words);
    int32_t want[64];
    size_t nwant = expected_ids(v, c->pieces, want, 64);
    ids.n = 0;
    CHECK(kiln_bert_tok_encode(tok, c->text, len, &ids) == KILN_BERT_OK, "case %zu", i);
    int same = ids.n == nwant && (!nwant || !memcmp(ids.v, want, nwant * sizeof *want));
    CHECK(same, "case %zu (%s): %zu ids, expected %zu (%s)", i, c->words, ids.n, nwant, c->pieces);
  }
  kiln_bert_ids_free(&ids);
}

/* A word of exactly 100 code points is split into pieces; 101 is one [UNK]; the count is taken
 * after accents are stripped. */
static void test_long_words(KilnBertTokenizer *tok, const KilnBertVocab *v) {
  int32_t a = kiln_bert_vocab_find(v, "a", 1), cont = kiln_bert_vocab_find(v, "##a", 3);
  char text[512];
  KilnBertIds ids = {0};
  memset(text, 'a', 100);
  CHECK(kiln_bert_tok_encode(tok, text, 100, &ids) == KILN_BERT_OK, "100");
  int ok = ids.n == 100 && ids.v[0] == a;
  for (size_t i = 1; ok && i < 100; i++) ok = ids.v[i] == cont;
  CHECK(ok, "100 a's: %zu ids", ids.n);
  ids.n = 0;
  memset(text, 'a', 101);
  CHECK(kiln_bert_tok_encode(tok, text, 101, &ids) == KILN_BERT_OK, "101");
  CHECK(ids.n == 1 && ids.v[0] == kiln_bert_tok_specials(tok)->unk, "101 a's: %zu ids", ids.n);
  /* 100 x "a" + U+0301 (Mn): 300 bytes, 200 code points before NFD-stripping, 100 after */
  size_t n = 0;
  for (int i = 0; i < 100; i++) n += (size_t)snprintf(text + n, sizeof text - n, "a\xcc\x81");
  ids.n = 0;
  CHECK(kiln_bert_tok_encode(tok, text, n, &ids) == KILN_BERT_OK, "accents");
  CHECK(ids.n == 100, "100 accented a's: %zu ids", ids.n);
  kiln_bert_ids_free(&ids);
}

static void test_rows(KilnBertTokenizer *tok) {
  const KilnBertSpecialIds *sp = kiln_bert_tok_specials(tok);
  CHECK(sp->pad == 0 && sp->unk == 1 && sp->cls == 2 && sp->sep == 3, "special ids");
  int32_t ids[5] = {10, 11, 12, 13, 14}, row[16];
  size_t real = kiln_bert_tok_row(tok, ids, 5, 0, row);
  CHECK(real == 7 && row[0] == 2 && row[1] == 10 && row[5] == 14 && row[6] == 3, "no seq-len");
  real = kiln_bert_tok_row(tok, ids, 5, 4, row);
  CHECK(real == 4 && row[0] == 2 && row[1] == 10 && row[2] == 11 && row[3] == 3, "truncated");
  real = kiln_bert_tok_row(tok, ids, 2, 6, row);
  CHECK(real == 4 && row[3] == 3 && row[4] == 0 && row[5] == 0, "padded");
  real = kiln_bert_tok_row(tok, NULL, 0, 2, row);
  CHECK(real == 2 && row[0] == 2 && row[1] == 3, "empty, L=2");
}

static void test_utf8(void) {
  static const struct {
    const char *s;
    size_t len, used;
    uint32_t cp;
  } u[] = {
      {"A", 1, 1, 'A'},
      {"\xc3\xa9", 2, 2, 0xE9},
      {"\xe2\x82\xac", 3, 3, 0x20AC},
      {"\xf0\x9f\x98\x80", 4, 4, 0x1F600},
      {"\xf4\x8f\xbf\xbf", 4, 4, 0x10FFFF},
      {"\xf4\x90\x80\x80", 4, 1, 0xFFFD}, /* beyond U+10FFFF */
      {"\xc1\xbf", 2, 1, 0xFFFD},         /* overlong lead */
      {"\xe0\x9f\xbf", 3, 1, 0xFFFD},     /* overlong three-byte */
      {"\xed\xbf\xbf", 3, 1, 0xFFFD},     /* surrogate */
      {"\xe2\x82", 2, 2, 0xFFFD},         /* truncated: one replacement for both */
      {"\xe2\x82"
       "A",
       3, 2, 0xFFFD}, /* and the A is left for the next character */
      {"\x80", 1, 1, 0xFFFD},
  };
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
    uint32_t cp = 0;
    size_t used = kiln_bert_utf8_decode((const unsigned char *)u[i].s, u[i].len, &cp);
    CHECK(used == u[i].used && cp == u[i].cp, "utf8 case %zu: %zu bytes, U+%04X", i, used,
          (unsigned)cp);
    char enc[4];
    if (u[i].cp != 0xFFFD)
      CHECK(kiln_bert_utf8_encode(cp, enc) == u[i].len && !memcmp(enc, u[i].s, u[i].len),
            "encode case %zu", i);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s VOCAB\n", argv[0]);
    return 2;
  }
  test_utf8();
  test_vocab(argv[1]);
  KilnBertVocab *v = NULL;
  KilnBertTokenizer *tok = NULL;
  if (kiln_bert_vocab_load(argv[1], &v) != KILN_BERT_OK ||
      kiln_bert_tok_create(v, &tok) != KILN_BERT_OK) {
    printf("FAIL: %s\n", kiln_bert_last_error());
    kiln_bert_vocab_destroy(v);
    return 1;
  }
  test_cases(tok, v);
  test_long_words(tok, v);
  test_rows(tok);
  kiln_bert_tok_destroy(tok);
  kiln_bert_vocab_destroy(v);
  printf("%s (Unicode %s)\n", failures ? "FAILED" : "ok", kiln_bert_uni_version());
  return failures != 0;
}
