// A one- or two-line verdict on a run, in the spirit of the occupancy seed's conclusions: what
// limits occupancy, and whether occupancy matters for this run.
#ifndef GPUBENCH_SERVER_ENGINE_EXPLAIN_H_
#define GPUBENCH_SERVER_ENGINE_EXPLAIN_H_

#include <optional>
#include <string>

#include "server/engine/occupancy.h"

namespace gpubench {

struct ExplainInputs {
  std::optional<OccupancyReport> occupancy;     // absent on the CPU backend / library launches
  std::optional<double> achieved_occupancy;     // 0..1, from hardware counters
  std::optional<double> percent_of_peak;        // bandwidth, % of theoretical peak
  double median_seconds = 0;
  double waves = 0;
};

// Pure function; thread-safe.
std::string Explain(const ExplainInputs& in);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_ENGINE_EXPLAIN_H_
