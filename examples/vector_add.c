/* vectorAdd: the classic first program. Copies two vectors to the device, adds them with a
 * kernel on every core, copies the sum back, checks it, and reports simulated times: the
 * kernel's time from two notifiers and its cycle count from the simulator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cnrt.h"
#include "example_kernels.h"
#include "mlusim_ext.h"

int main(void) {
  int n = 100000;
  size_t bytes = (size_t)n * sizeof(float);
  unsigned int count = 0;
  cnrtDeviceProp_t prop;
  float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
  void *da = NULL, *db = NULL, *dc = NULL;
  cnrtQueue_t queue;
  cnrtNotifier_t start, stop;
  cnrtDim3_t dim;
  void *args[4];
  float ms = 0.0f;
  int i, errors = 0;
  mlusimKernelRecord_t record;

  if (!a || !b || !c) return 1;
  for (i = 0; i < n; ++i) {
    a[i] = (float)i * 0.5f;
    b[i] = (float)(n - i);
  }
  CNRT_CHECK(cnrtGetDeviceCount(&count));
  CNRT_CHECK(cnrtGetDeviceProperties(&prop, 0));
  printf("%u device(s); device 0: %s, %d clusters x %d cores, %d MB\n", count, prop.name, prop.clusterCount,
         prop.McorePerCluster, prop.totalMem);

  CNRT_CHECK(cnrtMalloc(&da, bytes));
  CNRT_CHECK(cnrtMalloc(&db, bytes));
  CNRT_CHECK(cnrtMalloc(&dc, bytes));
  CNRT_CHECK(cnrtMemcpy(da, a, bytes, cnrtMemcpyHostToDev));
  CNRT_CHECK(cnrtMemcpy(db, b, bytes, cnrtMemcpyHostToDev));

  CNRT_CHECK(cnrtQueueCreate(&queue));
  CNRT_CHECK(cnrtNotifierCreate(&start));
  CNRT_CHECK(cnrtNotifierCreate(&stop));
  dim.x = (unsigned)(prop.clusterCount * prop.McorePerCluster); /* one task per core */
  dim.y = 1;
  dim.z = 1;
  args[0] = &da;
  args[1] = &db;
  args[2] = &dc;
  args[3] = &n;
  CNRT_CHECK(cnrtPlaceNotifier(start, queue));
  CNRT_CHECK(cnrtInvokeKernel(vector_add, dim, cnrtFuncTypeBlock, args, 0, queue));
  CNRT_CHECK(cnrtPlaceNotifier(stop, queue));
  CNRT_CHECK(cnrtQueueSync(queue));
  CNRT_CHECK(cnrtNotifierElapsedTime(start, stop, &ms));
  CNRT_CHECK(cnrtMemcpy(c, dc, bytes, cnrtMemcpyDevToHost));

  for (i = 0; i < n; ++i) {
    if (fabsf(c[i] - (a[i] + b[i])) > 1e-5f * fabsf(a[i] + b[i])) {
      if (++errors <= 5) printf("mismatch at %d: %f != %f\n", i, c[i], a[i] + b[i]);
    }
  }
  CNRT_CHECK(mlusimGetKernelRecord(0, 0, &record));
  /* The notifiers bracket the launch call too: the kernel starts when that call returns. */
  printf("vectorAdd of %d floats on %u tasks: %.3f us between the notifiers; kernel %.3f us = %llu cycles\n", n,
         dim.x, ms * 1000.0, (record.end_ns - record.start_ns) / 1000.0, (unsigned long long)record.cycles);

  CNRT_CHECK(cnrtNotifierDestroy(start));
  CNRT_CHECK(cnrtNotifierDestroy(stop));
  CNRT_CHECK(cnrtQueueDestroy(queue));
  CNRT_CHECK(cnrtFree(da));
  CNRT_CHECK(cnrtFree(db));
  CNRT_CHECK(cnrtFree(dc));
  free(a);
  free(b);
  free(c);
  printf(errors == 0 ? "PASSED\n" : "FAILED\n");
  return errors == 0 ? 0 : 1;
}
