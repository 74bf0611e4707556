/* cpu_lower.h - the CPU lowering's entry points between its files: the kiln op families
 * (cpu_ops.c), which the dispatcher (cpu_lower.c) calls, and the pass's body.  Both build with
 * the toolkit of cpu_kit.h. */
#ifndef KILN_CPU_LOWER_H
#define KILN_CPU_LOWER_H

#include "cpu_kit.h"

/* cpu_ops.c: the kiln op families. */
bool kiln_cpu_lower_kiln_op(Cpu *c, MlirOperation op, KilnOpId id);

/* cpu_lower.c: the pass's body, on a whole module (opts: none). */
MlirLogicalResult kiln_cpu_lower_module(MlirOperation module, void *opts);

#endif
