// A scripted Backend for engine tests: sample times, clocks and blocking are under test control,
// while data and verification go through the real CPU kernels.
#ifndef GPUBENCH_TESTS_ENGINE_FAKE_BACKEND_H_
#define GPUBENCH_TESTS_ENGINE_FAKE_BACKEND_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

#include "kernels/backend.h"
#include "kernels/cpu_backend.h"
#include "kernels/reference.h"

namespace gpubench::testing {

struct FakeScript {
  std::function<double(int sample)> seconds = [](int) { return 1e-3; };
  std::function<std::optional<double>(int sample)> clock_hz = [](int) {
    return std::optional<double>();
  };
  double default_clock_hz = 0;
  // When set, every sample waits until `release` is true (to hold a worker busy).
  std::atomic<bool>* release = nullptr;
  std::atomic<int>* samples_taken = nullptr;
  bool corrupt_output = false;
  std::optional<absl::Status> sample_error{};  // returned by every sample when set
  // Blocked samples (cold / hot) fail as if a serializing profiler held the blocking kernel;
  // unblocked (profile-mode) samples still work.
  bool blocking_timeout = false;
  std::atomic<int>* unblocked_samples = nullptr;  // counts samples under TimerStrategy::kUnblocked
  std::vector<std::string>* ranges = nullptr;     // PushRange names, in order
  // Kernel durations (TimerStrategy kActivityRecords, kTimeCounter): unset, the fake cannot
  // record them; set, the duration of sample i per launch (nullopt: no record came back for it).
  std::function<std::optional<double>(int sample)> kernel_seconds{};
  // Session::AuditWindows: unset, the fake records no window; set, what sample i's window held
  // (nullopt: no complete record came back for it).
  std::function<std::optional<WindowActivity>(int sample)> windows{};
  // With windows set: which samples are traced only for the audit (the CUDA-event timer's
  // choice, SampleRecord::audit_only); unset, every sample is audited and none audit-only.
  std::function<bool(int sample)> audit_only{};
  std::atomic<int>* kernel_duration_starts = nullptr;  // counts SetTimer calls choosing them
  std::optional<TimerStrategy>* kernel_duration_source = nullptr;  // the last one chosen
  std::vector<int64_t>* opened_placement_pads = nullptr;  // HostData's pad, at every Open
  int64_t free_memory_bytes = int64_t{1} << 30;
  int devices = 1;
  int compute_capability = 0;                   // major x 10 + minor; 0 = not a CUDA device
  int multiprocessor_count = 0;                 // 0 = unknown
  int max_threads_per_multiprocessor = 0;
  int64_t shared_memory_per_block_optin_bytes = 0;  // 0 = unknown
  // Session::VerifyOnDevice emulated on the host (the CPU session's read-back, checked with the
  // host reference as a device check would, then reported the device's way), so the engine's
  // device-verification path runs without a GPU. corrupt_output applies to it too.
  bool verify_on_device = false;
  // Buffer reuse: counts Backend::ReleaseCachedBuffers calls. The buffers the fake's CPU sessions
  // keep (Session::KeepBuffers) come out of free_memory_bytes while kept, as a GPU's would.
  std::atomic<int>* buffer_releases = nullptr;
};

class FakeSession final : public Session {
 public:
  FakeSession(std::unique_ptr<Session> real, const FakeScript& script, const KernelVariant& variant,
              const HostData& data, std::atomic<int64_t>* kept_bytes)
      : real_(std::move(real)),
        script_(script),
        variant_(variant),
        data_(data),
        kept_bytes_(kept_bytes) {}
  ~FakeSession() override {
    real_.reset();
    if (!keep_) return;
    int64_t bytes = 0;
    for (size_t i = 0; i < variant_.family->buffers.size(); ++i) {
      bytes += BufferBytes(variant_, data_.shape, static_cast<int>(i));
    }
    *kept_bytes_ = bytes;
  }
  bool BuffersReused() const override { return real_->BuffersReused(); }
  bool KeepBuffers() override {
    keep_ = real_->KeepBuffers();
    return keep_;
  }
  const LaunchGeometry& geometry() const override { return real_->geometry(); }
  absl::Status Warmup(int) override { return absl::OkStatus(); }
  absl::Status SetTimer(TimerStrategy strategy) override {
    if (strategy == TimerStrategy::kActivityRecords || strategy == TimerStrategy::kTimeCounter) {
      if (!script_.kernel_seconds) return Session::SetTimer(strategy);
      if (script_.kernel_duration_starts != nullptr) ++*script_.kernel_duration_starts;
      if (script_.kernel_duration_source != nullptr) *script_.kernel_duration_source = strategy;
    }
    timer_ = strategy;
    audit_ = false;
    return absl::OkStatus();
  }
  absl::StatusOr<WindowSource> AuditWindows() override {
    if (!script_.windows) return Session::AuditWindows();
    if (timer_ == TimerStrategy::kUnblocked) {
      return absl::FailedPreconditionError("profile launches (fake)");
    }
    audit_ = true;
    return timer_ == TimerStrategy::kTimeCounter ? WindowSource::kRangeProfiler
                                                 : WindowSource::kActivityRecords;
  }
  absl::StatusOr<SampleRecord> ColdSample() override {
    if (script_.sample_error) return *script_.sample_error;
    if (timer_ == TimerStrategy::kUnblocked) return Unblocked();
    if (script_.blocking_timeout) return BlockingTimeout();
    return Record(Next(), 1);
  }
  absl::StatusOr<SampleRecord> HotSample(int batch) override {
    if (timer_ == TimerStrategy::kUnblocked) return Unblocked();
    if (script_.blocking_timeout) return BlockingTimeout();
    return Record(Next() * batch, batch);
  }
  void PushRange(const std::string& name) override {
    if (script_.ranges != nullptr) script_.ranges->push_back(name);
  }
  absl::Status RunOnceAndRead(BufferContents* out) override {
    absl::Status s = real_->RunOnceAndRead(out);
    if (script_.corrupt_output) {  // the first element of the first output read back
      for (std::vector<std::byte>& buffer : *out) {
        if (buffer.empty()) continue;
        buffer[0] ^= std::byte{0x40};
        break;
      }
    }
    return s;
  }
  bool CanVerifyOnDevice() const override { return script_.verify_on_device; }
  absl::StatusOr<DeviceVerifyReport> VerifyOnDevice(const SampleIndices& samples) override {
    if (!script_.verify_on_device) return Session::VerifyOnDevice(samples);
    BufferContents out;
    if (absl::Status s = RunOnceAndRead(&out); !s.ok()) return s;
    ParallelPool pool(1);
    const Verification v = Verify(variant_, data_, out, &pool);
    DeviceVerifyReport report;
    report.checked = v.checked;
    report.mismatches = v.mismatches;
    report.max_abs_error = v.max_abs_error;
    report.max_rel_error = v.max_rel_error;
    const KernelFamily& family = *variant_.family;
    for (const MismatchedElement& m : v.first_mismatches) {
      int buffer = 0;
      while (family.buffers[buffer].name != m.buffer) ++buffer;
      report.first_mismatches.push_back({buffer, m.index, m.expected, m.actual});
    }
    report.sampled.resize(out.size());
    report.chunk_hashes.resize(out.size());
    report.hashed_bytes.assign(out.size(), 0);
    for (size_t b = 0; b < out.size(); ++b) {
      if (!IsVerified(family.buffers[b])) continue;
      const size_t size = DTypeSize(BufferDType(family.buffers[b], variant_.dtype));
      for (int64_t i : samples[b]) {
        const std::byte* at = out[b].data() + static_cast<size_t>(i) * size;
        report.sampled[b].insert(report.sampled[b].end(), at, at + size);
      }
      report.chunk_hashes[b] =
          OutputChunkHashes(out[b].data(), static_cast<int64_t>(out[b].size()), nullptr);
      report.hashed_bytes[b] = static_cast<int64_t>(out[b].size());
    }
    return report;
  }
  std::string LaunchReport() const override { return real_->LaunchReport(); }
  KernelResources Resources() const override { return real_->Resources(); }
  AchievedCounters ProfileCounters() override { return real_->ProfileCounters(); }

