/* ptxas.c - assemble PTX with NVIDIA's ptxas and read its -v report.
 *
 * ptxas only reads files, so the PTX goes to a private temporary directory; the tool runs
 * through posix_spawn (no shell, so no quoting issues) with its stdout and stderr sent to a log
 * file in that directory.  The report lines parsed look like
 *   ptxas info    : Compiling entry function 'k' for 'sm_80'
 *   ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 400 bytes cmem[0]
 *   ptxas info    :     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads */
#include "gpu_internal.h"
#include "kiln_base.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static bool spit(const char *path, const char *data) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  size_t n = strlen(data);
  bool ok = fwrite(data, 1, n, f) == n;
  return (fclose(f) == 0) && ok;
}

/* The integer just before `word` in line (e.g. "12 bytes smem"), or -1. */
static int number_before(const char *line, const char *word) {
  const char *w = strstr(line, word);
  if (!w || w == line) return -1;
  const char *p = w - 1;
  while (p > line && *p == ' ') p--;
  const char *end = p + 1;
  while (p > line && p[-1] >= '0' && p[-1] <= '9') p--;
  if (!(*p >= '0' && *p <= '9')) return -1;
  return (int)strtol(p, (char **)&end, 10);
}

static void parse_report(const char *log, KilnGpuPtxasInfo *info) {
  memset(info, 0, sizeof *info);
  const char *line = log;
  while (line && *line) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    char buf[512];
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, line, n);
    buf[n] = '\0';
    if (strstr(buf, "Compiling entry function")) info->entries++;
    int v;
    if ((v = number_before(buf, " registers")) > info->registers) info->registers = v;
    if ((v = number_before(buf, " bytes smem")) > 0) info->shared_bytes += v;
    if ((v = number_before(buf, " bytes stack frame")) > info->stack_bytes) info->stack_bytes = v;
    if ((v = number_before(buf, " bytes spill stores")) > 0) info->spill_stores += v;
    if ((v = number_before(buf, " bytes spill loads")) > 0) info->spill_loads += v;
    line = nl ? nl + 1 : NULL;
  }
}

KilnMlirStatus kiln_gpu_ptxas(const char *ptxas_path, const char *ptx, const char *arch,
                              void **cubin, size_t *cubin_len, KilnGpuPtxasInfo *info, char **log) {
  if (log) *log = NULL;
  if (cubin) *cubin = NULL;
  if (!ptx || !arch || strncmp(arch, "sm_", 3) != 0 || strlen(arch) > 16)
    return KILN_MLIR_ERR_INVALID;
  const char *tmp = getenv("TMPDIR");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/kiln-ptxas-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return KILN_MLIR_ERR_LLVM;
  char in[600], out[600], logp[600], archarg[32];
  snprintf(in, sizeof in, "%s/k.ptx", dir);
  snprintf(out, sizeof out, "%s/k.cubin", dir);
  snprintf(logp, sizeof logp, "%s/ptxas.log", dir);
  /* PTX for sm_90a (wgmma) assembles only as such; its cubin runs on sm_90 devices */
  bool arch_a = strcmp(arch, "sm_90") == 0 && strstr(ptx, "\n.target sm_90a") != NULL;
  snprintf(archarg, sizeof archarg, "-arch=%s%s", arch, arch_a ? "a" : "");
  KilnMlirStatus st = KILN_MLIR_ERR_LLVM;
  if (!spit(in, ptx)) goto cleanup;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  const char *prog = ptxas_path ? ptxas_path : "ptxas";
  char *argv[] = {(char *)prog, "-v", archarg, "-o", out, in, NULL};
  pid_t pid;
  int rc = ptxas_path ? posix_spawn(&pid, prog, &fa, NULL, argv, environ)
                      : posix_spawnp(&pid, prog, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) goto cleanup;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR);
  /* What ptxas wrote is read back within named bounds: KILN_PTXAS may name any program, and a
   * runaway one must not cost unbounded memory. Past a bound the log says so. */
  char *text = kiln_file_read_max(logp, NULL, KILN_MAX_TOOL_LOG_BYTES);
  bool log_too_large = !text && errno == EFBIG;
  if (text && info) parse_report(text, info);
  if (log_too_large) {
    text = strdup("the output of ptxas is larger than KILN_MAX_TOOL_LOG_BYTES (16 MiB); refused");
  }
  if (log)
    *log = text;
  else
    free(text);
  if (log_too_large || !WIFEXITED(status) || WEXITSTATUS(status) != 0) goto cleanup;
  if (cubin) {
    *cubin = kiln_file_read_max(out, cubin_len, KILN_MAX_MODULE_BYTES);
    if (!*cubin) {
      if (errno == EFBIG && log) {
        free(*log);
        *log =
            strdup("the cubin ptxas wrote is larger than KILN_MAX_MODULE_BYTES (256 MiB); refused");
      }
      goto cleanup;
    }
  }
  st = KILN_MLIR_OK;
cleanup:
  unlink(in);
  unlink(out);
  unlink(logp);
  rmdir(dir);
  return st;
}
