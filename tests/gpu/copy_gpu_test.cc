// The copy families on real GPUs (ctest label "gpu"): every copy kernel runs through the engine,
// copies every byte (verification) at a plausible rate; host copies report a percentage of the
// PCIe link where NVML is loaded; peer copies need two GPUs with peer access and name their path.
// Without a usable GPU every test skips and says why; on a one-GPU node the peer tests check the
// FAILED_PRECONDITION instead.
#include <gtest/gtest.h>

#include "common/parallel.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/nvml.h"
#include "kernels/nvml_backend.h"
#include "server/engine/measurement.h"
#include "server/engine/resolve.h"
#include "server/engine/nvml_monitor.h"
#include "server/engine/run_spec.h"

namespace gpubench {
namespace {

class CopyGpuTest : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<Backend>> b = MakeCudaBackend();
    if (!b.ok()) {
      skip_reason_ = new std::string(b.status().ToString());
      return;
    }
    absl::StatusOr<std::shared_ptr<Nvml>> nvml = Nvml::Load();
    backend_ = nvml.ok() ? WithNvmlFacts(*std::move(b), *nvml).release() : b->release();
  }
  void SetUp() override {
    if (backend_ == nullptr) GTEST_SKIP() << "no usable CUDA GPU: " << *skip_reason_;
  }
  absl::StatusOr<RunResult> Run(const std::string& kernel, int64_t n, CacheMode mode) {
    RunRequest r;
    r.kernel = kernel;
    r.elements = n;
    r.cache_mode = mode;
    r.measurement.min_samples = 5;
    r.measurement.min_time_seconds = 0.02;
    r.measurement.max_noise = 1.0;
    absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, *backend_, ServerLimits());
    if (!spec.ok()) return spec.status();
    return MeasureRun(*backend_, *spec, [] { return false; }, &pool_);
  }
  static Backend* backend_;
  static std::string* skip_reason_;
  ParallelPool pool_{0};
};
Backend* CopyGpuTest::backend_ = nullptr;
std::string* CopyGpuTest::skip_reason_ = nullptr;

TEST_P(CopyGpuTest, CopiesEveryByteAtAPlausibleRate) {
  const std::string kernel = GetParam();
  const bool peer = kernel.rfind("copy_peer", 0) == 0;
  const int64_t n = (16 << 20) + 3;  // 64 MiB and a 12-byte tail
  for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
    absl::StatusOr<RunResult> r = Run(kernel, n, mode);
    if (peer && backend_->device_count() < 2) {
      ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
      GTEST_SKIP() << "one GPU: checked the FAILED_PRECONDITION only";
    }
    if (peer && r.status().code() == absl::StatusCode::kFailedPrecondition) {
      GTEST_SKIP() << "no peer access on this node: " << r.status();
    }
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->verification->passed) << kernel;
    EXPECT_EQ(r->bytes_moved, n * 4);
    // Slower than 1 GB/s is broken on any PCIe 3+ or NVLink system; faster than 5 TB/s means the
    // copy did not happen.
    EXPECT_GT(r->bandwidth_bytes_per_second, 1e9) << kernel;
    EXPECT_LT(r->bandwidth_bytes_per_second, 5e12) << kernel;
    if (!peer && r->device.pcie_link_bytes_per_second > 0) {
      ASSERT_TRUE(r->percent_of_peak.has_value());
      EXPECT_LT(*r->percent_of_peak, 110) << "above the link's theoretical rate";
    }
    if (peer) {
      EXPECT_NE(r->launch_report.find("peer access"), std::string::npos) << r->launch_report;
    }
    std::cout << kernel << " " << CacheModeName(mode) << ": " << r->bandwidth_bytes_per_second / 1e9
              << " GB/s" << (r->percent_of_peak ? " (" + std::to_string(*r->percent_of_peak) + "% of link)" : "")
              << " " << r->launch_report << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, CopyGpuTest,
                         ::testing::Values("copy_h2d_pinned", "copy_d2h_pinned",
                                           "copy_h2d_pageable", "copy_d2h_pageable",
                                           "copy_bidir_pinned", "copy_peer_ce",
                                           "copy_peer_sm_push", "copy_peer_sm_pull"));

}  // namespace
}  // namespace gpubench
