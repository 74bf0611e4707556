/* memory.c - memory sizes as every Kiln command reads and words them: the byte-count syntax of
 * options and of KILN_DEVICE_MEMORY ("4096", "64K", "2GiB": powers of 1024), and the host's
 * physical memory, which the cpu and emu devices use as their device memory.  Commands check a
 * request against these before allocating, so that a size a user mistyped is an error message
 * rather than the machine's memory run out. */
#include "kiln_base.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kiln_parse_bytes(const char *s, size_t *out) {
  static const char *const units[] = {"", "K", "M", "G", "T"};
  char *end = NULL;
  errno = 0;
  unsigned long long v = s ? strtoull(s, &end, 10) : 0;
  if (!s || errno || end == s || s[0] == '-' || s[0] == '+' || v == 0) return -1;
  for (int u = 0; u < 5; u++) {
    size_t n = strlen(units[u]);
    if (strncmp(end, units[u], n) || (end[n] && (!u || strcmp(end + n, "iB")))) continue;
    unsigned long long mul = 1ull << (10 * u);
    if (v > (unsigned long long)SIZE_MAX / mul) return -1;
    *out = (size_t)(v * mul);
    return 0;
  }
  return -1;
}

size_t kiln_host_memory_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0 || (unsigned long)pages > SIZE_MAX / (unsigned long)page)
    return SIZE_MAX;
  return (size_t)pages * (size_t)page;
}

const char *kiln_bytes_text(size_t bytes, char *buf, size_t cap) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    u++;
  }
  if (u < 0)
    snprintf(buf, cap, "%zu bytes", bytes);
  else
    snprintf(buf, cap, "%.1f %s", v, units[u]);
  return buf;
}
