#include "server/service/tuned_store.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/files.h"

namespace gpubench {
namespace {

absl::Status CheckEntry(const v1::TunedDefault& d) {
  absl::StatusOr<const KernelVariant*> k = FindKernel(d.kernel());
  if (!k.ok()) return k.status();
  if (!(*k)->default_policy.block_size_tunable) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel ", d.kernel(), " picks its own launch configuration"));
  }
  if (d.block_size() < 32 || d.block_size() > 1024 || d.block_size() % 32 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_size ", d.block_size(), " is not a multiple of 32 in [32, 1024]"));
  }
  if (d.items_per_thread() != 0 && !ItemsPerThreadAllowed(**k, d.items_per_thread())) {
    return absl::InvalidArgumentError(absl::StrCat("items_per_thread ", d.items_per_thread(),
                                                   " is not allowed for ", d.kernel(), ": use ",
                                                   ItemsPerThreadRule(**k)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TunedDefaultsStore>> TunedDefaultsStore::Open(
    const std::string& path, Engine* engine) {
  std::unique_ptr<TunedDefaultsStore> store(new TunedDefaultsStore(path, engine));
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tuned_defaults_file ", path, " is a directory; name a file in it"));
  }
  // Every apply rewrites the file through a new file beside it: find out now, not at the first
  // apply, when that cannot work.
  if (absl::Status probe = ReplaceFileContents(path, "", /*probe_only=*/true); !probe.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--tuned_defaults_file ", path, ": ",
                                                   probe.message(),
                                                   " (the directory must exist and be writable)"));
  }
  if (!std::filesystem::exists(path, error)) {  // nothing applied yet
    engine->tuned_defaults().SetPersistence(store.get());
    return store;
  }
  std::string text;
  if (!ReadFileToString(path, &text)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read --tuned_defaults_file ", path));
  }
  if (auto s = google::protobuf::util::JsonStringToMessage(text, &store->file_); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tuned_defaults_file ", path, ": ", s.ToString()));
  }
  for (int i = 0; i < store->file_.defaults_size(); ++i) {
    const v1::TunedDefault& d = store->file_.defaults(i);
    if (absl::Status s = CheckEntry(d); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--tuned_defaults_file ", path, " entry ",
                                                     i + 1, " (", d.kernel(), " on ", d.gpu_uuid(),
                                                     "): ", s.message()));
    }
    const int device = DeviceIndexOfUuid(engine->backend(), d.gpu_uuid());
    if (device < 0) continue;  // another GPU: kept in the file, not applied here
    engine->tuned_defaults().Set(device, d.kernel(),
                                 TunedLaunch{d.block_size(), d.items_per_thread()});
    ++store->applied_at_start_;
  }
  engine->tuned_defaults().SetPersistence(store.get());
  return store;
}

TunedDefaultsStore::~TunedDefaultsStore() {
  engine_->tuned_defaults().RemovePersistence(this);
}

absl::Status TunedDefaultsStore::Save(int device, const KernelVariant& kernel, TunedLaunch launch,
                                      int64_t elements, double bandwidth_bytes_per_second) {
  absl::StatusOr<DeviceInfo> info = engine_->backend().Describe(device);
  if (!info.ok()) return info.status();
  std::lock_guard<std::mutex> lock(mu_);
  v1::TunedDefault* entry = nullptr;
  for (v1::TunedDefault& d : *file_.mutable_defaults()) {
    if (d.gpu_uuid() == info->uuid && d.kernel() == kernel.name) entry = &d;
  }
  if (entry == nullptr) entry = file_.add_defaults();
  entry->set_gpu_uuid(info->uuid);
  entry->set_gpu_model(info->name);
  entry->set_kernel(std::string(kernel.name));
  entry->set_block_size(launch.block_size);
  entry->set_items_per_thread(launch.items_per_thread);
  entry->set_elements(elements);
  entry->set_bandwidth_bytes_per_second(bandwidth_bytes_per_second);
  *entry->mutable_applied_at() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::GetCurrentTimeNanos());
  return WriteLocked();
}

absl::Status TunedDefaultsStore::WriteLocked() const {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  if (auto s = google::protobuf::util::MessageToJsonString(file_, &json, options); !s.ok()) {
    return absl::InternalError(s.ToString());
  }
  return ReplaceFileContents(path_, json);
}

}  // namespace gpubench
