#include "client/compare.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/sizes.h"

namespace gpubench::client {
namespace {

// Provenance of the library baselines in the catalog ("baseline: CUB ...", "baseline: CUDA
// runtime ...").
bool IsBaseline(const v1::KernelInfo& k) { return absl::StartsWith(k.provenance(), "baseline"); }

bool Contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

const char* ModeName(v1::CacheMode mode) { return mode == v1::HOT ? "hot" : "cold"; }

std::string Launch(const v1::ResolvedRun& r) {
  if (r.grid_size() == 0) return "library";
  return absl::StrCat(r.block_size(), "x", r.items_per_thread());
}

std::string Ratio(double value) { return value > 0 ? absl::StrFormat("%.2fx", value) : "-"; }

std::string KernelWithLabel(const std::string& kernel) {
  const std::string label = SeedLabel(kernel);
  return label.empty() ? kernel : absl::StrCat(kernel, " (", label, ")");
}

}  // namespace

SweepOutcome CollectSweep(v1::Benchmark::Stub& stub, const v1::RunSweepRequest& request,
                          const std::function<void(grpc::ClientContext*)>& prepare_context,
                          bool progress,
                          const std::function<void(const v1::RunSweepResponse&)>& on_item) {
  SweepOutcome out;
  grpc::ClientContext context;
  prepare_context(&context);
  std::unique_ptr<grpc::ClientReader<v1::RunSweepResponse>> reader =
      stub.RunSweep(&context, request);
  v1::RunSweepResponse event;
  while (reader->Read(&event)) {
    if (event.has_progress() && progress) {
      const auto& p = event.progress();
      std::cerr << "[" << p.index() << "/" << p.total() << "] device " << p.device_index() << " "
                << p.kernel() << " " << FormatElementCount(p.elements()) << ": "
                << (p.state() == v1::SweepProgress::QUEUED
                        ? absl::StrCat("queued (", p.queue_position(), " ahead)")
                        : std::string("running"))
                << "\n";
    } else if (event.has_result()) {
      if (on_item) on_item(event);
      out.results.push_back(event.result());
      if (progress) {
        // Named like its progress lines: with --all_devices several items finish at once.
        const v1::ResolvedRun& q = event.result().request();
        std::cerr << "  done: device " << q.device_index() << " " << q.kernel() << " "
                  << FormatElementCount(q.elements()) << ": "
                  << FormatBytesPerSecond(event.result().throughput().bandwidth_bytes_per_second())
                  << "\n";
      }
    } else if (event.has_error()) {
      if (on_item) on_item(event);
      out.errors.push_back(event.error());
      if (progress) {
        std::cerr << "  error (device " << event.error().device_index() << "): "
                  << event.error().message() << "\n";
      }
    }
  }
  out.status = reader->Finish();
  return out;
}

bool IsAddDtype(const std::string& dtype) {
  return dtype == "f32" || dtype == "f16" || dtype == "bf16";
}

std::string SeedLabel(const std::string& kernel) {
  static const std::map<std::string, std::string> kLabels = {
      {"add_f32", "V1"},   {"add_f32x4", "V2"}, {"add_f16", "V3"},
      {"add_f16x2", "V4"}, {"add_f16x8", "V5"}, {"add_f16x8_pack", "V6"}};
  auto it = kLabels.find(kernel);
  return it == kLabels.end() ? "" : it->second;
}

std::vector<std::string> CompareKernels(const v1::ListKernelsResponse& kernels,
                                        const std::vector<std::string>& dtypes) {
  std::vector<std::string> out;
  for (const v1::KernelInfo& k : kernels.kernels()) {
    if (!k.available()) continue;
    const bool add = k.family() == "elementwise_add" && Contains(dtypes, k.dtype());
    if (add || k.family() == "copy") out.push_back(k.name());
  }
  return out;
}

std::vector<std::string> BestCandidates(const v1::ListKernelsResponse& kernels,
                                        const std::string& dtype) {
  std::vector<std::string> out;
  for (const v1::KernelInfo& k : kernels.kernels()) {
    if (k.available() && k.family() == "elementwise_add" && k.dtype() == dtype &&
        !IsBaseline(k)) {
      out.push_back(k.name());
    }
  }
  return out;
}

int FastestResult(const std::vector<v1::RunResult>& results) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(results.size()); ++i) {
    const v1::RunResult& r = results[i];
    if (r.verification().requested() && !r.verification().passed()) continue;
    if (best < 0 || r.timing().median_seconds() < results[best].timing().median_seconds()) best = i;
  }
  return best;
}