 private:
  static absl::Status BlockingTimeout() {
    absl::Status s = absl::UnavailableError("the blocking kernel timed out (fake)");
    s.SetPayload(kBlockingTimeoutPayload, absl::Cord("1"));
    return s;
  }
  // Unblocked (profile mode): no clock, no blocking kernel to time out.
  absl::StatusOr<SampleRecord> Unblocked() {
    if (script_.unblocked_samples != nullptr) ++*script_.unblocked_samples;
    return SampleRecord::Of(Next());
  }
  // The sample just taken (sample_ - 1) as the chosen timer records it.
  absl::StatusOr<SampleRecord> Record(double seconds, int batch) {
    SampleRecord record = SampleRecord::Of(seconds);
    record.clock_hz = script_.clock_hz(sample_ - 1);
    if (audit_) {
      // As the CUDA-event timer does: with a choice, only the chosen samples are recorded.
      record.audit_only = script_.audit_only && script_.audit_only(sample_ - 1);
      record.audited = !script_.audit_only || record.audit_only;
      if (record.audited) record.window = script_.windows(sample_ - 1);
    }
    if (timer_ == TimerStrategy::kActivityRecords || timer_ == TimerStrategy::kTimeCounter) {
      std::optional<double> d = script_.kernel_seconds(sample_ - 1);
      if (!d.has_value()) {
        return absl::UnavailableError(timer_ == TimerStrategy::kTimeCounter
                                          ? "the profiler measured no kernel"
                                          : "CUPTI returned no complete activity record");
      }
      record.event_seconds = seconds;
      record.seconds = *d * batch;
    }
    return record;
  }
  double Next() {
    if (script_.release != nullptr) {
      while (!script_.release->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (script_.samples_taken != nullptr) ++*script_.samples_taken;
    return script_.seconds(sample_++);
  }
  std::unique_ptr<Session> real_;
  const FakeScript& script_;
  const KernelVariant& variant_;
  const HostData& data_;
  std::atomic<int64_t>* const kept_bytes_;
  bool keep_ = false;
  int sample_ = 0;
  TimerStrategy timer_ = TimerStrategy::kBackendClock;
  bool audit_ = false;
};

class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(FakeScript script)
      : script_(std::move(script)), cpu_(MakeCpuBackend({.devices = script_.devices, .threads_per_device = 1})) {}
  // Separate device memory and no counter profiler, as on a GPU; its own timing words.
  BackendKind kind() const override { return BackendKind::kCuda; }
  BackendCapabilities capabilities() const override {
    BackendCapabilities can;
    can.kernel_durations = true;
    can.placement_pads = true;
    can.placement_copies = true;
    can.flush_and_stream_choices = true;
    can.hardware_counters = true;
    return can;
  }
  std::string SampleMethod(bool cold, int /*hot_batch_size*/, TimerStrategy timer,
                           bool blocking) const override {
    return absl::StrCat(cold ? "fake cold sample" : "fake hot sample",
                        timer == TimerStrategy::kActivityRecords ? " (kernel durations)"
                        : timer == TimerStrategy::kTimeCounter   ? " (time counter)"
                                                                 : "",
                        blocking ? "" : " (no blocking kernel)");
  }
  int device_count() const override { return script_.devices; }
  absl::StatusOr<DeviceInfo> Describe(int device) const override {
    DeviceInfo d;
    d.index = device;
    d.backend = "fake";
    d.max_threads_per_block = 1024;
    d.sm_clock_hz = script_.default_clock_hz;
    d.peak_bandwidth_bytes_per_second = 1e12;
    d.free_memory_bytes = script_.free_memory_bytes - kept_bytes_.load();
    d.multiprocessor_count = script_.multiprocessor_count;
    d.max_threads_per_multiprocessor = script_.max_threads_per_multiprocessor;
    d.compute_capability_major = script_.compute_capability / 10;
    d.compute_capability_minor = script_.compute_capability % 10;
    d.shared_memory_per_block_optin_bytes = script_.shared_memory_per_block_optin_bytes;
    return d;
  }
  absl::StatusOr<std::unique_ptr<Session>> Open(const DeviceInfo& device,
                                                const KernelVariant& variant,
                                                const LaunchGeometry& geometry,
                                                const HostData& data) override {
    if (script_.opened_placement_pads != nullptr) {
      script_.opened_placement_pads->push_back(data.placement_pad_bytes);
    }
    kept_bytes_ = 0;  // the CPU backend's Open took the kept buffers, or freed them
    auto real = cpu_->Open(device.index, variant, geometry, data);
    if (!real.ok()) return real.status();
    return std::unique_ptr<Session>(
        new FakeSession(*std::move(real), script_, variant, data, &kept_bytes_));
  }
  void ReleaseCachedBuffers(int device) override {
    if (script_.buffer_releases != nullptr) ++*script_.buffer_releases;
    cpu_->ReleaseCachedBuffers(device);
    kept_bytes_ = 0;
  }
  FakeScript& script() { return script_; }
  int64_t kept_bytes() const { return kept_bytes_.load(); }

 private:
  FakeScript script_;
  std::unique_ptr<Backend> cpu_;
  std::atomic<int64_t> kept_bytes_{0};  // what the CPU sessions kept (one device's worth)
};

}  // namespace gpubench::testing

#endif  // GPUBENCH_TESTS_ENGINE_FAKE_BACKEND_H_
