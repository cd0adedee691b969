// The CLI's renderers (client/output.h): the results table, CSV and JSON, the kernel and device
// listings, the detailed view of one run and the text histogram.
#include "client/output.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace gpubench::client {
namespace {

using Json = nlohmann::json;

v1::RunResult Result(const std::string& kernel, int64_t elements, double median_seconds) {
  v1::RunResult r;
  r.set_run_id("run-" + kernel);
  r.set_backend("cpu");
  auto* q = r.mutable_request();
  q->set_kernel(kernel);
  q->set_dtype("f32");
  q->set_elements(elements);
  q->set_device_index(1);
  q->set_block_size(256);
  q->set_items_per_thread(4);
  q->set_grid_size(64);
  q->set_cache_mode(v1::COLD);
  q->set_min_samples(10);
  auto* t = r.mutable_timing();
  t->set_samples(12);
  t->set_median_seconds(median_seconds);
  t->set_mean_seconds(median_seconds * 1.01);
  t->set_min_seconds(median_seconds * 0.9);
  t->set_max_seconds(median_seconds * 1.5);
  t->set_relative_noise(0.0042);
  t->set_noise_known(true);
  r.mutable_throughput()->set_bytes_moved(elements * 12);
  r.mutable_throughput()->set_bandwidth_bytes_per_second(elements * 12 / median_seconds);
  r.mutable_verification()->set_requested(true);
  r.mutable_verification()->set_passed(true);
  r.mutable_occupancy()->set_unavailable_reason("not applicable on the cpu backend");
  r.mutable_device()->set_name("Test CPU");
  return r;
}

// Runs of spaces as one (table cells are padded to their column's width).
std::string Squeeze(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  }
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// RFC 4180 fields of one CSV line (quoted fields may hold commas and doubled quotes).
std::vector<std::string> CsvFields(absl::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

// The value of `column` in each data row of a CSV text.
std::vector<std::string> CsvColumn(const std::string& csv, const std::string& column) {
  const std::vector<std::string> lines = Lines(csv);
  const std::vector<std::string> header = CsvFields(lines.at(0));
  const auto at = std::find(header.begin(), header.end(), column);
  EXPECT_NE(at, header.end()) << column;
  std::vector<std::string> values;
  for (size_t i = 1; i < lines.size(); ++i) {
    values.push_back(CsvFields(lines[i]).at(at - header.begin()));
  }
  return values;
}

TEST(RenderResults, TableColumnsLineUpAndSayWhatIsUnknown) {
  v1::RunResult cold = Result("add_f32", 1 << 20, 2e-4);
  v1::RunResult library = Result("cub_add_f32", 1 << 24, 3e-3);
  library.mutable_request()->set_grid_size(0);  // the library picks its own launch
  library.mutable_request()->set_cache_mode(v1::HOT);
  library.mutable_throughput()->set_percent_of_peak_bandwidth(87.25);
  library.mutable_verification()->set_passed(false);
  v1::RunResult unverified = Result("add_f16", 1000, 1e-6);
  unverified.mutable_verification()->set_requested(false);
  unverified.mutable_timing()->set_noise_known(false);
  unverified.mutable_timing()->set_samples(1);
  unverified.mutable_occupancy()->set_limiter("warps");
  unverified.mutable_occupancy()->set_theoretical_occupancy(0.5);

  const std::string table = RenderResults({cold, library, unverified}, {}, Format::kTable);
  const std::vector<std::string> lines = Lines(table);
  ASSERT_EQ(lines.size(), 4u) << table;
  EXPECT_TRUE(absl::StartsWith(lines[0], "device  kernel")) << lines[0];
  // Every column starts where its header does.
  for (const char* column : {"kernel", "elements", "median", "verified", "occupancy"}) {
    const size_t at = lines[0].find(column);
    for (size_t i = 1; i < lines.size(); ++i) {
      ASSERT_GT(lines[i].size(), at) << column << "\n" << table;
      EXPECT_NE(lines[i][at], ' ') << column << " in row " << i << "\n" << table;
      EXPECT_EQ(lines[i][at - 1], ' ') << column << " in row " << i << "\n" << table;
    }
  }
  EXPECT_EQ(Squeeze(lines[1]).rfind("1 add_f32 f32 1Mi 256 4 cold 12 ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("1Mi"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("cold"), std::string::npos);
  EXPECT_NE(lines[1].find("0.42%"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(" pass "), std::string::npos) << lines[1];
  EXPECT_TRUE(absl::EndsWith(lines[1], "n/a")) << "no occupancy on the CPU: " << lines[1];
  // A library launch says so in block and items; percent of peak when known; FAIL.
  EXPECT_NE(Squeeze(lines[2]).find(" library library hot "), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("87.2"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find(" FAIL "), std::string::npos) << lines[2];
  // Unknown noise is never 0%; verification off is "skipped"; occupancy when computed.
  EXPECT_NE(lines[3].find("n/a (1 sample)"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find(" skipped "), std::string::npos) << lines[3];
  EXPECT_TRUE(absl::EndsWith(lines[3], "50%")) << lines[3];
  EXPECT_EQ(table.find("0.00%"), std::string::npos) << table;
}

TEST(RenderResults, SweepErrorsAreRowsAndLines) {
  v1::SweepItemError error;
  error.set_index(2);
  error.set_kernel("add_f33");
  error.set_elements(4096);
  error.set_block_size(128);
  error.set_items_per_thread(1);
  error.set_device_index(0);
  error.set_message("unknown kernel 'add_f33', did you mean \"add_f32\"");
  const std::string table =
      RenderResults({Result("add_f32", 4096, 1e-5)}, {error}, Format::kTable);
  const std::vector<std::string> lines = Lines(table);
  ASSERT_EQ(lines.size(), 4u) << table;
  EXPECT_NE(lines[2].find("add_f33"), std::string::npos);
  EXPECT_NE(lines[2].find("ERROR"), std::string::npos);
  EXPECT_EQ(lines[3], "error in item 2: " + error.message());

  const std::string csv = RenderResults({Result("add_f32", 4096, 1e-5)}, {error}, Format::kCsv);
  EXPECT_EQ(CsvColumn(csv, "error"),
            (std::vector<std::string>{"", error.message()}));  // quoted: it holds , and "
  EXPECT_EQ(CsvColumn(csv, "kernel"), (std::vector<std::string>{"add_f32", "add_f33"}));
  EXPECT_EQ(CsvColumn(csv, "block_size"), (std::vector<std::string>{"256", "128"}));
}

TEST(RenderResults, CsvHasOneHeaderAndFieldsInEveryRow) {
  v1::RunResult library = Result("cub_add_f32", 1 << 24, 3e-3);
  library.mutable_request()->set_grid_size(0);
  library.mutable_timing()->set_noise_known(false);
  library.mutable_throughput()->set_percent_of_peak_bandwidth(90.5);
  const std::string csv =
      RenderResults({Result("add_f32", 1 << 20, 2e-4), library}, {}, Format::kCsv);
  const std::vector<std::string> lines = Lines(csv);
  ASSERT_EQ(lines.size(), 3u) << csv;
  EXPECT_EQ(lines[0],
            "kernel,dtype,elements,block_size,items_per_thread,grid_size,cache_mode,samples,"
            "median_seconds,mean_seconds,relative_noise,bandwidth_bytes_per_second,"
            "percent_of_peak,verified,backend,device,run_id,error");
  for (const std::string& line : lines) EXPECT_EQ(CsvFields(line).size(), 18u) << line;
  // Machine-readable: plain numbers, blank where unknown or chosen by a library.
  EXPECT_EQ(CsvColumn(csv, "elements"), (std::vector<std::string>{"1048576", "16777216"}));
  EXPECT_EQ(CsvColumn(csv, "block_size"), (std::vector<std::string>{"256", ""}));
  EXPECT_EQ(CsvColumn(csv, "grid_size"), (std::vector<std::string>{"64", ""}));
  EXPECT_EQ(CsvColumn(csv, "relative_noise"), (std::vector<std::string>{"0.0042", ""}));
  EXPECT_EQ(CsvColumn(csv, "percent_of_peak"), (std::vector<std::string>{"", "90.5"}));
  EXPECT_EQ(CsvColumn(csv, "median_seconds")[0], "0.0002");
  EXPECT_EQ(CsvColumn(csv, "device"), (std::vector<std::string>{"1", "1"}));
  EXPECT_EQ(CsvColumn(csv, "run_id")[1], "run-cub_add_f32");
}

TEST(RenderResults, JsonIsOneArrayInProtobufsMapping) {
  v1::SweepItemError error;
  error.set_index(1);
  error.set_kernel("add_f33");
  error.set_message("unknown kernel");
  const Json json = Json::parse(
      RenderResults({Result("add_f32", 1 << 20, 2e-4)}, {error}, Format::kJson));
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["runId"], "run-add_f32");
  EXPECT_EQ(json[0]["request"]["elements"], "1048576");  // int64 as a string, as grpcurl prints
  EXPECT_EQ(json[0]["request"]["cacheMode"], "COLD");
  EXPECT_EQ(json[0]["verification"]["passed"], true);
  EXPECT_FALSE(json[0]["throughput"].contains("percentOfPeakBandwidth")) << "absent, not 0";
  EXPECT_EQ(json[1]["kernel"], "add_f33");
  EXPECT_EQ(json[1]["message"], "unknown kernel");
  EXPECT_EQ(Json::parse(RenderResults({}, {}, Format::kJson)), Json::array());
}

TEST(ToJson, PrintsZeroFieldsToo) {
  v1::SweepItemError error;
  const Json json = Json::parse(ToJson(error));
  EXPECT_EQ(json["index"], 0);
  EXPECT_EQ(json["kernel"], "");
}

v1::ListKernelsResponse Catalog() {
  v1::ListKernelsResponse catalog;
  catalog.set_backend("cuda");
  v1::KernelInfo* tuned = catalog.add_kernels();
  tuned->set_name("add_f32_bulk");
  tuned->set_family("elementwise_add");
  tuned->set_dtype("f32");
  tuned->set_bytes_per_element(12);
  tuned->mutable_default_policy()->set_block_size(256);
  tuned->mutable_default_policy()->set_items_per_thread(3);
  tuned->mutable_default_policy()->set_block_size_tunable(true);
  tuned->mutable_default_policy()->set_max_items_per_thread(64);
  tuned->set_min_compute_capability(90);
  tuned->set_description("bulk copy, 16-byte stores");
  tuned->set_provenance("gpubench, CUB's tile bytes");
  v1::KernelInfo* cub = catalog.add_kernels();
  cub->set_name("cub_add_f32");
  cub->set_family("elementwise_add");
  cub->set_dtype("f32");
  cub->set_bytes_per_element(12);
  cub->set_description("cub::DeviceTransform");
  cub->set_provenance("CUB");
  return catalog;
}

TEST(RenderKernels, TableCsvAndJson) {
  const std::string table = RenderKernels(Catalog(), Format::kTable);
  const std::vector<std::string> lines = Lines(table);
  ASSERT_EQ(lines.size(), 3u) << table;
  EXPECT_TRUE(absl::StartsWith(lines[0], "name")) << lines[0];
  EXPECT_NE(lines[1].find("256"), std::string::npos);
  EXPECT_NE(Squeeze(lines[1]).find(" 256 3 64 9.0 "), std::string::npos) << lines[1];
  EXPECT_NE(Squeeze(lines[2]).find(" library library fixed any "), std::string::npos) << lines[2];

  const std::string csv = RenderKernels(Catalog(), Format::kCsv);
  EXPECT_EQ(Lines(csv)[0],
            "name,family,dtype,bytes/elem,block,items,max_items,min_cc,description,provenance");
  EXPECT_EQ(CsvColumn(csv, "provenance"),
            (std::vector<std::string>{"gpubench, CUB's tile bytes", "CUB"}));
  EXPECT_EQ(CsvColumn(csv, "min_cc"), (std::vector<std::string>{"9.0", "any"}));

  const Json json = Json::parse(RenderKernels(Catalog(), Format::kJson));
  EXPECT_EQ(json["backend"], "cuda");
  EXPECT_EQ(json["kernels"][0]["defaultPolicy"]["maxItemsPerThread"], 64);
}

TEST(RenderDevices, GpuFactsForCudaHostFactsForCpu) {
  v1::ListDevicesResponse devices;
  v1::DeviceInfo* gpu = devices.add_devices();
  gpu->set_index(0);
  gpu->set_backend("cuda");
  gpu->set_name("NVIDIA H200");
  gpu->set_uuid("GPU-1234");
  gpu->set_compute_capability_major(9);
  gpu->set_compute_capability_minor(0);
  gpu->set_multiprocessor_count(132);
  gpu->set_l2_cache_bytes(50 << 20);
  gpu->set_total_memory_bytes(int64_t{141} << 30);
  gpu->set_peak_bandwidth_bytes_per_second(4.8e12);
  gpu->set_kernel_driver_version("580.159.04");
  // What NVML adds on a GPU node: its key is longer than the column (the H200 CLI aborted with
  // std::length_error on it, 2026-11-30).
  gpu->set_pcie_link_bytes_per_second(63.0e9);
  v1::DeviceInfo* cpu = devices.add_devices();
  cpu->set_index(1);
  cpu->set_backend("cpu");
  cpu->set_name("Test CPU");
  cpu->set_multiprocessor_count(8);
  cpu->set_l3_cache_bytes(32 << 20);

  const std::string table = RenderDevices(devices, Format::kTable);
  EXPECT_NE(table.find("device 0 (cuda): NVIDIA H200"), std::string::npos) << table;
  EXPECT_NE(table.find("compute capability                  9.0"), std::string::npos) << table;
  EXPECT_NE(table.find("L2 cache                            50.0 MiB"), std::string::npos);
  EXPECT_NE(table.find("memory total                        141.0 GiB"), std::string::npos);
  EXPECT_NE(table.find("4.80 TB/s"), std::string::npos) << table;
  EXPECT_NE(table.find("kernel driver                       580.159.04"), std::string::npos);
  EXPECT_NE(table.find("  PCIe rate (theoretical, per direction) 63"), std::string::npos) << table;
  const std::string cpu_part = table.substr(table.find("device 1 (cpu): Test CPU"));
  EXPECT_NE(cpu_part.find("hardware threads                    8"), std::string::npos) << table;
  EXPECT_NE(cpu_part.find("L3 cache                            32.0 MiB"), std::string::npos);
  EXPECT_EQ(cpu_part.find("compute capability"), std::string::npos) << "GPU facts on a CPU";
  EXPECT_NE(cpu_part.find("memory free                         -"), std::string::npos)
      << "an unknown size is '-', not 0 B";

  const std::string csv = RenderDevices(devices, Format::kCsv);
  EXPECT_EQ(CsvColumn(csv, "uuid"), (std::vector<std::string>{"GPU-1234", ""}));
  EXPECT_EQ(CsvColumn(csv, "l2_cache_bytes")[0], "52428800");
  EXPECT_EQ(Json::parse(RenderDevices(devices, Format::kJson))["devices"].size(), 2u);
}

TEST(RenderResultDetail, SaysWhatIsUnknownAndWhy) {
  v1::RunResult r = Result("add_f32", 1 << 20, 2e-4);
  r.mutable_measurement()->set_method("cpu: steady_clock around each launch");
  r.mutable_measurement()->set_stop_rule("noise_target");
  r.mutable_measurement()->set_stop_reason("noise 0.42% <= 2%");
  r.mutable_measurement()->add_notes("hot batch of 64");
  r.mutable_throughput()->set_percent_of_peak_bandwidth(50);
  r.set_explanation("bandwidth-bound");
  std::string detail = RenderResultDetail(r);
  EXPECT_TRUE(absl::StartsWith(detail, RenderResults({r}, {}, Format::kTable))) << detail;
  EXPECT_NE(detail.find("run run-add_f32 on cpu device 1 (Test CPU)"), std::string::npos) << detail;
  EXPECT_NE(detail.find("  stop          noise_target: noise 0.42% <= 2%"), std::string::npos);
  EXPECT_NE(detail.find("  note          hot batch of 64"), std::string::npos);
  EXPECT_NE(detail.find("copy_d2d ceiling not measured yet"), std::string::npos) << detail;
  EXPECT_NE(detail.find("  verification  pass"), std::string::npos);
  EXPECT_NE(detail.find("  occupancy     unavailable: not applicable on the cpu backend"),
            std::string::npos);
  EXPECT_NE(detail.find("  verdict       bandwidth-bound"), std::string::npos);
  EXPECT_EQ(detail.find("\n  noise "), std::string::npos) << "a known, reliable noise is in the row";

  r.mutable_timing()->set_noise_known(false);
  r.mutable_timing()->set_samples(1);
  EXPECT_NE(RenderResultDetail(r).find("  noise         unknown: 1 sample(s), fewer than two"),
            std::string::npos);
  r.mutable_timing()->set_noise_known(true);
  r.mutable_timing()->set_samples(4);
  r.mutable_timing()->set_below_min_samples(true);
  EXPECT_NE(RenderResultDetail(r).find(
                "  noise         0.42% from 4 samples, fewer than min_samples 10: unreliable"),
            std::string::npos)
      << RenderResultDetail(r);

  r.mutable_throughput()->set_percent_of_copy_ceiling(97.5);
  r.mutable_throughput()->set_copy_ceiling_bytes_per_second(4.4e12);
  detail = RenderResultDetail(r);
  EXPECT_NE(detail.find("97.5% of the measured copy_d2d ceiling 4.40 TB/s"), std::string::npos)
      << detail;
  r.mutable_verification()->set_requested(false);
  EXPECT_EQ(RenderResultDetail(r).find("  verification"), std::string::npos);
}

TEST(RenderResultDetail, DutyCycleAndItsPacing) {
  v1::RunResult r = Result("gemm_bf16", 4096, 2e-4);
  EXPECT_EQ(RenderResultDetail(r).find("  duty cycle"), std::string::npos);  // profile mode: 0
  r.mutable_measurement()->set_duty_cycle(0.934);
  EXPECT_NE(RenderResultDetail(r).find("  duty cycle    0.934 of the sampling loop timed (not paced)"),
            std::string::npos)
      << RenderResultDetail(r);
  r.mutable_request()->set_max_duty(0.8);
  r.mutable_measurement()->set_duty_cycle(0.7996);
  EXPECT_NE(RenderResultDetail(r).find(
                "  duty cycle    0.800 of the sampling loop timed (paced to max_duty 0.8)"),
            std::string::npos)
      << RenderResultDetail(r);
}

TEST(RenderResultDetail, PhasesSayWhenBuffersWereReusedOrKept) {
  v1::RunResult r = Result("add_f32", 1 << 20, 2e-6);
  v1::RunPhases* p = r.mutable_measurement()->mutable_phases();
  p->set_open_seconds(0.002);
  EXPECT_NE(RenderResultDetail(r).find("open 0.002 s, sampling"), std::string::npos)
      << RenderResultDetail(r);
  EXPECT_EQ(RenderResultDetail(r).find("buffers"), std::string::npos);
  p->set_buffers_kept(true);
  EXPECT_NE(RenderResultDetail(r).find(
                "release 0.000 s (in the worker); buffers kept for the next run of this sweep\n"),
            std::string::npos)
      << RenderResultDetail(r);
  p->set_buffers_reused(true);
  EXPECT_NE(RenderResultDetail(r).find("release 0.000 s (in the worker); buffers reused from the "
                                       "previous run of this sweep and kept for the next\n"),
            std::string::npos)
      << RenderResultDetail(r);
  p->set_buffers_kept(false);
  EXPECT_NE(RenderResultDetail(r).find(
                "(in the worker); buffers reused from the previous run of this sweep\n"),
            std::string::npos)
      << RenderResultDetail(r);
}

TEST(RenderResultDetail, PlacementPadOnlyWhenSet) {
  v1::RunResult r = Result("add_f16_l2keep", 16 << 20, 2.4e-5);
  EXPECT_EQ(RenderResultDetail(r).find("  placement"), std::string::npos);  // no pad: no line
  r.mutable_request()->set_placement_pad_bytes(int64_t{34} << 20);
  EXPECT_NE(RenderResultDetail(r).find(
                "  placement     a pad of 34Mi bytes after each device buffer of >= 1Mi bytes"),
            std::string::npos)
      << RenderResultDetail(r);
}

TEST(RenderHistogram, EqualSamplesAreOneRowAndStridingIsSaid) {
  v1::RunResult r = Result("add_f32", 1000, 1e-6);
  for (int i = 0; i < 7; ++i) r.mutable_samples()->add_seconds(1e-6);
  r.mutable_samples()->set_count(70);
  r.mutable_samples()->set_strided(true);
  const std::string h = RenderHistogram(r);
  const std::vector<std::string> lines = Lines(h);
  ASSERT_EQ(lines.size(), 2u) << h;
  EXPECT_EQ(lines[0], "histogram of 7 samples (evenly strided from 70), per-launch time:");
  EXPECT_NE(lines[1].find("      7 " + std::string(50, '#')), std::string::npos) << lines[1];
}

}  // namespace
}  // namespace gpubench::client

namespace gpubench::client {
namespace {

// --format=jsonl: each item one line of compact JSON, results and errors alike.
TEST(JsonLines, OneObjectPerLineForResultsAndErrors) {
  v1::RunSweepResponse result;
  result.mutable_result()->set_run_id("r1");
  result.mutable_result()->set_explanation("two\nlines");
  const std::string line = JsonLine(result);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // the embedded newline is escaped
  EXPECT_EQ(line.rfind("{\"result\":", 0), 0u) << line;
  const std::string error = JsonErrorLine(14, "gone");
  EXPECT_EQ(error.find('\n'), error.size() - 1);
  EXPECT_NE(error.find("\"error\":"), std::string::npos) << error;
  EXPECT_NE(error.find("\"message\":\"gone\""), std::string::npos) << error;
}

}  // namespace
}  // namespace gpubench::client