std::string RenderCompare(const std::vector<v1::RunResult>& results,
                          const std::vector<v1::SweepItemError>& errors, Format format) {
  if (format == Format::kJson) return RenderResults(results, errors, format);
  // (mode, elements) groups in first-appearance order; the scalar seed and the copy of each.
  std::vector<std::pair<v1::CacheMode, int64_t>> groups;
  std::map<std::pair<int, int64_t>, std::map<std::string, double>> seconds;  // group -> kernel
  std::map<std::pair<int, int64_t>, double> copy_bandwidth;
  for (const v1::RunResult& r : results) {
    const auto key = std::make_pair(static_cast<int>(r.request().cache_mode()), r.request().elements());
    if (seconds.find(key) == seconds.end()) groups.emplace_back(r.request().cache_mode(), key.second);
    seconds[key][r.request().kernel()] = r.timing().median_seconds();
    if (r.request().kernel() == "copy_d2d") {
      copy_bandwidth[key] = r.throughput().bandwidth_bytes_per_second();
    }
  }
  const auto row_values = [&](const v1::RunResult& r) {
    const auto key = std::make_pair(static_cast<int>(r.request().cache_mode()), r.request().elements());
    const auto& group = seconds[key];
    double vs_seed = 0, of_copy = 0;
    if (auto it = group.find("add_" + r.request().dtype()); it != group.end() &&
        r.request().kernel() != "copy_d2d" && r.timing().median_seconds() > 0) {
      vs_seed = it->second / r.timing().median_seconds();
    }
    if (auto it = copy_bandwidth.find(key); it != copy_bandwidth.end() && it->second > 0) {
      of_copy = 100 * r.throughput().bandwidth_bytes_per_second() / it->second;
    }
    return std::make_pair(vs_seed, of_copy);
  };
  std::ostringstream out;
  if (format == Format::kCsv) {
    out << "mode,elements,kernel,seed_label,dtype,launch,median_seconds,bandwidth_bytes_per_second,"
           "speedup_vs_scalar_seed,percent_of_copy,verified\n";
    for (const v1::RunResult& r : results) {
      const auto [vs_seed, of_copy] = row_values(r);
      out << absl::StrFormat("%s,%d,%s,%s,%s,%s,%.9g,%.6g,%s,%s,%s\n",
                             ModeName(r.request().cache_mode()), r.request().elements(),
                             r.request().kernel(), SeedLabel(r.request().kernel()),
                             r.request().dtype(), Launch(r.request()), r.timing().median_seconds(),
                             r.throughput().bandwidth_bytes_per_second(),
                             vs_seed > 0 ? absl::StrFormat("%.4f", vs_seed) : "",
                             of_copy > 0 ? absl::StrFormat("%.2f", of_copy) : "",
                             r.verification().passed() ? "pass" : "fail");
    }
  } else {
    for (const auto& [mode, elements] : groups) {
      out << absl::StrFormat("== %s elements (%d), %s ==\n", FormatElementCount(elements), elements,
                             ModeName(mode));
      out << absl::StrFormat("%-28s %-5s %-8s %12s %12s %8s %8s\n", "kernel", "dtype", "launch",
                             "time", "bandwidth", "vs seed", "of copy");
      for (const v1::RunResult& r : results) {
        if (r.request().cache_mode() != mode || r.request().elements() != elements) continue;
        const auto [vs_seed, of_copy] = row_values(r);
        out << absl::StrFormat(
            "%-28s %-5s %-8s %12s %12s %8s %8s%s\n", KernelWithLabel(r.request().kernel()),
            r.request().dtype(), Launch(r.request()), FormatSeconds(r.timing().median_seconds()),
            FormatBytesPerSecond(r.throughput().bandwidth_bytes_per_second()), Ratio(vs_seed),
            of_copy > 0 ? absl::StrFormat("%.1f%%", of_copy) : "-",
            r.verification().requested() && !r.verification().passed() ? "  VERIFY FAILED" : "");
      }
      out << "\n";
    }
    out << "vs seed: the scalar seed kernel's time over this one's (add_f32 = V1 for f32, add_f16 "
           "= V3 for f16, add_bf16 for bf16), same size and mode.\nof copy: bandwidth as a "
           "percentage of copy_d2d's (cudaMemcpy device to device, the practical ceiling), same "
           "size and mode.\n";
  }
  for (const v1::SweepItemError& e : errors) {
    out << absl::StrFormat("error: %s at %d elements: %s\n", e.kernel(), e.elements(), e.message());
  }
  return out.str();
}

