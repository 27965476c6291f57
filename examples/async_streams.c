/* asyncAPI / simpleStreams: the same work (upload, kernel, download of N chunks) once on one
 * queue and once spread over several queues. With several queues, one chunk's copies overlap
 * another chunk's kernel and the two host link directions run at once; notifier times show when
 * each step of each chunk finished, and the total simulated time drops. Exits non-zero unless the
 * multi-queue run is faster and both runs compute the right numbers. */
#include <stdio.h>
#include <stdlib.h>

#include "cnrt.h"
#include "example_kernels.h"
#include "mlusim_ext.h"

enum { kChunks = 6, kQueues = 3, kChunkFloats = 1 << 18 /* 1 MiB */ };

/* Runs every chunk's upload -> scale_offset -> download on `queues` queues (chunk i on queue
 * i % queues); returns the simulated ms from the first to the last step, printing each step. */
static float run(int queues, float *host_in, float *host_out, void **dev_in, void **dev_out, unsigned tasks) {
  cnrtQueue_t q[kQueues];
  cnrtNotifier_t start, uploaded[kChunks], computed[kChunks], downloaded[kChunks];
  const size_t bytes = kChunkFloats * sizeof(float);
  float scale = 2.0f, offset = 1.0f, total = 0.0f;
  int n = kChunkFloats, i;
  cnrtDim3_t dim;
  dim.x = tasks;
  dim.y = 1;
  dim.z = 1;
  for (i = 0; i < queues; ++i) CNRT_CHECK(cnrtQueueCreate(&q[i]));
  CNRT_CHECK(cnrtNotifierCreate(&start));
  CNRT_CHECK(cnrtPlaceNotifier(start, q[0]));
  for (i = 0; i < queues; ++i) CNRT_CHECK(cnrtQueueWaitNotifier(start, q[i], 0));
  for (i = 0; i < kChunks; ++i) {
    cnrtQueue_t qi = q[i % queues];
    void *args[5];
    args[0] = &dev_in[i];
    args[1] = &dev_out[i];
    args[2] = &scale;
    args[3] = &offset;
    args[4] = &n;
    CNRT_CHECK(cnrtNotifierCreate(&uploaded[i]));
    CNRT_CHECK(cnrtNotifierCreate(&computed[i]));
    CNRT_CHECK(cnrtNotifierCreate(&downloaded[i]));
    CNRT_CHECK(cnrtMemcpyAsync_V3(dev_in[i], host_in + (size_t)i * kChunkFloats, bytes, qi, cnrtMemcpyHostToDev));
    CNRT_CHECK(cnrtPlaceNotifier(uploaded[i], qi));
    CNRT_CHECK(cnrtInvokeKernel(scale_offset, dim, cnrtFuncTypeBlock, args, 0, qi));
    CNRT_CHECK(cnrtPlaceNotifier(computed[i], qi));
    CNRT_CHECK(cnrtMemcpyAsync_V3(host_out + (size_t)i * kChunkFloats, dev_out[i], bytes, qi, cnrtMemcpyDevToHost));
    CNRT_CHECK(cnrtPlaceNotifier(downloaded[i], qi));
  }
  CNRT_CHECK(cnrtSyncDevice());
  printf("%d queue(s): step end times in us (upload / kernel / download)\n", queues);
  for (i = 0; i < kChunks; ++i) {
    float up, comp, down;
    CNRT_CHECK(cnrtNotifierElapsedTime(start, uploaded[i], &up));
    CNRT_CHECK(cnrtNotifierElapsedTime(start, computed[i], &comp));
    CNRT_CHECK(cnrtNotifierElapsedTime(start, downloaded[i], &down));
    printf("  chunk %d on queue %d: %9.2f %9.2f %9.2f\n", i, i % queues, up * 1e3, comp * 1e3, down * 1e3);
    if (down > total) total = down;
    CNRT_CHECK(cnrtNotifierDestroy(uploaded[i]));
    CNRT_CHECK(cnrtNotifierDestroy(computed[i]));
    CNRT_CHECK(cnrtNotifierDestroy(downloaded[i]));
  }
  CNRT_CHECK(cnrtNotifierDestroy(start));
  for (i = 0; i < queues; ++i) CNRT_CHECK(cnrtQueueDestroy(q[i]));
  return total;
}

static int check(const float *in, const float *out) {
  size_t i;
  for (i = 0; i < (size_t)kChunks * kChunkFloats; ++i)
    if (out[i] != in[i] * 2.0f + 1.0f) {
      printf("wrong result at %lu: %f\n", (unsigned long)i, out[i]);
      return 1;
    }
  return 0;
}

int main(void) {
  const size_t total_bytes = (size_t)kChunks * kChunkFloats * sizeof(float);
  float *host_in = NULL, *host_out = NULL;
  void *dev_in[kChunks], *dev_out[kChunks];
  cnrtDeviceProp_t prop;
  float serial, overlapped;
  size_t i;
  int bad = 0;

  CNRT_CHECK(cnrtGetDeviceProperties(&prop, 0));
  CNRT_CHECK(cnrtHostMalloc((void **)&host_in, total_bytes)); /* pinned: copies run at full rate */
  CNRT_CHECK(cnrtHostMalloc((void **)&host_out, total_bytes));
  for (i = 0; i < (size_t)kChunks * kChunkFloats; ++i) host_in[i] = (float)(i % 1000);
  for (i = 0; i < kChunks; ++i) {
    CNRT_CHECK(cnrtMalloc(&dev_in[i], kChunkFloats * sizeof(float)));
    CNRT_CHECK(cnrtMalloc(&dev_out[i], kChunkFloats * sizeof(float)));
  }

  serial = run(1, host_in, host_out, dev_in, dev_out, (unsigned)(prop.clusterCount * prop.McorePerCluster));
  bad |= check(host_in, host_out);
  overlapped = run(kQueues, host_in, host_out, dev_in, dev_out, (unsigned)(prop.clusterCount * prop.McorePerCluster));
  bad |= check(host_in, host_out);
  printf("1 queue: %.2f us, %d queues: %.2f us, speedup %.2fx\n", serial * 1e3, kQueues, overlapped * 1e3,
         serial / overlapped);

  for (i = 0; i < kChunks; ++i) {
    CNRT_CHECK(cnrtFree(dev_in[i]));
    CNRT_CHECK(cnrtFree(dev_out[i]));
  }
  CNRT_CHECK(cnrtFreeHost(host_in));
  CNRT_CHECK(cnrtFreeHost(host_out));
  if (bad || !(overlapped < serial)) {
    printf("FAILED\n");
    return 1;
  }
  printf("PASSED\n");
  return 0;
}
