/* bert_unicode.h — the character classes and mappings the BERT tokenizer needs, as the Python
 * reference computes them: general categories (C*, Zs, P*, Mn), str.isspace, the cased and
 * case-ignorable properties of str.lower's final-sigma rule, and per code point NFD(lower(c)).
 * The tables are generated at build time from Python's unicodedata (gen_unicode.py); the
 * Unicode version is KILN_BERT_UNICODE_VERSION of the build's python3. Also UTF-8 decoding with
 * Python's "replace" error handling. */
#ifndef KILN_BERT_UNICODE_H
#define KILN_BERT_UNICODE_H

#include <stddef.h>
#include <stdint.h>

enum {
  KILN_BERT_UNI_DROP = 1 << 0,      /* the cleaner drops it: U+0000, U+FFFD, C* except \t \n \r */
  KILN_BERT_UNI_SPACE = 1 << 1,     /* the cleaner turns it into a space: \t \n \r and Zs */
  KILN_BERT_UNI_SPLIT = 1 << 2,     /* str.split() splits on it (str.isspace) */
  KILN_BERT_UNI_PUNCT = 1 << 3,     /* its own word: ASCII 33-47, 58-64, 91-96, 123-126 and P* */
  KILN_BERT_UNI_MN = 1 << 4,        /* category Mn, dropped after NFD */
  KILN_BERT_UNI_CASED = 1 << 5,     /* Unicode Cased */
  KILN_BERT_UNI_IGNORABLE = 1 << 6, /* Unicode Case_Ignorable */
};

/* The longest NFD(lower(c)) of any code point is at most this long. */
#define KILN_BERT_UNI_MAX_MAP 8

/* KILN_BERT_UNI_* flags of cp; 0 beyond U+10FFFF. */
unsigned kiln_bert_uni_flags(uint32_t cp);
/* Canonical combining class (0 for starters). */
unsigned kiln_bert_uni_ccc(uint32_t cp);
/* The CJK ideograph blocks the tokenizer puts spaces around (not kana, not hangul). */
int kiln_bert_uni_is_cjk(uint32_t cp);
/* Writes NFD(lower(cp)) to out and returns its length (1..KILN_BERT_UNI_MAX_MAP); lower is
 * Python's str.lower of cp alone, so U+03A3 gives U+03C3 (the caller applies final sigma). */
size_t kiln_bert_uni_lower_nfd(uint32_t cp, uint32_t *out);
/* The Unicode version the tables were generated from ("14.0.0"). */
const char *kiln_bert_uni_version(void);

/* Decodes one character from s[0..n) (n >= 1) into *cp and returns the bytes it took. Invalid
 * UTF-8 (a stray byte, a truncated, overlong or surrogate sequence, beyond U+10FFFF) gives
 * U+FFFD for each maximal ill-formed prefix, as Python's decode(errors="replace") does, so
 * that the characters after it decode the same. */
size_t kiln_bert_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* Encodes cp (<= U+10FFFF) into out and returns its length, 1..4. */
size_t kiln_bert_utf8_encode(uint32_t cp, char *out);

#endif /* KILN_BERT_UNICODE_H */