std::string RenderBest(const std::vector<v1::RunResult>& results,
                       const std::vector<v1::SweepItemError>& errors, Format format) {
  const int best = FastestResult(results);
  std::vector<const v1::RunResult*> order;
  for (const v1::RunResult& r : results) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const v1::RunResult* x, const v1::RunResult* y) {
    return x->timing().median_seconds() < y->timing().median_seconds();
  });
  if (format == Format::kJson) {
    return best < 0 ? std::string("{}\n") : ToJson(results[best]);
  }
  std::ostringstream out;
  if (format == Format::kCsv) {
    out << "rank,kernel,dtype,elements,mode,launch,median_seconds,bandwidth_bytes_per_second,"
           "ratio_to_best,verified\n";
    int rank = 0;
    for (const v1::RunResult* r : order) {
      out << absl::StrFormat("%d,%s,%s,%d,%s,%s,%.9g,%.6g,%.4f,%s\n", ++rank, r->request().kernel(),
                             r->request().dtype(), r->request().elements(),
                             ModeName(r->request().cache_mode()), Launch(r->request()),
                             r->timing().median_seconds(),
                             r->throughput().bandwidth_bytes_per_second(),
                             best < 0 ? 0.0
                                      : r->timing().median_seconds() /
                                            results[best].timing().median_seconds(),
                             r->verification().passed() ? "pass" : "fail");
    }
    return out.str();
  }
  if (best < 0) {
    out << "best: no candidate ran and verified\n";
  } else {
    const v1::RunResult& w = results[best];
    out << absl::StrFormat("best: %s  %s  %s  (launch %s, %s; %s %s elements, %s, device %d %s)\n",
                           w.request().kernel(), FormatSeconds(w.timing().median_seconds()),
                           FormatBytesPerSecond(w.throughput().bandwidth_bytes_per_second()),
                           Launch(w.request()), w.request().block_size_source(),
                           w.request().dtype(), FormatElementCount(w.request().elements()),
                           ModeName(w.request().cache_mode()), w.request().device_index(),
                           w.device().name());
    out << absl::StrFormat("chosen by measurement: the lowest median of %d verified candidates, "
                           "each measured just now at this size and mode on this device, each at "
                           "the launch the server would use (tuned if Autotune applied one, else "
                           "the catalog's)\n\n",
                           static_cast<int>(std::count_if(
                               results.begin(), results.end(), [](const v1::RunResult& r) {
                                 return !r.verification().requested() || r.verification().passed();
                               })));
    out << absl::StrFormat("%-22s %-8s %12s %12s %10s\n", "candidate", "launch", "time",
                           "bandwidth", "vs best");
    for (const v1::RunResult* r : order) {
      out << absl::StrFormat(
          "%-22s %-8s %12s %12s %9.3fx%s\n", r->request().kernel(), Launch(r->request()),
          FormatSeconds(r->timing().median_seconds()),
          FormatBytesPerSecond(r->throughput().bandwidth_bytes_per_second()),
          r->timing().median_seconds() / w.timing().median_seconds(),
          r->verification().requested() && !r->verification().passed() ? "  VERIFY FAILED" : "");
    }
  }
  for (const v1::SweepItemError& e : errors) {
    out << absl::StrFormat("skipped: %s: %s\n", e.kernel(), e.message());
  }
  return out.str();
}

}  // namespace gpubench::client
