/* unicode.c — lookups into the generated tables (see gen_unicode.py for their layout), Hangul
 * syllable decomposition (arithmetic, so not tabled), and UTF-8 with Python's replacement of
 * ill-formed sequences (the well-formed byte sequences of Unicode's table 3-7). */
#include "bert_unicode.h"

typedef struct UniRecord {
  uint8_t flags, ccc, map_len;
  uint16_t map_off;
} UniRecord;

#include "unicode_tables.h"

_Static_assert(UNI_MAX_MAP <= KILN_BERT_UNI_MAX_MAP, "a mapping longer than the header allows");

static const UniRecord *record(uint32_t cp) {
  static const UniRecord none = {0, 0, 0, 0};
  if (cp >= 0x110000) return &none;
  unsigned block = uni_stage1[cp >> UNI_BLOCK_SHIFT];
  return &uni_records[uni_stage2[(block << UNI_BLOCK_SHIFT) +
                                 (cp & ((1u << UNI_BLOCK_SHIFT) - 1))]];
}

unsigned kiln_bert_uni_flags(uint32_t cp) { return record(cp)->flags; }

unsigned kiln_bert_uni_ccc(uint32_t cp) { return record(cp)->ccc; }

const char *kiln_bert_uni_version(void) { return KILN_BERT_UNICODE_VERSION; }

int kiln_bert_uni_is_cjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

size_t kiln_bert_uni_lower_nfd(uint32_t cp, uint32_t *out) {
  if (cp >= 0xAC00 && cp <= 0xD7A3) { /* Hangul syllable: leading, vowel and maybe trailing jamo */
    uint32_t s = cp - 0xAC00, t = s % 28;
    out[0] = 0x1100 + s / (21 * 28);
    out[1] = 0x1161 + s % (21 * 28) / 28;
    if (!t) return 2;
    out[2] = 0x11A7 + t;
    return 3;
  }
  const UniRecord *r = record(cp);
  if (!r->map_len) {
    out[0] = cp;
    return 1;
  }
  for (unsigned i = 0; i < r->map_len; i++) out[i] = uni_pool[r->map_off + i];
  return r->map_len;
}

size_t kiln_bert_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t len;
  unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
  uint32_t v;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    v = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    v = c & 0x0F;
    if (c == 0xE0) lo = 0xA0; /* no overlongs */
    if (c == 0xED) hi = 0x9F; /* no surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    v = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F; /* nothing beyond U+10FFFF */
  } else {
    *cp = 0xFFFD;
    return 1;
  }
  for (size_t i = 1; i < len; i++) {
    unsigned b = i < n ? s[i] : 0;
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) {
      *cp = 0xFFFD;
      return i;
    }
    v = v << 6 | (b & 0x3F);
  }
  *cp = v;
  return len;
}

size_t kiln_bert_utf8_encode(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | cp >> 12);
    out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | cp >> 18);
  out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}
