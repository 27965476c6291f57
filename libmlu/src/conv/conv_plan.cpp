#include "conv/conv_plan.h"

#include <string>

#include "common/error.h"
#include "gemm/device_model.h"
#include "gemm/splitk_reduce.h"

namespace mlusim::mlu::conv {

Status plan_conv_gemm(const Handle& h, gemm::GemmProblem& problem, const ImageColumns& layout, std::size_t ws_used,
                      std::size_t workspace_limit, const char* op, gemm::GemmPlan* plan) {
  const gemm::DeviceModel model = gemm::device_model(h, problem.in);
  *plan = gemm::plan_gemm(problem, model, layout);
  const std::size_t splitk_bytes = gemm::splitk_workspace_bytes(problem, *plan);
  if (splitk_bytes > 0 && ws_used + splitk_bytes > workspace_limit) {
    problem.allow_split_k = false;
    *plan = gemm::plan_gemm(problem, model, layout);
  }
  MLU_CHECK(plan->ms > 0, Status::kNotSupported, std::string(op) + ": no tiling fits this device's on-chip memories");
  return Status::kSuccess;
}

}  // namespace mlusim::mlu::conv
