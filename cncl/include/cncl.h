/* cncl.h: mlusim's collective communication library, in the shape of Cambricon's CNCL (the MLU's
 * NCCL): communicators over the simulated devices of this process, collectives and point-to-point
 * transfers enqueued on cnrt queues.
 *
 * Everything is real: every collective is executed as peer copies over the chips' links
 * (cnrtMemcpyPeerAsync: MLU-Link where the config has it, the host otherwise) and reduction
 * kernels on the simulated cores, ordered across devices with notifiers, so data really moves and
 * reduces and a wrong algorithm gives wrong numbers. Simulated time comes from those operations;
 * the host pays one kernel launch per rank per collective (host.launch_overhead_ns), as the real
 * library launches one kernel per rank.
 *
 * Algorithms (cncl/src/algorithms.h has the step-by-step schedules):
 *   AllReduce      ring (reduce-scatter then all-gather: 2(n-1) steps of S/n bytes) or binary
 *                  tree (reduce to rank 0 then broadcast: 2 ceil(log2 n) steps of S bytes),
 *                  whichever the link model estimates faster:
 *                    ring: 2(n-1) (a + S / (n B)),  tree: 2 ceil(log2 n) (a + S / B)
 *                  with a = link latency + DRAM latency, B = link bandwidth (ns, GB/s); so small
 *                  messages take the tree and large ones the ring.
 *   Broadcast      pipelined chain from the root (n slices, so n - 1 hops overlap).
 *   Reduce         pipelined chain towards the root, reducing at every hop.
 *   AllGather      ring, n - 1 steps of S/n bytes.
 *   ReduceScatter  ring, n - 1 steps of S/n bytes.
 *   AlltoAll       n(n-1) direct peer copies at once (the links share bandwidth).
 *   Send/Recv      one peer copy, matched in call order per (sender, receiver) pair.
 *
 * Calling convention. Communicators of one clique (created together by cnclInitComms) each stand
 * for one rank on one device; one host thread may drive all of them. A collective is enqueued
 * when every rank of the clique has called it (the k-th call of each rank forms the k-th
 * collective), so calling it on rank 0 and then syncing rank 0's queue before the other ranks have
 * called it waits for nothing: call all ranks first, or wrap the calls in cnclGroupStart/End.
 * Inside a group every call is only checked; cnclGroupEnd submits them in call order. Calls of
 * one collective must agree (operation, count, dtype, reduce op, root); if they do not, the call
 * that completes the set (or cnclGroupEnd) returns CNCL_RET_ERR_INVALID naming the difference and
 * that collective is dropped on every rank (nothing is enqueued for it).
 *
 * Buffers: device memory of the rank's device, from cnrtMalloc, live until the queue has run the
 * collective. In-place (sendbuff == recvbuff) is allowed where NCCL allows it (AllReduce,
 * Broadcast, Reduce; AllGather with sendbuff == recvbuff + rank * count; ReduceScatter with
 * recvbuff == sendbuff + rank * recvcount). Each communicator keeps a device scratch buffer per
 * rank for incoming chunks; it grows to the largest collective's need (growing frees the old one,
 * which waits for that device's queued work).
 *
 * Data types: every type for collectives that only move data; reductions (AllReduce, Reduce,
 * ReduceScatter) in cnclInt8, cnclInt32, cnclFloat16 and cnclFloat32, the types the VFU computes,
 * and cnclBfloat16 where the config has bf16 arithmetic (vfu.bf16: preset mlu590; elsewhere
 * CNCL_RET_ERR_UNSUPPORTED naming the config) (integer sums wrap as two's complement; fp16 and bf16
 * sums are rounded to their type at every step).
 *
 * Thread safety: every function may be called from any thread; calls are serialised by one
 * library lock. Determinism: the same calls on the same config give the same times and results.
 */
#ifndef MLUSIM_CNCL_H_
#define MLUSIM_CNCL_H_

#include <stddef.h>

#include "cnrt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CNCL_MAJOR_VERSION 1
#define CNCL_MINOR_VERSION 0
#define CNCL_PATCH_VERSION 0

