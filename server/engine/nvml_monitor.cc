#include "server/engine/nvml_monitor.h"

#include <unistd.h>

#include <chrono>
#include <mutex>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace gpubench {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);

// `pid` and the NSpid line of /proc/<pid>/status: NVML reports PIDs of the host's namespace,
// which equal getpid() only with hostPID (or outside containers).
std::set<uint32_t> PidsOf(pid_t pid) {
  std::set<uint32_t> pids = {static_cast<uint32_t>(pid)};
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    for (absl::string_view field : absl::StrSplit(line.substr(6), absl::ByAnyChar(" \t"),
                                                  absl::SkipEmpty())) {
      uint32_t pid = 0;
      if (absl::SimpleAtoi(field, &pid)) pids.insert(pid);
    }
  }
  return pids;
}

}  // namespace

absl::StatusOr<GpuSharing> ParseGpuSharing(absl::string_view text) {
  if (text == "exclusive") return GpuSharing::kExclusive;
  if (text == "shared") return GpuSharing::kShared;
  return absl::InvalidArgumentError(
      absl::StrCat("--gpu_sharing must be exclusive or shared (got '", text, "')"));
}

ClockEventWatch::ClockEventWatch(std::shared_ptr<const Nvml> nvml, std::string uuid)
    : nvml_(std::move(nvml)), uuid_(std::move(uuid)), thread_([this] { Poll(); }) {}

ClockEventWatch::~ClockEventWatch() { Join(); }

void ClockEventWatch::Join() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ClockEventWatch::Poll() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    const bool last = stop_;  // a stop seen before this poll: it is the final one
    lock.unlock();
    absl::StatusOr<uint64_t> mask = nvml_->ClockEventReasons(uuid_);
    if (!mask.ok()) {
      error_ = mask.status();
      return;
    }
    mask_ |= *mask;
    lock.lock();
    if (last) return;
    cv_.wait_for(lock, kPollInterval, [this] { return stop_; });
  }
}

absl::StatusOr<std::vector<std::string>> ClockEventWatch::Stop() {
  Join();
  if (!error_.ok()) return error_;
  return ClockEventReasonNames(mask_);
}

NvmlMonitor::NvmlMonitor(std::shared_ptr<const Nvml> nvml, std::vector<std::string> uuids,
                         GpuSharing sharing)
    : nvml_(std::move(nvml)), uuids_(std::move(uuids)), sharing_(sharing), own_pids_(PidsOf(getpid())) {}

absl::Status NvmlMonitor::CheckIdle(int device) const {
  if (sharing_ == GpuSharing::kExclusive || nvml_ == nullptr || device < 0 ||
      device >= static_cast<int>(uuids_.size())) {
    return absl::OkStatus();
  }
  const std::string& uuid = uuids_[device];
  absl::StatusOr<std::vector<NvmlProcess>> processes = nvml_->RunningProcesses(uuid);
  if (absl::IsNotFound(processes.status())) return absl::OkStatus();  // not an NVML GPU
  if (!processes.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot tell whether GPU ", uuid, " (device ", device,
                     ") is in use by another process: ", processes.status().message(),
                     "; set force to run anyway"));
  }
  std::set<uint32_t> own = own_pids_;
  if (worker_pids_) {
    for (pid_t worker : worker_pids_()) own.merge(PidsOf(worker));
  }
  std::vector<std::string> others;
  for (const NvmlProcess& p : *processes) {
    if (own.count(p.pid)) continue;
    others.push_back(p.used_memory_bytes >= 0
                         ? absl::StrCat("pid ", p.pid, " (", p.kind, ", ",
                                        p.used_memory_bytes >> 20, " MiB)")
                         : absl::StrCat("pid ", p.pid, " (", p.kind, ")"));
  }
  if (others.empty()) return absl::OkStatus();
  absl::Status busy = absl::FailedPreconditionError(absl::StrCat(
      "GPU ", uuid, " (device ", device, ") is in use by another process: ",
      absl::StrJoin(others, ", "),
      "; shared-node mode (--gpu_sharing=shared) does not benchmark a tenant's GPU; retry when "
      "it is idle or set force to run anyway"));
  busy.SetPayload(kGpuBusyPayload, absl::Cord(uuid));
  return busy;
}

std::unique_ptr<ClockEventWatch> NvmlMonitor::WatchClockEvents(int device, std::string* why) const {
  if (nvml_ == nullptr) {
    *why = "NVML not loaded";
    return nullptr;
  }
  if (device < 0 || device >= static_cast<int>(uuids_.size())) {
    *why = "device unknown to NVML";
    return nullptr;
  }
  if (absl::Status s = nvml_->ClockEventReasons(uuids_[device]).status(); !s.ok()) {
    *why = std::string(s.message());
    return nullptr;
  }
  return std::make_unique<ClockEventWatch>(nvml_, uuids_[device]);
}

std::optional<std::string> NvmlMonitor::PeerPath(int device, int peer) const {
  if (nvml_ == nullptr) return "peer path: unknown (NVML not loaded)";
  if (device < 0 || peer < 0 || device >= static_cast<int>(uuids_.size()) ||
      peer >= static_cast<int>(uuids_.size())) {
    return std::nullopt;
  }
  absl::StatusOr<NvmlPeerLink> link = nvml_->PeerLink(uuids_[device], uuids_[peer]);
  if (absl::IsNotFound(link.status())) return std::nullopt;
  if (!link.ok()) return absl::StrCat("peer path: unknown (", link.status().message(), ")");
  if (link->nvlink) {
    return absl::StrCat("peer path: nvlink (NVML P2P status over NVLink ok; ",
                        link->active_nvlinks, " active NVLinks on device ", device, ")");
  }
  return absl::StrCat("peer path: pcie (NVML P2P status over NVLink: ", link->nvlink_status, ")");
}

}  // namespace gpubench
