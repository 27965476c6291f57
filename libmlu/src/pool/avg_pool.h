// Average pooling kernels shared by avg_pool2d and adaptive_avg_pool2d (whose bins are a plain
// avg pool when the output divides the input).
#pragma once

#include "mlusim/mlu/pool.h"

namespace mlusim::mlu::nn {

// Checked entry points under the name `op`; p's dilation must be 1.
Status avg_pool_forward(Handle* h, const char* op, const Pool2dParams& p, const TensorDesc& x, const void* x_ptr,
                        const TensorDesc& y, void* y_ptr);
Status avg_pool_backward(Handle* h, const char* op, const Pool2dParams& p, const TensorDesc& dy, const void* dy_ptr,
                         const TensorDesc& dx, void* dx_ptr);

}  // namespace mlusim::mlu::nn
