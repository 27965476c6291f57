/* Kernels used by the C examples. They are C++ (examples/kernels.cpp, written against the sim
 * device API); C code only sees their handles. */
#ifndef MLUSIM_EXAMPLE_KERNELS_H_
#define MLUSIM_EXAMPLE_KERNELS_H_

#include "mlusim_ext.h"

/* c[i] = a[i] + b[i] for i < n (float). Launch BLOCK with any dim: tasks split n. */
MLUSIM_DECLARE_KERNEL(vector_add);

/* y[i] = x[i] * scale + offset for i < n (float). Launch BLOCK with any dim. */
MLUSIM_DECLARE_KERNEL(scale_offset);

#endif
