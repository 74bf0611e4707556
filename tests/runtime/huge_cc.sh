#!/bin/sh
# huge_cc.sh — a stand-in C compiler for runtime.huge_cc: its "shared object" is a sparse file
# of 300 MiB, over KILN_MAX_MODULE_BYTES, so that the test sees the runtime refuse to read a
# runaway linker output whole. Called as the runtime calls KILN_CC: -shared -o OUT OBJ -lm.
truncate -s 300M "$3"
