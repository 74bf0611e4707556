/* kiln_emu_vprintf, the emulator's PTX vprintf (device_print): arguments read from a buffer
 * packed as CUDA's printf ABI packs them (each at its natural alignment: an int then a long long
 * leaves 4 bytes of padding), compared with the host's printf of the same values; "%%" prints one
 * '%'; a line longer than the 1023 characters the emulator formats is cut, not overrun.  stdout
 * goes to a temporary file around each call. */
#include "emu_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What kiln_emu_vprintf(fmt, args) writes to stdout (static storage); *ret its return value. */
static const char *printed(const char *fmt, const void *args, int *ret) {
  static char text[4096];
  FILE *tmp = tmpfile();
  CHECK(tmp != NULL);
  if (!tmp) return "";
  fflush(stdout);
  int saved = dup(1);
  dup2(fileno(tmp), 1);
  *ret = kiln_emu_vprintf(fmt, args);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  rewind(tmp);
  size_t n = fread(text, 1, sizeof text - 1, tmp);
  text[n] = '\0';
  fclose(tmp);
  return text;
}

int main(void) {
  /* a scalar i64 print: pid (1, 2, 3) at 0, 4, 8, the long long at 16 (padded from 12) */
  unsigned char buf[64];
  int32_t ints[4] = {1, 2, 3, 99}; /* 99 sits in the padding: read there, it would show */
  long long wide = -1234567890123LL;
  memcpy(buf, ints, sizeof ints);
  memcpy(buf + 16, &wide, sizeof wide);
  int ret = 0;
  const char *got = printed("pid (%d, %d, %d) n%%: %lld\n", buf, &ret);
  char want[256];
  snprintf(want, sizeof want, "pid (%d, %d, %d) n%%: %lld\n", 1, 2, 3, wide);
  CHECK(strcmp(got, want) == 0, "printed '%s', expected '%s'", got, want);
  CHECK(ret == (int)strlen(want), "returned %d, expected %zu", ret, strlen(want));

  /* an int then a double: the double at 8; %.9g as device_print formats floats */
  double d = (double)1.1f;
  int32_t k = -7;
  memcpy(buf, &k, sizeof k);
  memcpy(buf + 8, &d, sizeof d);
  got = printed("k %d v: %.9g\n", buf, &ret);
  snprintf(want, sizeof want, "k %d v: %.9g\n", k, d);
  CHECK(strcmp(got, want) == 0, "printed '%s', expected '%s'", got, want);

  /* a line past the emulator's 1023 characters is cut there */
  char *fmt = malloc(2000);
  CHECK(fmt != NULL);
  if (fmt) {
    memset(fmt, 'a', 1999);
    fmt[1999] = '\0';
    got = printed(fmt, buf, &ret);
    CHECK(strlen(got) == 1023 && ret == 1023, "printed %zu characters, returned %d", strlen(got),
          ret);
    free(fmt);
  }
  return kiln_check_result("emu.print");
}
