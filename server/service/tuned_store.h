// Persistence of Autotune's applied configurations (--tuned_defaults_file): a JSON file in
// protobuf's JSON mapping of v1::TunedDefaultsFile, keyed by GPU UUID.
#ifndef GPUBENCH_SERVER_SERVICE_TUNED_STORE_H_
#define GPUBENCH_SERVER_SERVICE_TUNED_STORE_H_

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "gpubench/v1/benchmark.pb.h"
#include "server/engine/engine.h"

namespace gpubench {

// The engine's TunedDefaultsPersistence for --tuned_defaults_file.
class TunedDefaultsStore final : public TunedDefaultsPersistence {
 public:
  // Reads `path` (a missing file is an empty store), applies to `engine` every entry whose GPU
  // is on this node (entries for other GPUs are kept and written back untouched) and becomes the
  // engine's persistence: TunedDefaults::Apply then rewrites the file. INVALID_ARGUMENT (naming
  // the file and the entry) for bad JSON, an unknown kernel, a library-launched kernel or a launch
  // the catalog does not allow, so a bad file fails at start-up. `engine` must outlive the store.
  static absl::StatusOr<std::unique_ptr<TunedDefaultsStore>> Open(const std::string& path,
                                                                  Engine* engine);
  ~TunedDefaultsStore() override;  // no longer the engine's persistence

  // Records `launch` for `kernel` on `device` (by the GPU's UUID) and rewrites the file (write to
  // a temporary file, then rename). Thread-safe.
  absl::Status Save(int device, const KernelVariant& kernel, TunedLaunch launch, int64_t elements,
                    double bandwidth_bytes_per_second) override;

  int applied_at_start() const { return applied_at_start_; }
  const std::string& path() const { return path_; }

 private:
  TunedDefaultsStore(std::string path, Engine* engine) : path_(std::move(path)), engine_(engine) {}
  absl::Status WriteLocked() const;

  const std::string path_;
  Engine* const engine_;
  mutable std::mutex mu_;
  v1::TunedDefaultsFile file_;  // guarded by mu_
  int applied_at_start_ = 0;
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_SERVICE_TUNED_STORE_H_
