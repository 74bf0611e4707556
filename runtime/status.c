/* status.c — version, status names and the thread-local last-error message. */
#include "device_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define STR2(x) #x
#define STR(x)  STR2(x)

int kiln_rt_version(void) { return KILN_RT_VERSION; }

const char *kiln_rt_version_string(void) {
  return STR(KILN_RT_VERSION_MAJOR) "." STR(KILN_RT_VERSION_MINOR) "." STR(KILN_RT_VERSION_PATCH);
}

static const char *const status_names[KILN_RT_STATUS_COUNT] = {
    [KILN_RT_OK] = "KILN_RT_OK",
    [KILN_RT_ERROR_INVALID_ARGUMENT] = "KILN_RT_ERROR_INVALID_ARGUMENT",
    [KILN_RT_ERROR_NO_DEVICE] = "KILN_RT_ERROR_NO_DEVICE",
    [KILN_RT_ERROR_UNSUPPORTED] = "KILN_RT_ERROR_UNSUPPORTED",
    [KILN_RT_ERROR_OUT_OF_MEMORY] = "KILN_RT_ERROR_OUT_OF_MEMORY",
    [KILN_RT_ERROR_IO] = "KILN_RT_ERROR_IO",
    [KILN_RT_ERROR_LOAD] = "KILN_RT_ERROR_LOAD",
    [KILN_RT_ERROR_NOT_FOUND] = "KILN_RT_ERROR_NOT_FOUND",
    [KILN_RT_ERROR_LAUNCH] = "KILN_RT_ERROR_LAUNCH",
    [KILN_RT_ERROR_DRIVER] = "KILN_RT_ERROR_DRIVER",
    [KILN_RT_ERROR_TIMEOUT] = "KILN_RT_ERROR_TIMEOUT",
};

const char *kiln_rt_status_name(KilnRtStatus status) {
  /* Compare as unsigned so that a negative value cast to the enum is out of range too. */
  if ((unsigned)status >= (unsigned)KILN_RT_STATUS_COUNT) return "KILN_RT_STATUS_UNKNOWN";
  return status_names[status];
}

/* Big enough for a linker's or PTX JIT's error log excerpt. */
static _Thread_local char last_error[4096];

const char *kiln_rt_last_error(void) { return last_error; }

static KilnRtStatus set_last_error(KilnRtStatus status, const char *fmt, va_list ap) {
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  return status;
}

KilnRtStatus kiln_rt_fail(KilnRtStatus status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_last_error(status, fmt, ap);
  va_end(ap);
  return status;
}

/* The public form of kiln_rt_fail, for generated libraries (kilnrt.h). */
KilnRtStatus kiln_rt_set_error(KilnRtStatus status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_last_error(status, fmt, ap);
  va_end(ap);
  return status;
}

_Noreturn void kiln_rt_assert_failed(const char *file, int line, const char *func,
                                     const char *cond) {
  fprintf(stderr, "%s:%d: %s: assertion failed: %s\n", file, line, func, cond);
  fflush(stderr);
  abort();
}
