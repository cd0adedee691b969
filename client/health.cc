#include "client/health.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace gpubench::client {

namespace {
std::string Name(v1::HealthVerdict v) {
  return v == v1::HEALTH_VERDICT_UNSPECIFIED ? "UNKNOWN" : v1::HealthVerdict_Name(v);
}
}  // namespace

int HealthExitCode(v1::HealthVerdict verdict) {
  switch (verdict) {
    case v1::PASS:
      return kHealthPass;
    case v1::DEGRADED:
    case v1::FAIL:
      return kHealthBad;
    default:
      return kHealthUnknown;
  }
}

std::string RenderHealth(const v1::GetHealthResponse& r) {
  int counts[5] = {0, 0, 0, 0, 0};
  for (const v1::GpuHealth& g : r.gpus())
    ++counts[g.verdict() >= 0 && g.verdict() < 5 ? g.verdict() : 4];
  std::string out =
      absl::StrCat(Name(r.verdict()), " ", r.node_name().empty() ? "(node)" : r.node_name(), ": ",
                   r.gpus_size(), " GPU(s)");
  for (v1::HealthVerdict v : {v1::FAIL, v1::DEGRADED, v1::UNKNOWN, v1::PASS}) {
    if (counts[v] > 0) absl::StrAppend(&out, ", ", counts[v], " ", Name(v));
  }
  if (!r.scheduled()) absl::StrAppend(&out, " (no --schedule_plan on this server)");
  absl::StrAppend(&out, "\n");
  for (const v1::GpuHealth& g : r.gpus()) {
    absl::StrAppend(&out, absl::StrFormat("gpu %d %s (%s) %s\n", g.device_index(), g.gpu_uuid(),
                                          g.gpu_model(), g.summary()));
    for (const v1::HealthEvidence& e : g.evidence()) {
      std::string since;
      if (e.has_since()) {
        since = absl::StrCat(" since ", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ",
                                                         absl::FromUnixSeconds(e.since().seconds()),
                                                         absl::UTCTimeZone()));
      }
      absl::StrAppend(&out, "  ", Name(e.verdict()), " ", e.expectation_kind(),
                      e.cause().empty() ? "" : absl::StrCat(" (", e.cause(), ")"), since, ": ",
                      e.detail(), "\n");
      if (!e.expectation_source().empty()) {
        absl::StrAppend(&out, "    expectation from ", e.expectation_source(), "\n");
      }
    }
  }
  return out;
}

}  // namespace gpubench::client
