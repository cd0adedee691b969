#include "server/engine/compare_user_kernel.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpubench {
namespace {

// The chain: one candidate at a time on the user kernel's device, then `done`.
class Comparison : public std::enable_shared_from_this<Comparison> {
 public:
  Comparison(Engine& engine, RunSpec user, absl::Time deadline, RunDoneFn done)
      : engine_(engine), user_(std::move(user)), deadline_(deadline), done_(std::move(done)) {
    const ComparisonCandidates c = CandidatesFor(*user_.kernel->family, user_.kernel->dtype);
    builtins_ = c.builtins.size();
    candidates_ = c.builtins;
    candidates_.insert(candidates_.end(), c.baselines.begin(), c.baselines.end());
  }

  void Start(RunResult result) {
    result_ = std::move(result);
    Next();
  }

 private:
  void Next() {
    while (next_ < candidates_.size()) {
      const KernelVariant* k = candidates_[next_++];
      if (absl::Now() >= deadline_) {
        Record(k, absl::DeadlineExceededError("the request's deadline passed before it ran"));
        continue;
      }
      RunRequest r;
      r.kernel = std::string(k->name);
      r.elements = user_.elements;
      r.shape = user_.shape;
      r.device_index = user_.device_index;
      r.cache_mode = user_.cache_mode;
      r.measurement = user_.measurement;
      r.force = user_.force;
      absl::StatusOr<RunSpec> spec = engine_.Resolve(r);
      if (!spec.ok()) {
        Record(k, spec.status());
        continue;
      }
      spec->verify_timed_samples = true;  // measured as the user kernel was
      // And where it was: in the device's user-kernel worker, right after the user kernel. The
      // same context (its heap and printf limits, what the user kernel left in device memory and
      // L2) and the same process's conditions make the ratios like with like; the catalog
      // worker's context stays one that no user code has touched.
      spec->user_context = true;
      JobCallbacks callbacks;
      callbacks.on_done = [self = shared_from_this(), k](absl::StatusOr<RunResult> measured) {
        if (absl::Status s = RunStatus(measured); !s.ok()) measured = s;
        self->Record(k, std::move(measured));
        self->Next();
      };
      absl::StatusOr<std::shared_ptr<Job>> job =
          engine_.Submit(*std::move(spec), deadline_, std::move(callbacks), nullptr,
                         /*continuation=*/true);
      if (job.ok()) return;  // on_done goes on
      Record(k, job.status());
    }
    Finish();
  }

  void Record(const KernelVariant* k, absl::StatusOr<RunResult> r) {
    measured_.emplace_back(k, std::move(r));
  }

  UserKernelComparison Compared(const std::string& role, const KernelVariant* k,
                                const RunResult& r) const {
    UserKernelComparison c;
    c.role = role;
    c.kernel = std::string(k->name);
    c.median_seconds = r.stats.median_seconds;
    c.metric = MetricName(r.metric);
    c.value = MetricValueOf(r);
    if (result_.stats.median_seconds > 0) {
      c.speedup = r.stats.median_seconds / result_.stats.median_seconds;
    }
    if (r.timed_sample_check.has_value() && !r.timed_sample_check->failure.empty()) {
      c.note = absl::StrCat("timed_launch_verified: ", r.timed_sample_check->failure);
    }
    return c;
  }

  void Finish() {
    UserKernelComparison best{.role = "best_builtin"};
    const RunResult* fastest = nullptr;
    const KernelVariant* fastest_kernel = nullptr;
    std::vector<std::string> failed;
    int measured_builtins = 0;
    for (size_t i = 0; i < measured_.size(); ++i) {
      const auto& [k, r] = measured_[i];
      if (!r.ok()) {
        failed.push_back(absl::StrCat(k->name, ": ", r.status().message()));
        continue;
      }
      if (i >= builtins_) continue;
      ++measured_builtins;
      if (fastest == nullptr || r->stats.median_seconds < fastest->stats.median_seconds) {
        fastest = &*r;
        fastest_kernel = k;
      }
    }
    if (fastest != nullptr) best = Compared("best_builtin", fastest_kernel, *fastest);
    best.candidates = measured_builtins;
    if (fastest == nullptr) best.note = "no built-in variant of the family and dtype was measured";
    UserKernelComparison vendor{.role = "vendor_baseline"};
    int measured_baselines = 0;
    for (size_t i = builtins_; i < measured_.size(); ++i) {
      if (!measured_[i].second.ok()) continue;
      if (measured_baselines++ == 0) {
        vendor = Compared("vendor_baseline", measured_[i].first, *measured_[i].second);
      }
    }
    if (vendor.kernel.empty()) {
      vendor.note = candidates_.size() == builtins_
                        ? "the family has no vendor baseline at this dtype"
                        : "the vendor baseline was not measured";
    }
    if (!failed.empty()) {
      const std::string why = absl::StrCat("not measured: ", absl::StrJoin(failed, "; "));
      best.note = best.note.empty() ? why : absl::StrCat(best.note, "; ", why);
    }
    if (result_.user_kernel.has_value()) {
      result_.user_kernel->comparisons = {best, vendor};
    }
    result_.notes.push_back(absl::StrCat(
        "compare: ", measured_builtins, " built-in variant(s) and ", measured_baselines,
        " vendor baseline(s) measured after the user kernel on device ", user_.device_index,
        " at the same size, mode and options, each as user kernels are (every timed sample one "
        "launch from poisoned outputs)"));
    RunDoneFn done = std::move(done_);
    done(std::move(result_));
  }

  Engine& engine_;
  const RunSpec user_;
  const absl::Time deadline_;
  RunDoneFn done_;
  RunResult result_;
  std::vector<const KernelVariant*> candidates_;  // built-ins, then baselines
  size_t builtins_ = 0;
  size_t next_ = 0;
  std::vector<std::pair<const KernelVariant*, absl::StatusOr<RunResult>>> measured_;
};

}  // namespace

ComparisonCandidates CandidatesFor(const KernelFamily& family, DType dtype) {
  ComparisonCandidates c;
  for (const KernelVariant& k : AllKernels()) {
    if (k.family != &family || k.dtype != dtype || absl::StartsWith(k.name, "test_")) continue;
    (absl::StartsWith(k.provenance, "baseline:") ? c.baselines : c.builtins).push_back(&k);
  }
  return c;
}

RunDoneFn ComparingUserKernel(Engine& engine, const RunSpec& user, absl::Time deadline,
                              RunDoneFn done) {
  return [&engine, user, deadline, done = std::move(done)](absl::StatusOr<RunResult> r) mutable {
    if (!r.ok()) {
      done(std::move(r));
      return;
    }
    auto chain = std::make_shared<Comparison>(engine, user, deadline, std::move(done));
    chain->Start(*std::move(r));
  };
}

}  // namespace gpubench
