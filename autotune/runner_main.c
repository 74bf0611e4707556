/* runner_main.c — the kiln-tune-runner program (bundle_run.c). */
#include "tune_core.h"

int main(int argc, char **argv) { return tune_bundle_run_command(argc - 1, argv + 1); }
