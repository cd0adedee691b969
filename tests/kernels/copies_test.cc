// The copy families (kernels/families/copies.cc) end to end on the CPU backend with two simulated
// devices: every copy kernel resolves, samples, moves elements x 4 bytes and verifies every copied
// element; peer kernels need the second device; with NVML's PCIe facts (the fake libnvidia-ml)
// the host copies report a percentage of the link's rate.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/parallel.h"
#include "kernels/catalog.h"
#include "kernels/cpu_backend.h"
#include "kernels/nvml.h"
#include "kernels/nvml_backend.h"
#include "kernels/pcie.h"
#include "server/engine/measurement.h"
#include "server/engine/resolve.h"
#include "server/engine/run_spec.h"

namespace gpubench {
namespace {

constexpr const char* kCopyKernels[] = {
    "copy_h2d_pinned",   "copy_d2h_pinned", "copy_h2d_pageable", "copy_d2h_pageable",
    "copy_bidir_pinned", "copy_peer_ce",    "copy_peer_sm_push", "copy_peer_sm_pull"};

bool IsPeer(const std::string& kernel) { return kernel.rfind("copy_peer", 0) == 0; }

class CopiesTest : public ::testing::Test {
 protected:
  absl::StatusOr<RunResult> Run(Backend& backend, const std::string& kernel, int64_t n,
                                CacheMode mode, std::optional<int> peer = std::nullopt,
                                int device = 0) {
    RunRequest r;
    r.kernel = kernel;
    r.elements = n;
    r.device_index = device;
    r.peer_device_index = peer;
    r.cache_mode = mode;
    r.measurement.min_samples = 3;
    r.measurement.min_time_seconds = 1e-4;
    r.measurement.max_noise = 1.0;
    r.measurement.timeout_seconds = 2;
    absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, backend, ServerLimits());
    if (!spec.ok()) return spec.status();
    return MeasureRun(backend, *spec, [] { return false; }, &pool_);
  }
  ParallelPool pool_{2};
};

TEST_F(CopiesTest, EveryCopyKernelIsRegisteredAndVerifiedOnTwoCpuDevices) {
  std::unique_ptr<Backend> backend = MakeCpuBackend({.devices = 2, .threads_per_device = 2});
  for (const char* kernel : kCopyKernels) {
    ASSERT_TRUE(FindKernel(kernel).ok()) << kernel;
    for (CacheMode mode : {CacheMode::kCold, CacheMode::kHot}) {
      const int64_t n = (1 << 18) + 3;  // odd: unequal bidirectional halves, a 12-byte tail
      absl::StatusOr<RunResult> r = Run(*backend, kernel, n, mode, std::nullopt, /*device=*/1);
      ASSERT_TRUE(r.ok()) << kernel << ": " << r.status();
      EXPECT_TRUE(r->verification->passed) << kernel;
      EXPECT_EQ(r->verification->checked, n) << kernel;
      EXPECT_EQ(r->bytes_moved, n * 4) << kernel;
      EXPECT_GT(r->bandwidth_bytes_per_second, 0) << kernel;
      EXPECT_FALSE(r->percent_of_peak.has_value()) << kernel << ": no NVML, no link rate";
      if (IsPeer(kernel)) {
        EXPECT_EQ(r->spec.peer_device_index, 0) << "default peer: the next device, wrapping";
        EXPECT_NE(r->launch_report.find("peer path: host memory"), std::string::npos)
            << kernel << ": " << r->launch_report;
      }
    }
  }
}

TEST_F(CopiesTest, PeerCopiesNeedASecondDevice) {
  std::unique_ptr<Backend> one = MakeCpuBackend({.devices = 1, .threads_per_device = 1});
  for (const char* kernel : {"copy_peer_ce", "copy_peer_sm_push", "copy_peer_sm_pull"}) {
    absl::StatusOr<RunResult> r = Run(*one, kernel, 1024, CacheMode::kHot);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << kernel << r.status();
  }
  std::unique_ptr<Backend> two = MakeCpuBackend({.devices = 2, .threads_per_device = 1});
  EXPECT_EQ(Run(*two, "copy_peer_ce", 1024, CacheMode::kHot, 0).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "the peer must be another device";
  EXPECT_EQ(Run(*two, "copy_h2d_pinned", 1024, CacheMode::kHot, 1).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "a one-device copy takes no peer";
  absl::StatusOr<RunResult> explicit_peer = Run(*two, "copy_peer_sm_pull", 1024, CacheMode::kHot, 0, 1);
  ASSERT_TRUE(explicit_peer.ok()) << explicit_peer.status();
  EXPECT_EQ(explicit_peer->spec.peer_device_index, 0);
}

TEST_F(CopiesTest, HostCopiesArePercentOfThePcieLinkFromNvml) {
  unsetenv("FAKE_NVML_UNKNOWN_UUID");
  setenv("FAKE_NVML_PCIE", "1,16,5,16", 1);
  absl::StatusOr<std::shared_ptr<Nvml>> nvml = Nvml::Load(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  std::unique_ptr<Backend> backend =
      WithNvmlFacts(MakeCpuBackend({.devices = 2, .threads_per_device = 1}), *nvml);
  const double link = *PcieLinkBytesPerSecond(5, 16);
  for (const char* kernel : {"copy_h2d_pinned", "copy_d2h_pageable", "copy_bidir_pinned"}) {
    absl::StatusOr<RunResult> r = Run(*backend, kernel, 1 << 16, CacheMode::kHot);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->device.pcie_link_rate_source, "max");
    ASSERT_TRUE(r->percent_of_peak.has_value()) << kernel;
    const double reference = std::string(kernel) == "copy_bidir_pinned" ? 2 * link : link;
    EXPECT_NEAR(*r->percent_of_peak, 100 * r->bandwidth_bytes_per_second / reference, 1e-6);
  }
  absl::StatusOr<RunResult> peer = Run(*backend, "copy_peer_ce", 1 << 16, CacheMode::kHot);
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_FALSE(peer->percent_of_peak.has_value()) << "no peer link rate in the snapshot";
  unsetenv("FAKE_NVML_PCIE");
}

}  // namespace
}  // namespace gpubench
