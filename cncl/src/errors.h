// Result codes and the per-thread detail of the last failure (cnclGetLastErrorStr).
#pragma once

#include <string>

#include "cncl.h"

namespace mlusim::cncl {

// Records `detail` as this thread's last error and returns `code`, so checks read
// `return fail(CNCL_RET_ERR_ARGUMENT, "cnclAllReduce: ...")`.
cnclResult_t fail(cnclResult_t code, std::string detail);

// A cnrt failure under the library: CNCL_RET_ERR_SYSTEM with the cnrt error and its message.
cnclResult_t fail_cnrt(const std::string& what, cnrtRet_t r);

}  // namespace mlusim::cncl
