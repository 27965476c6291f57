// libmlu: a CNNL/cuDNN-style operator library whose ops are real kernels on the simulated cores.
// Include this header for everything, or the per-family headers for less.
#pragma once

#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"
