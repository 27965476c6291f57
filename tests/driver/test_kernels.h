// Kernels the driver tests launch (defined in test_kernels.inc, compiled once per test program).
#pragma once

#include "mlusim_ext.h"

// y[i] = a * x[i] + y[i] for i < n; tasks split n into contiguous chunks.
MLUSIM_DECLARE_KERNEL(saxpy_kernel);
// p[i] = value for i < n.
MLUSIM_DECLARE_KERNEL(fill_kernel);
// Does nothing.
MLUSIM_DECLARE_KERNEL(empty_kernel);
// Keeps every task's VFU busy for about `rounds` x 42 cycles on 1024 elements (tiny: 1 ns/cycle).
MLUSIM_DECLARE_KERNEL(busy_kernel);
// Traps: the launch faults with cnrtErrorKernelTrap.
MLUSIM_DECLARE_KERNEL(trap_kernel);
// Reads n floats at p into NRAM: faults when the range is not a live allocation.
MLUSIM_DECLARE_KERNEL(read_kernel);
// out[task_id] = task_id + 1000 * cluster_id (memory cores skip); launch BLOCK or UNIONn.
MLUSIM_DECLARE_KERNEL(task_id_kernel);
// *p = *p * 2 + add (one scalar, task 0 only): order-sensitive, for queue ordering tests.
MLUSIM_DECLARE_KERNEL(double_add_kernel);
