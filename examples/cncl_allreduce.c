/* cncl_allreduce: the all-reduce "hello world" of distributed training, across the simulated
 * chips of one process. Rank r (one per device) fills a buffer with r + 1, the ranks sum it with
 * cnclAllReduce, and every rank checks the result: on two chips 1 + 2 = 3.0. Prints the
 * simulated time of the collective and the bus bandwidth (nccl-tests' definition:
 * busbw = algbw x 2(n-1)/n, algbw = bytes / time). Needs a config with 2 or more devices
 * (MLUSIM_CONFIG=mlu370-x8). */
#include <stdio.h>
#include <stdlib.h>

#include "cncl.h"
#include "cnrt.h"
#include "mlusim_ext.h"

#define MAX_RANKS 16
#define CHECK_CNRT(call)                                                                     \
  do {                                                                                       \
    cnrtRet_t r_ = (call);                                                                   \
    if (r_ != cnrtSuccess) {                                                                 \
      printf("CNRT error %s at %s: %s\n", cnrtGetErrorName(r_), #call, mlusimGetLastErrorMessage()); \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)
#define CHECK_CNCL(call)                                                                     \
  do {                                                                                       \
    cnclResult_t r_ = (call);                                                                \
    if (r_ != CNCL_RET_SUCCESS) {                                                            \
      printf("FAILED: %s: %s (%s)\n", #call, cnclGetErrorStr(r_), cnclGetLastErrorStr());   \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

int main(void) {
  unsigned int devices = 0;
  int n, r, errors = 0, devs[MAX_RANKS];
  size_t i, count = 1 << 20; /* 4 MiB of fp32 per rank */
  float *host = (float *)malloc(count * sizeof(float));
  void *buf[MAX_RANKS];
  cnrtQueue_t queue[MAX_RANKS];
  cnclComm_t comm[MAX_RANKS];
  double t0 = 0, t1 = 0, us, algbw;

  if (!host) return 1;
  CHECK_CNRT(cnrtGetDeviceCount(&devices));
  if (devices < 2) {
    printf("FAILED: needs 2 or more devices (MLUSIM_CONFIG=mlu370-x8), this config has %u\n", devices);
    return 1;
  }
  n = devices > MAX_RANKS ? MAX_RANKS : (int)devices;
  for (r = 0; r < n; ++r) {
    devs[r] = r;
    CHECK_CNRT(cnrtSetDevice(r));
    CHECK_CNRT(cnrtQueueCreate(&queue[r]));
    CHECK_CNRT(cnrtMalloc(&buf[r], count * sizeof(float)));
    for (i = 0; i < count; ++i) host[i] = (float)(r + 1);
    CHECK_CNRT(cnrtMemcpy(buf[r], host, count * sizeof(float), cnrtMemcpyHostToDev));
  }
  CHECK_CNCL(cnclInitComms(comm, n, devs, NULL, n, NULL));

  CHECK_CNRT(mlusimGetHostTime(&t0));
  CHECK_CNCL(cnclGroupStart());
  for (r = 0; r < n; ++r) CHECK_CNCL(cnclAllReduce(buf[r], buf[r], count, cnclFloat32, cnclSum, comm[r], queue[r]));
  CHECK_CNCL(cnclGroupEnd());
  for (r = 0; r < n; ++r) CHECK_CNRT(cnrtQueueSync(queue[r]));
  CHECK_CNRT(mlusimGetHostTime(&t1));

  for (r = 0; r < n; ++r) {
    CHECK_CNRT(cnrtMemcpy(host, buf[r], count * sizeof(float), cnrtMemcpyDevToHost));
    for (i = 0; i < count; ++i)
      if (host[i] != (float)(n * (n + 1) / 2)) ++errors;
    if (r == 0) printf("all_reduce result (should be %.1f): %.1f\n", (double)(n * (n + 1) / 2), (double)host[0]);
  }
  us = (t1 - t0) / 1e3;
  algbw = (double)(count * sizeof(float)) / (t1 - t0); /* bytes per ns = GB/s */
  printf("%d ranks, %zu bytes: %.1f us simulated, algbw %.1f GB/s, busbw %.1f GB/s\n", n, count * sizeof(float), us,
         algbw, algbw * 2.0 * (n - 1) / n);
  CHECK_CNCL(cnclDestroyComms(comm, n));
  for (r = 0; r < n; ++r) {
    CHECK_CNRT(cnrtFree(buf[r]));
    CHECK_CNRT(cnrtQueueDestroy(queue[r]));
  }
  free(host);
  printf(errors ? "FAILED: %d wrong elements\n" : "PASSED\n", errors);
  return errors != 0;
}
