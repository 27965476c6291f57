/* bandwidthTest: simulated host<->device and device<->device copy bandwidth, pinned vs pageable,
 * over a range of sizes. Each copy is timed with notifiers on a queue, so the figures are
 * simulated GB/s: latency dominates small copies, the host link's configured rate large ones.
 * Exits non-zero unless pinned memory beats pageable memory in both directions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnrt.h"
#include "mlusim_ext.h"

enum { kRepeats = 3 };

/* Simulated GB/s of `repeats` copies of `bytes` in `queue` (1 GB = 1e9 bytes). */
static double measure(cnrtQueue_t queue, void *dst, void *src, size_t bytes, cnrtMemTransDir_t dir) {
  cnrtNotifier_t start, stop;
  float ms = 0.0f;
  int i;
  CNRT_CHECK(cnrtNotifierCreate(&start));
  CNRT_CHECK(cnrtNotifierCreate(&stop));
  CNRT_CHECK(cnrtPlaceNotifier(start, queue));
  for (i = 0; i < kRepeats; ++i) CNRT_CHECK(cnrtMemcpyAsync_V3(dst, src, bytes, queue, dir));
  CNRT_CHECK(cnrtPlaceNotifier(stop, queue));
  CNRT_CHECK(cnrtQueueSync(queue));
  CNRT_CHECK(cnrtNotifierElapsedTime(start, stop, &ms));
  CNRT_CHECK(cnrtNotifierDestroy(start));
  CNRT_CHECK(cnrtNotifierDestroy(stop));
  return (double)bytes * kRepeats / (ms * 1e-3) / 1e9;
}

int main(void) {
  static const size_t sizes[] = {4096, 65536, 1u << 20, 8u << 20};
  const size_t max_bytes = 8u << 20;
  size_t k;
  void *pinned = NULL, *pageable = malloc(max_bytes), *dev = NULL, *dev2 = NULL;
  cnrtQueue_t queue;
  char config[64];
  double h2d_pinned = 0, h2d_pageable = 0, d2h_pinned = 0, d2h_pageable = 0, d2d = 0;

  if (!pageable) return 1;
  CNRT_CHECK(mlusimGetConfigName(config, sizeof config));
  CNRT_CHECK(cnrtHostMalloc(&pinned, max_bytes));
  CNRT_CHECK(cnrtMalloc(&dev, max_bytes));
  CNRT_CHECK(cnrtMalloc(&dev2, max_bytes));
  CNRT_CHECK(cnrtQueueCreate(&queue));
  memset(pinned, 1, max_bytes);
  memset(pageable, 2, max_bytes);

  printf("simulated bandwidth on config '%s' (GB/s, %d copies per size)\n", config, kRepeats);
  printf("%10s %12s %12s %12s %12s %12s\n", "bytes", "H2D pinned", "H2D pageable", "D2H pinned", "D2H pageable", "D2D");
  for (k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    const size_t n = sizes[k];
    h2d_pinned = measure(queue, dev, pinned, n, cnrtMemcpyHostToDev);
    h2d_pageable = measure(queue, dev, pageable, n, cnrtMemcpyHostToDev);
    d2h_pinned = measure(queue, pinned, dev, n, cnrtMemcpyDevToHost);
    d2h_pageable = measure(queue, pageable, dev, n, cnrtMemcpyDevToHost);
    d2d = measure(queue, dev2, dev, n, cnrtMemcpyDevToDev);
    printf("%10lu %12.3f %12.3f %12.3f %12.3f %12.3f\n", (unsigned long)n, h2d_pinned, h2d_pageable, d2h_pinned,
           d2h_pageable, d2d);
  }

  CNRT_CHECK(cnrtQueueDestroy(queue));
  CNRT_CHECK(cnrtFree(dev));
  CNRT_CHECK(cnrtFree(dev2));
  CNRT_CHECK(cnrtFreeHost(pinned));
  free(pageable);
  /* The last (largest) size decides: pinned must beat pageable in both directions. */
  if (h2d_pinned > h2d_pageable && d2h_pinned > d2h_pageable) {
    printf("pinned/pageable at %lu bytes: H2D %.2fx, D2H %.2fx\nPASSED\n", (unsigned long)max_bytes,
           h2d_pinned / h2d_pageable, d2h_pinned / d2h_pageable);
    return 0;
  }
  printf("FAILED: pinned memory is not faster than pageable memory\n");
  return 1;
}
