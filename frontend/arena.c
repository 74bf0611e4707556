/* arena.c: the bump allocator every compilation lives in.
 *
 * Chunks are malloc'ed blocks chained newest first; a request larger than the default chunk
 * gets a chunk of its own.  Reset keeps the oldest chunk so a reused scratch arena
 * (one sema pass per tuning configuration) stops calling malloc once warm. */
#include "frontend_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE ((size_t)64 * 1024)
#define ALIGN      ((size_t)16)

struct KilnArenaChunk {
  KilnArenaChunk *next;
  size_t cap, used;
  _Alignas(16) unsigned char data[];
};

_Noreturn void kiln_assert_fail(const char *file, int line, const char *func, const char *cond) {
  fprintf(stderr, "%s:%d: %s: assertion failed: %s\n", file, line, func, cond);
  abort();
}

void kiln_arena_init(KilnArena *ar) { memset(ar, 0, sizeof *ar); }

static KilnArenaChunk *new_chunk(KilnArena *ar, size_t need) {
  size_t cap = need > CHUNK_SIZE ? need : CHUNK_SIZE;
  KilnArenaChunk *ch = malloc(sizeof *ch + cap);
  if (!ch) {
    if (ar->oom) longjmp(*ar->oom, 1);
    return NULL;
  }
  ch->cap = cap;
  ch->used = 0;
  ch->next = ar->head;
  ar->head = ch;
  return ch;
}

void *kiln_arena_alloc(KilnArena *ar, size_t size) {
  if (size == 0) size = 1;
  if (size > SIZE_MAX / 2) {
    if (ar->oom) longjmp(*ar->oom, 1);
    return NULL;
  }
  size = (size + ALIGN - 1) & ~(ALIGN - 1);
  KilnArenaChunk *ch = ar->head;
  if (!ch || ch->cap - ch->used < size) {
    ch = new_chunk(ar, size);
    if (!ch) return NULL;
  }
  void *p = ch->data + ch->used;
  ch->used += size;
  ar->used_bytes += size;
  memset(p, 0, size);
  return p;
}

void kiln_arena_reset(KilnArena *ar) {
  KilnArenaChunk *ch = ar->head;
  if (!ch) return;
  while (ch->next) {
    KilnArenaChunk *next = ch->next;
    free(ch);
    ch = next;
  }
  ch->used = 0;
  ar->head = ch;
  ar->used_bytes = 0;
}

void kiln_arena_free(KilnArena *ar) {
  KilnArenaChunk *ch = ar->head;
  while (ch) {
    KilnArenaChunk *next = ch->next;
    free(ch);
    ch = next;
  }
  ar->head = NULL;
  ar->used_bytes = 0;
}

char *kiln_arena_strndup(KilnArena *ar, const char *s, size_t n) {
  char *p = kiln_arena_alloc(ar, n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = 0;
  }
  return p;
}

char *kiln_arena_vprintf(KilnArena *ar, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) n = 0;
  char *p = kiln_arena_alloc(ar, (size_t)n + 1);
  if (p) vsnprintf(p, (size_t)n + 1, fmt, ap);
  return p;
}

char *kiln_arena_printf(KilnArena *ar, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *p = kiln_arena_vprintf(ar, fmt, ap);
  va_end(ap);
  return p;
}

void kiln_vec_push(KilnArena *ar, KilnPtrVec *v, void *item) {
  if (v->n == v->cap) {
    int cap = v->cap ? v->cap * 2 : 8;
    void **items = kiln_arena_alloc(ar, sizeof(void *) * (size_t)cap);
    if (!items) return;
    if (v->n) memcpy(items, v->items, sizeof(void *) * (size_t)v->n);
    v->items = items;
    v->cap = cap;
  }
  v->items[v->n++] = item;
}

static uint32_t name_hash(const char *name) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 16777619u;
  return h;
}

/* The slot of name: its own, or the empty one where it would go (the load stays under 1/2). */
static int name_slot(const KilnNameMap *m, const char *name) {
  int i = (int)(name_hash(name) & (uint32_t)(m->cap - 1));
  while (m->keys[i] && strcmp(m->keys[i], name) != 0) i = (i + 1) & (m->cap - 1);
  return i;
}

int kiln_names_get(const KilnNameMap *m, const char *name) {
  if (m->cap == 0) return -1;
  int i = name_slot(m, name);
  return m->keys[i] ? m->vals[i] : -1;
}

void kiln_names_set(KilnArena *ar, KilnNameMap *m, const char *name, int value) {
  if (2 * (m->used + 1) > m->cap) {
    KilnNameMap g = {.cap = m->cap ? 2 * m->cap : 64};
    g.keys = kiln_arena_alloc(ar, sizeof *g.keys * (size_t)g.cap);
    g.vals = kiln_arena_alloc(ar, sizeof *g.vals * (size_t)g.cap);
    if (!g.keys || !g.vals) return;
    memset(g.keys, 0, sizeof *g.keys * (size_t)g.cap);
    for (int i = 0; i < m->cap; i++)
      if (m->keys[i]) {
        int j = name_slot(&g, m->keys[i]);
        g.keys[j] = m->keys[i];
        g.vals[j] = m->vals[i];
        g.used++;
      }
    *m = g;
  }
  int i = name_slot(m, name);
  if (!m->keys[i]) {
    m->keys[i] = name;
    m->used++;
  }
  m->vals[i] = value;
}
