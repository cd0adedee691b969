// The GPU tests' fixture (ctest label "gpu"): one CUDA backend for the whole suite, every test
// skipped (saying why) where no GPU is usable, and runs measured as the engine measures them.
#ifndef GPUBENCH_TESTS_GPU_CUDA_TEST_H_
#define GPUBENCH_TESTS_GPU_CUDA_TEST_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kernels/cuda/cuda_backend.h"
#include "server/engine/measurement.h"
#include "server/engine/resolve.h"

namespace gpubench {

class CudaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<Backend>> b = MakeCudaBackend();
    if (b.ok()) {
      backend_ = b->release();
    } else {
      skip_reason_ = new std::string(b.status().ToString());
    }
  }
  void SetUp() override {
    if (backend_ == nullptr) GTEST_SKIP() << "no usable CUDA GPU: " << *skip_reason_;
  }
  absl::StatusOr<RunResult> Run(RunRequest r) {
    absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, *backend_, ServerLimits());
    if (!spec.ok()) return spec.status();
    return MeasureRun(*backend_, *spec, [] { return false; }, &pool_);
  }
  static RunRequest Quick(const std::string& kernel, int64_t n) {
    RunRequest r;
    r.kernel = kernel;
    r.elements = n;
    r.measurement.min_samples = 3;
    r.measurement.min_time_seconds = 1e-4;
    r.measurement.max_noise = 1.0;
    return r;
  }
  static inline Backend* backend_ = nullptr;
  static inline std::string* skip_reason_ = nullptr;
  ParallelPool pool_{0};
};

}  // namespace gpubench

#endif  // GPUBENCH_TESTS_GPU_CUDA_TEST_H_
