// libmlu: a CNNL/cuDNN-style operator library whose ops are real kernels on the simulated cores.
// Include this header for everything, or the per-family headers for less.
#pragma once

#include "mlusim/mlu/activation.h"
#include "mlusim/mlu/attention.h"
#include "mlusim/mlu/conv.h"
#include "mlusim/mlu/elementwise.h"
#include "mlusim/mlu/fused.h"
#include "mlusim/mlu/gemm.h"
#include "mlusim/mlu/handle.h"
#include "mlusim/mlu/index.h"
#include "mlusim/mlu/linalg.h"
#include "mlusim/mlu/loss.h"
#include "mlusim/mlu/norm.h"
#include "mlusim/mlu/pool.h"
#include "mlusim/mlu/quant.h"
#include "mlusim/mlu/random.h"
#include "mlusim/mlu/reduce.h"
#include "mlusim/mlu/scan.h"
#include "mlusim/mlu/sort.h"
#include "mlusim/mlu/softmax.h"
#include "mlusim/mlu/status.h"
#include "mlusim/mlu/tensor.h"
