/* cnrt_api_fuzz's calls with enum parameters, made from C as a C program makes them: C may pass
 * any int for an enum parameter (cnrt.h's direction, function type, attribute and error code),
 * while in C++ merely loading an enum variable holding a value outside the enum's range is
 * undefined behaviour (UBSan's -fsanitize=enum would report the harness, not the runtime). */
#include "cnrt.h"

cnrtRet_t fuzz_c_memcpy(void *dst, void *src, size_t bytes, int dir) {
  return cnrtMemcpy(dst, src, bytes, (cnrtMemTransDir_t)dir);
}

cnrtRet_t fuzz_c_memcpy_async(int variant, void *dst, void *src, size_t bytes, cnrtQueue_t queue, int dir) {
  switch (variant) {
    case 0: return cnrtMemcpyAsync(dst, src, bytes, queue, (cnrtMemTransDir_t)dir);
    case 1: return cnrtMemcpyAsync_V2(dst, src, bytes, queue, (cnrtMemTransDir_t)dir);
    default: return cnrtMemcpyAsync_V3(dst, src, bytes, queue, (cnrtMemTransDir_t)dir);
  }
}

cnrtRet_t fuzz_c_invoke_kernel(const void *kernel, cnrtDim3_t dim, int type, void **args, cnrtQueue_t queue) {
  return cnrtInvokeKernel(kernel, dim, (cnrtFunctionType_t)type, args, 0, queue);
}

cnrtRet_t fuzz_c_device_attribute(int *value, int attr, int device) {
  return cnrtDeviceGetAttribute(value, (cnrtDeviceAttr_t)attr, device);
}

int fuzz_c_error_texts_present(int code) {
  return cnrtGetErrorName((cnrtRet_t)code) != NULL && cnrtGetErrorStr((cnrtRet_t)code) != NULL;
}
