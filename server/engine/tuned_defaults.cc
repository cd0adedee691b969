#include "server/engine/tuned_defaults.h"

namespace gpubench {

void TunedDefaults::Set(int device, absl::string_view kernel, TunedLaunch launch) {
  std::lock_guard<std::mutex> lock(mu_);
  launches_[{device, std::string(kernel)}] = launch;
}

std::optional<TunedLaunch> TunedDefaults::Get(int device, absl::string_view kernel) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = launches_.find({device, std::string(kernel)});
  if (it == launches_.end()) return std::nullopt;
  return it->second;
}

absl::Status TunedDefaults::Apply(int device, const KernelVariant& kernel, TunedLaunch launch,
                                  int64_t elements, double bandwidth_bytes_per_second) {
  TunedDefaultsPersistence* persistence;
  {
    std::lock_guard<std::mutex> lock(mu_);
    launches_[{device, std::string(kernel.name)}] = launch;
    persistence = persistence_;
  }
  if (persistence == nullptr) return absl::OkStatus();
  return persistence->Save(device, kernel, launch, elements, bandwidth_bytes_per_second);
}

void TunedDefaults::SetPersistence(TunedDefaultsPersistence* persistence) {
  std::lock_guard<std::mutex> lock(mu_);
  persistence_ = persistence;
}

void TunedDefaults::RemovePersistence(const TunedDefaultsPersistence* persistence) {
  std::lock_guard<std::mutex> lock(mu_);
  if (persistence_ == persistence) persistence_ = nullptr;
}

bool TunedDefaults::persistent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return persistence_ != nullptr;
}

}  // namespace gpubench