typedef enum {
  CNCL_RET_SUCCESS = 0,
  CNCL_RET_ERR_UNSUPPORTED = 1,  /* valid request the library cannot serve (a dtype it cannot reduce) */
  CNCL_RET_ERR_INVALID = 2,      /* bad handle, mismatched calls of one collective, unbalanced group */
  CNCL_RET_ERR_ARGUMENT = 3,     /* an argument out of range (rank, root, peer, count, op, dtype) */
  CNCL_RET_ERR_NULL_POINTER = 4, /* a required pointer is NULL */
  CNCL_RET_ERR_INIT = 5,         /* communicator creation failed (duplicate rank, bad device list) */
  CNCL_RET_ERR_MEMORY = 6,       /* device scratch memory could not be allocated */
  CNCL_RET_ERR_SYSTEM = 7,       /* a cnrt call under the library failed; the message names it */
} cnclResult_t;

typedef enum {
  cnclInt8 = 0,
  cnclUint8 = 1,
  cnclInt16 = 2,
  cnclInt32 = 3,
  cnclInt64 = 4,
  cnclFloat16 = 5,
  cnclFloat32 = 6,
  cnclFloat64 = 7,
  cnclBfloat16 = 8,
  cnclNumTypes = 9,
} cnclDataType_t;

typedef enum {
  cnclSum = 0,
  cnclProd = 1,
  cnclMax = 2,
  cnclMin = 3,
  cnclNumOps = 4,
} cnclReduceOp_t;

typedef struct cnclComm *cnclComm_t;

#define CNCL_CLIQUE_ID_BYTES_SIZE 128
/* Names a clique; all communicators created with one id form one clique. */
typedef struct {
  char data[CNCL_CLIQUE_ID_BYTES_SIZE];
} cnclCliqueId;

/* ---- errors and version ------------------------------------------------------------------- */

/* Static text of a result code ("CNCL_RET_ERR_ARGUMENT: ..."); "unknown cnclResult_t" for others.
 * NCCL: ncclGetErrorString. */
const char *cnclGetErrorStr(cnclResult_t result);
/* The detail of this thread's last failed call (names the argument, rank or cnrt error); "" if
 * none failed yet. NCCL: ncclGetLastError. */
const char *cnclGetLastErrorStr(void);
/* CNCL_MAJOR_VERSION * 10000 + minor * 100 + patch. CNCL_RET_ERR_NULL_POINTER: version NULL. */
cnclResult_t cnclGetVersion(int *version);

/* ---- communicators ------------------------------------------------------------------------- */

/* A fresh clique id. CNCL_RET_ERR_NULL_POINTER: clique_id NULL. NCCL: ncclGetUniqueId. */
cnclResult_t cnclGetCliqueId(cnclCliqueId *clique_id);

/* Creates `num_comm` communicators of one clique of `nrank` ranks in this process: comms[i] is
 * rank rank_list[i] on device dev_list[i]. rank_list NULL means ranks 0..num_comm-1. clique_id
 * NULL makes a new clique; otherwise every communicator of the id's clique must be created by
 * this one call (mlusim runs all ranks of a clique in one process), so num_comm must equal nrank.
 * NCCL: ncclCommInitAll (single process).
 *   CNCL_RET_ERR_NULL_POINTER: comms or dev_list NULL.
 *   CNCL_RET_ERR_ARGUMENT: num_comm < 1, nrank != num_comm, a device outside 0..cnrtGetDeviceCount-1.
 *   CNCL_RET_ERR_INIT: a rank outside 0..nrank-1 or given twice, the id's clique already exists,
 *     or two ranks on one device (one rank per device).
 *   CNCL_RET_ERR_SYSTEM: creating the per-rank notifiers failed (cnrt error in the message).
 * On failure no communicator is created and comms is left unchanged. */
cnclResult_t cnclInitComms(cnclComm_t *comms, int num_comm, const int *dev_list, const int *rank_list, int nrank,
                           const cnclCliqueId *clique_id);

/* Destroys communicators (a clique's shared state goes with its last communicator). Collectives
 * already enqueued still run; calls of a collective not yet complete on every rank are dropped.
 * NCCL: ncclCommDestroy.
 *   CNCL_RET_ERR_NULL_POINTER: comms NULL.  CNCL_RET_ERR_ARGUMENT: num_comm < 1.
 *   CNCL_RET_ERR_INVALID: an entry is not a live communicator (nothing is destroyed then). */
cnclResult_t cnclDestroyComms(cnclComm_t *comms, int num_comm);

