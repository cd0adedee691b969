#include "kernels/backend.h"

#include <utility>

namespace gpubench {
namespace {

// Forwards everything to the wrapped backend; Describe's answer is amended.
class DescribeAmendingBackend final : public Backend {
 public:
  DescribeAmendingBackend(std::unique_ptr<Backend> inner, std::function<void(DeviceInfo&)> amend)
      : inner_(std::move(inner)), amend_(std::move(amend)) {}
  BackendKind kind() const override { return inner_->kind(); }
  BackendCapabilities capabilities() const override { return inner_->capabilities(); }
  std::string SampleMethod(bool cold, int hot_batch_size, TimerStrategy timer,
                           bool blocking) const override {
    return inner_->SampleMethod(cold, hot_batch_size, timer, blocking);
  }
  int device_count() const override { return inner_->device_count(); }
  absl::StatusOr<DeviceInfo> Describe(int device) const override {
    absl::StatusOr<DeviceInfo> info = inner_->Describe(device);
    if (info.ok()) amend_(*info);
    return info;
  }
  absl::Status ApplyDeviceLimits(int device, const DeviceLimits& limits) override {
    return inner_->ApplyDeviceLimits(device, limits);
  }
  absl::Status CheckLaunchSize(const KernelVariant& variant, const RunShape& shape) const override {
    return inner_->CheckLaunchSize(variant, shape);
  }
  int MaxActiveBlocksPerMultiprocessor(const KernelVariant& variant, int device,
                                       int block_size) const override {
    return inner_->MaxActiveBlocksPerMultiprocessor(variant, device, block_size);
  }
  absl::StatusOr<std::unique_ptr<Session>> Open(const DeviceInfo& device,
                                                const KernelVariant& variant,
                                                const LaunchGeometry& geometry,
                                                const HostData& data) override {
    return inner_->Open(device, variant, geometry, data);
  }
  void ReleaseCachedBuffers(int device) override { inner_->ReleaseCachedBuffers(device); }

 private:
  std::unique_ptr<Backend> inner_;
  const std::function<void(DeviceInfo&)> amend_;
};

}  // namespace

absl::string_view BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu:
      return "cpu";
    case BackendKind::kCuda:
      return "cuda";
  }
  return "unknown";
}

bool HasBinding(const KernelVariant& variant, BackendKind kind) {
  return kind == BackendKind::kCuda ? variant.cuda != nullptr : variant.cpu != nullptr;
}

std::unique_ptr<Backend> WithDescribeAmendment(std::unique_ptr<Backend> backend,
                                               std::function<void(DeviceInfo&)> amend) {
  return std::make_unique<DescribeAmendingBackend>(std::move(backend), std::move(amend));
}

std::unique_ptr<Backend> WithNodeName(std::unique_ptr<Backend> backend, std::string node_name) {
  return WithDescribeAmendment(
      std::move(backend),
      [node_name = std::move(node_name)](DeviceInfo& info) { info.node_name = node_name; });
}

const char* WindowSourceName(WindowSource source) {
  return source == WindowSource::kRangeProfiler ? "gpu_time_profiler" : "cupti_activity";
}

const char* L2FlushName(L2Flush flush) {
  return flush == L2Flush::kMemset ? "memset" : "clean";
}

const char* StreamKindName(StreamKind kind) {
  switch (kind) {
    case StreamKind::kNonBlocking:
      return "nonblocking";
    case StreamKind::kLegacy:
      return "legacy";
    case StreamKind::kPerThread:
      return "per_thread";
  }
  return "unknown";
}

}  // namespace gpubench
