// Launch configurations chosen by Autotune, used when a request names none; applied through one
// path (TunedDefaults::Apply) that persists them where a persistence is injected.
#ifndef GPUBENCH_SERVER_ENGINE_TUNED_DEFAULTS_H_
#define GPUBENCH_SERVER_ENGINE_TUNED_DEFAULTS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kernels/catalog.h"

namespace gpubench {

// A launch configuration chosen by Autotune.
struct TunedLaunch {
  int block_size = 0;
  int items_per_thread = 0;  // 0: the catalog's (the variant's items are fixed)
  bool operator==(const TunedLaunch&) const = default;
};

// Where applied launches outlive the process (the server's --tuned_defaults_file). Thread-safe.
class TunedDefaultsPersistence {
 public:
  virtual ~TunedDefaultsPersistence() = default;
  // Keeps `launch` for `kernel` on `device`, measured at `elements` with that bandwidth. An error
  // says why it was not kept.
  virtual absl::Status Save(int device, const KernelVariant& kernel, TunedLaunch launch,
                            int64_t elements, double bandwidth_bytes_per_second) = 0;
};

// Launch configurations chosen by Autotune, per (device, kernel). Thread-safe.
class TunedDefaults {
 public:
  // In memory only: for values read back from the persistence at start-up.
  void Set(int device, absl::string_view kernel, TunedLaunch launch);
  std::optional<TunedLaunch> Get(int device, absl::string_view kernel) const;

  // The one path by which Autotune's choice takes effect: in memory at once (it stays even when
  // persisting fails), then through the persistence where one is set. OK without a persistence;
  // otherwise the persistence's status.
  absl::Status Apply(int device, const KernelVariant& kernel, TunedLaunch launch,
                     int64_t elements, double bandwidth_bytes_per_second);

  // Not owned; none (the default): applied values live in memory only and a restart forgets
  // them. A persistence removes itself before it is destroyed.
  void SetPersistence(TunedDefaultsPersistence* persistence);
  void RemovePersistence(const TunedDefaultsPersistence* persistence);  // when it is the one set
  bool persistent() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<int, std::string>, TunedLaunch> launches_;
  TunedDefaultsPersistence* persistence_ = nullptr;
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_TUNED_DEFAULTS_H_