/* Rank, number of ranks and device of a communicator. NCCL: ncclCommUserRank, ncclCommCount,
 * ncclCommCuDevice. CNCL_RET_ERR_NULL_POINTER: output NULL. CNCL_RET_ERR_INVALID: bad comm. */
cnclResult_t cnclGetCommRank(int *rank, cnclComm_t comm);
cnclResult_t cnclGetCommCount(int *count, cnclComm_t comm);
cnclResult_t cnclGetCommDevice(int *dev, cnclComm_t comm);

/* ---- collectives ---------------------------------------------------------------------------
 * Common errors, checked when the call is made (inside a group too):
 *   CNCL_RET_ERR_INVALID: comm is not a live communicator; queue is not a live queue of the
 *     communicator's device.
 *   CNCL_RET_ERR_NULL_POINTER: a buffer the call needs is NULL (count > 0).
 *   CNCL_RET_ERR_ARGUMENT: datatype or op out of range; root/peer outside 0..nrank-1; a buffer
 *     range is not inside a live allocation of the communicator's device.
 *   CNCL_RET_ERR_UNSUPPORTED: a reduction in a type the VFU cannot reduce (see the top).
 * count == 0 is a valid no-op that still takes part in matching. */

/* recvbuff[i] = op over ranks of sendbuff[i], on every rank. NCCL: ncclAllReduce. */
cnclResult_t cnclAllReduce(const void *sendbuff, void *recvbuff, size_t count, cnclDataType_t datatype,
                           cnclReduceOp_t op, cnclComm_t comm, cnrtQueue_t queue);
/* recvbuff = root's sendbuff on every rank (sendbuff is read on the root only). NCCL: ncclBroadcast. */
cnclResult_t cnclBroadcast(const void *sendbuff, void *recvbuff, size_t count, cnclDataType_t datatype, int root,
                           cnclComm_t comm, cnrtQueue_t queue);
/* Root's recvbuff = op over ranks of sendbuff (recvbuff is used on the root only). NCCL: ncclReduce. */
cnclResult_t cnclReduce(const void *sendbuff, void *recvbuff, size_t count, cnclDataType_t datatype,
                        cnclReduceOp_t op, int root, cnclComm_t comm, cnrtQueue_t queue);
/* recvbuff[r * sendcount + i] = rank r's sendbuff[i]. NCCL: ncclAllGather. */
cnclResult_t cnclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, cnclDataType_t datatype,
                           cnclComm_t comm, cnrtQueue_t queue);
/* recvbuff[i] = op over ranks of sendbuff[rank * recvcount + i]. NCCL: ncclReduceScatter. */
cnclResult_t cnclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, cnclDataType_t datatype,
                               cnclReduceOp_t op, cnclComm_t comm, cnrtQueue_t queue);
/* recvbuff[r * count + i] = rank r's sendbuff[rank * count + i]; sendbuff != recvbuff. NCCL: ncclAllToAll. */
cnclResult_t cnclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, cnclDataType_t datatype,
                          cnclComm_t comm, cnrtQueue_t queue);

/* ---- point to point -------------------------------------------------------------------------
 * A send from rank a to rank b and a receive on b from a match in call order per (a, b) pair; the
 * copy starts when both queues have reached their call, and b's later work sees the data.
 * Unmatched sends or receives stay pending until their partner is called (or their comm is
 * destroyed). A matched pair with different counts or types is CNCL_RET_ERR_INVALID. */
cnclResult_t cnclSend(const void *sendbuff, size_t count, cnclDataType_t datatype, int peer, cnclComm_t comm,
                      cnrtQueue_t queue);
cnclResult_t cnclRecv(void *recvbuff, size_t count, cnclDataType_t datatype, int peer, cnclComm_t comm,
                      cnrtQueue_t queue);

/* ---- groups ---------------------------------------------------------------------------------
 * Calls between cnclGroupStart and the matching cnclGroupEnd (groups nest; per thread) are checked
 * and recorded; the outermost cnclGroupEnd submits them in call order and returns the first
 * failure of that submission. NCCL: ncclGroupStart / ncclGroupEnd.
 *   cnclGroupEnd: CNCL_RET_ERR_INVALID without a matching cnclGroupStart. */
cnclResult_t cnclGroupStart(void);
cnclResult_t cnclGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* MLUSIM_CNCL_H_ */
