// gpubench results in nvbench's JSON schema (the json_printer's file version 1.0.0), so tools that
// read nvbench output (nvbench_compare.py and the like) read gpubench results.
//
// Mapping: one nvbench benchmark per kernel; one state per (device, elements, block size, items
// per thread), named like nvbench's "Device=0 Elements=16777216 BlockSize=256 ItemsPerThread=4"
// with the matching axes. A cold result fills the state's nv/cold/* summaries (sample size, GPU
// mean/min/max/median/q1/q3/IQR/stddev/noise, element and byte rates, utilization, walltime); a
// hot result fills nv/batch/* (sample size in launches, mean batch GPU time, walltime). Both land
// in one state when a sweep measured both. gpubench-only facts are extra summaries under
// gpubench/* tags, which nvbench tools ignore.
#ifndef GPUBENCH_CLIENT_NVBENCH_JSON_H_
#define GPUBENCH_CLIENT_NVBENCH_JSON_H_

#include <string>
#include <vector>

#include "gpubench/v1/benchmark.pb.h"

namespace gpubench::client {

// `argv` goes to meta.argv. The text ends with a newline.
std::string RenderNvbenchJson(const std::vector<v1::RunResult>& results,
                              const std::vector<std::string>& argv);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_NVBENCH_JSON_H_
