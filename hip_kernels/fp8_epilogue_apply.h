// The epilogue as a kernel of its own, over float32 accumulators another library produced (the cuBLASLt route),
// and the device's multiprocessor count the launches share.
#pragma once

#include "fp8_epilogue.h"

namespace fp8ort {

// Multiprocessors (compute units on AMD) of the current device, looked up once per device (128 if the runtime does
// not say): what launches size their grids by.
int multiprocessors();

// Y = epilogue(acc) for acc[m, n] with row stride ld_acc (elements); `ep` from make_epilogue_args (ld = n).
// splits > 1: acc holds that many partial sums `slice` elements apart, added in order (split-K) first.
fp8ort_status launch_epilogue_apply(const float* acc, int64_t ld_acc, int64_t m, int64_t n, const epilogue_args& ep,
                                    hipStream_t stream, const char* op, int splits = 1, int64_t slice = 0);

}  // namespace fp8ort
