#include "server/engine/run_result.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpubench {

void TallyWindow(int64_t sample, const std::optional<WindowActivity>& window, WindowAudit* audit) {
  if (!window.has_value()) {
    ++audit->unrecorded_windows;
    return;
  }
  for (WindowTally& t : audit->tallies) {
    if (t.operations == window->operations && t.kernels == window->kernels &&
        t.foreign_kernels == window->foreign_kernels) {
      ++t.windows;
      return;
    }
  }
  if (audit->tallies.size() < static_cast<size_t>(kMaxWindowTallies)) {
    audit->tallies.push_back({.operations = window->operations,
                              .kernels = window->kernels,
                              .foreign_kernels = window->foreign_kernels,
                              .windows = 1,
                              .first_sample = sample});
    return;
  }
  if (audit->other_windows++ == 0) audit->other_first_sample = sample;
}

double MetricValueOf(const RunResult& r) {
  switch (r.metric) {
    case Metric::kOperationsPerSecond:
      return r.operations_per_second;
    case Metric::kSecondsPerOperation:
      return r.seconds_per_operation;
    case Metric::kBytesPerSecond:
      break;
  }
  return r.bandwidth_bytes_per_second;
}

namespace {

std::string TimingMethodOf(const Backend& backend, const RunResult& result) {
  const bool cold = result.spec.cache_mode == CacheMode::kCold;
  if (result.profile_mode) {
    return absl::StrFormat(
        "profile mode (%s): each launch timed alone%s, no blocking kernel, no stopping rule",
        CacheModeName(result.spec.cache_mode), cold ? " after a cache flush" : "");
  }
  TimerStrategy timer = TimerStrategy::kBackendClock;
  if (result.timer == SampleTimer::kCuptiActivity) {
    timer = TimerStrategy::kActivityRecords;
  } else if (result.timer == SampleTimer::kGpuTimeDuration) {
    timer = TimerStrategy::kTimeCounter;
  }
  const bool blocking =
      result.spec.kernel == nullptr || result.spec.kernel->family->blocking_kernel;
  std::string method = backend.SampleMethod(cold, result.hot_batch_size, timer, blocking);
  if (backend.capabilities().flush_and_stream_choices) {
    // The two choices that change what a CUDA sample measures, always named.
    const MeasurementOptions& m = result.spec.measurement;
    absl::StrAppend(&method, cold ? absl::StrCat("; L2 flush: ",
                                                 L2FlushName(m.l2_flush.value_or(L2Flush::kClean)))
                                  : "",
                    "; stream: ", StreamKindName(m.stream.value_or(StreamKind::kNonBlocking)));
  }
  return method;
}

}  // namespace

std::string SampleMethodOf(const Backend& backend, const RunResult& result) {
  std::string method = TimingMethodOf(backend, result);
  // Nothing measures differently without saying so: where the buffers (so their placement) came
  // from.
  if (result.phases.buffers_reused) absl::StrAppend(&method, "; ", kBuffersReusedMethod);
  // How the outputs were checked (Verification::method), where they were.
  if (result.verification.has_value() && !result.verification->method.empty()) {
    absl::StrAppend(&method, "; verified: ", result.verification->method);
  }
  return method;
}

RunOutcome OutcomeOf(const RunResult& result) {
  if (!result.verification.has_value()) return RunOutcome::kUnverified;
  return result.verification->passed ? RunOutcome::kVerified : RunOutcome::kVerificationFailed;
}

const char* RunOutcomeName(RunOutcome outcome) {
  switch (outcome) {
    case RunOutcome::kVerified:
      return "verified";
    case RunOutcome::kUnverified:
      return "unverified";
    case RunOutcome::kVerificationFailed:
      return "VERIFY-FAILED";
  }
  return "unknown";
}

void CopyCeiling::Observe(const RunResult& result) {
  if (result.spec.kernel->family->copy_ceiling &&
      result.bytes_moved >= 4 * result.device.l2_cache_bytes) {
    bytes_per_second_ = result.bandwidth_bytes_per_second;
  }
}

void FinishRunResult(RunFinish finish, RunResult* result) {
  result->queued_at = finish.queued_at;
  if (finish.copy_ceiling != nullptr) {
    finish.copy_ceiling->Observe(*result);
    if (const double ceiling = finish.copy_ceiling->bytes_per_second(); ceiling > 0) {
      result->copy_ceiling_bytes_per_second = ceiling;
      result->percent_of_copy_ceiling = 100.0 * result->bandwidth_bytes_per_second / ceiling;
    }
  }
  if (finish.clock_event_reasons.ok()) {
    result->clock_event_reasons = *std::move(finish.clock_event_reasons);
  } else {
    result->clock_events_unavailable_reason =
        std::string(finish.clock_event_reasons.status().message());
  }
}

absl::Status VerificationStatus(const RunResult& r) {
  if (OutcomeOf(r) != RunOutcome::kVerificationFailed) return absl::OkStatus();
  const Verification& v = *r.verification;
  return absl::InternalError(absl::StrFormat(
      "verification failed for %s at %d elements on %s device %d (run %s): %d of %d elements "
      "outside |err| <= %g + %g*|ref|; first at index %d: expected %.9g, got %.9g%s; the timing "
      "is withheld because the kernel computed a wrong result",
      r.spec.kernel->name, r.spec.elements, r.backend, r.spec.device_index, r.run_id,
      v.mismatches, v.checked, v.atol, v.rtol, v.first_mismatch_index, v.first_mismatch_expected,
      v.first_mismatch_actual, v.method.empty() ? "" : absl::StrCat(" (checked: ", v.method, ")")));
}

absl::Status RunStatus(const absl::StatusOr<RunResult>& result) {
  return result.ok() ? VerificationStatus(*result) : result.status();
}

}  // namespace gpubench
