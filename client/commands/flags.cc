// Definitions of the flags declared in flags.h.
#include "client/commands/flags.h"

#include "absl/flags/flag.h"
#include "common/measurement_options.h"

ABSL_FLAG(std::string, target, "localhost:50051", "Server address host:port.");
ABSL_FLAG(bool, tls, false, "Connect with TLS (implied by --ca_cert or --client_cert).");
ABSL_FLAG(std::string, ca_cert, "",
          "PEM CA bundle that signed the server (default: system roots).");
ABSL_FLAG(std::string, client_cert, "", "PEM client certificate for mutual TLS.");
ABSL_FLAG(std::string, client_key, "", "PEM private key of --client_cert.");
ABSL_FLAG(std::string, tls_server_name, "", "Override the name checked in the server certificate.");
ABSL_FLAG(std::string, token_file, "",
          "File holding the bearer token, read as the server reads --token_file (the first "
          "token; whitespace, CR, blank lines and # comments skipped). Or set GPUBENCH_TOKEN.");
ABSL_FLAG(std::string, format, "table",
          "Output format: table | json | csv | jsonl (run/sweep: one JSON object per line as "
          "items finish, errors included) | nvbench-json (run/sweep: nvbench's JSON schema for "
          "nvbench_compare.py; see docs/output-formats.md).");
ABSL_FLAG(std::string, output_file, "",
          "run/sweep/contract: write the formatted output to this file instead of stdout.");
ABSL_FLAG(double, rpc_timeout_seconds, 600, "Deadline of each RPC (a run waits in the queue too).");
ABSL_FLAG(std::string, size, "", "run: element count, e.g. 1048576, 16M (10^6), 256Mi (2^20).");
ABSL_FLAG(std::string, sizes, "", "sweep: comma-separated element counts, e.g. 1Mi,16Mi,256Mi.");
ABSL_FLAG(std::string, block_sizes, "",
          "sweep: comma-separated block sizes (default: each kernel's).");
ABSL_FLAG(int, device, 0, "Device index.");
ABSL_FLAG(std::string, device_uuid, "", "Select the device by UUID (overrides --device).");
ABSL_FLAG(std::string, items_per_thread, "",
          "run: elements per thread (default: the kernel's); sweep/autotune: comma-separated "
          "values. Only kernels whose policy allows it (see `kernels`, column max_items).");
// The measurement flags: rows of the option table (common/measurement_options.h), which gives
// their help and the server their ranges; FillMeasurement (options.cc) reads them by the table's
// names. A flag's default leaves the option to the server (0, empty, unset).
using gpubench::OptionId;
using gpubench::OptionOf;
ABSL_FLAG(std::string, mode, "cold", OptionOf(OptionId::kCacheMode).help);
ABSL_FLAG(int, warmup, 0, OptionOf(OptionId::kWarmupLaunches).help);
ABSL_FLAG(int, min_samples, 0, OptionOf(OptionId::kMinSamples).help);
ABSL_FLAG(int, max_samples, 0, OptionOf(OptionId::kMaxSamples).help);
ABSL_FLAG(double, min_time, 0, OptionOf(OptionId::kMinTimeSeconds).help);
ABSL_FLAG(double, max_noise, 0, OptionOf(OptionId::kMaxNoise).help);
ABSL_FLAG(double, timeout, 0, OptionOf(OptionId::kTimeoutSeconds).help);
ABSL_FLAG(bool, verify, true, "Verify every element against the host reference.");
ABSL_FLAG(int, profile_runs, 0, OptionOf(OptionId::kProfileRuns).help);
ABSL_FLAG(std::string, timer, "auto", OptionOf(OptionId::kTimer).help);
ABSL_FLAG(std::optional<double>, throttle_threshold, std::nullopt,
          OptionOf(OptionId::kThrottleThreshold).help);
ABSL_FLAG(double, max_duty, 0, OptionOf(OptionId::kMaxDuty).help);
ABSL_FLAG(std::string, placement_pad, "", OptionOf(OptionId::kPlacementPadBytes).help);
ABSL_FLAG(int32_t, placements, 0, OptionOf(OptionId::kPlacements).help);
ABSL_FLAG(bool, samples, false, OptionOf(OptionId::kKeepSamples).help);
ABSL_FLAG(bool, histogram, false,
          "run: draw a text histogram of the samples (implies --samples); on stderr unless "
          "--format=table.");
ABSL_FLAG(int64_t, seed, -1, "Input data seed (-1 = server picks one, echoed in the result).");
ABSL_FLAG(bool, progress, true, "sweep: show progress on stderr.");
ABSL_FLAG(bool, force, false,
          "run/sweep: run even while another process uses the GPU (servers in shared-node mode "
          "refuse with FAILED_PRECONDITION otherwise).");
ABSL_FLAG(bool, profile, false,
          "Add a hardware-counter pass (achieved occupancy, DRAM throughput); GPU servers only.");
