// Definitions of the flags declared in flags.h.
#include "client/commands/flags.h"

#include "absl/flags/flag.h"

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
ABSL_FLAG(std::string, mode, "cold", "cold (L2 flushed, one launch per sample) | hot (batched).");
ABSL_FLAG(int, warmup, 0, "Warm-up launches (0 = server default).");
ABSL_FLAG(int, min_samples, 0, "Minimum samples (0 = server default).");
ABSL_FLAG(int, max_samples, 0, "Maximum samples (0 = server default).");
ABSL_FLAG(double, min_time, 0, "Minimum measured seconds (0 = server default).");
ABSL_FLAG(double, max_noise, 0,
          "Stop at this relative stddev, a FRACTION: 0.005 = 0.5% (nvbench's --max-noise is in "
          "percent); values over 1 are refused (0 = server default).");
ABSL_FLAG(double, timeout, 0, "Sampling wall-time budget in seconds (0 = server default).");
ABSL_FLAG(bool, verify, true, "Verify every element against the host reference.");
ABSL_FLAG(int, profile_runs, 0,
          "Profile mode: run the kernel N times, each launch timed alone, with no blocking kernel "
          "and no sampling logic, so ncu / nsys see clean launches (0 = normal sampling).");
ABSL_FLAG(std::string, timer, "auto",
          "What times the samples: auto (the default: CUDA events, around one launch cold and "
          "around the batch hot) | cupti (CUPTI activity records, the kernels' own device "
          "timestamps, cold and hot; an error where it cannot record; tracing can slow "
          "large-grid kernels) | events "
          "(CUDA events only) | gpu_time (each kernel's gpu__time_duration counter, Nsight "
          "Compute's Duration: every launch alone under CUPTI's range profiler, slower, no "
          "throttle check). The CPU backend times with its steady clock (auto, events).");
ABSL_FLAG(std::optional<double>, throttle_threshold, std::nullopt,
          "Discard a sample whose SM clock was below this FRACTION of the default clock: 0.75 "
          "(the server's default when unset) = nvbench's --throttle-threshold 75 (percent there); "
          "0 keeps every sample (clocks still reported). 0 <= x < 1.");
ABSL_FLAG(double, max_duty, 0,
          "Pace the sampling loop so the GPU is busy with timed work at most this FRACTION of "
          "its wall time (0.8 = 80%; the server sleeps after each sample). A power-capped GPU "
          "clocks higher when it idles between samples: match another tool's duty cycle "
          "(bench/torch_gemm.py prints its own). 0 = no pacing; 0 < x <= 1.");
ABSL_FLAG(std::string, placement_pad, "",
          "Unused BYTES the server leaves after each device buffer of 1 MiB or more, in --size's "
          "syntax (34Mi = 34 x 2^20 bytes; 35651584), so the run's buffers are not exactly one "
          "buffer size apart (their L2 sets can alias: see README, Measurement). Empty or 0 = "
          "the server's default (no pad unless its --default_placement_pad_bytes); at most 1Gi. "
          "The cpu backend ignores it.");
ABSL_FLAG(int32_t, placements, 0,
          "Cold samples rotate over this many separately allocated copies of the run's device "
          "buffers, so the median covers that many placements, not the one an allocation gave "
          "(a small cold launch moves with where its buffers sit: see README, Measurement). "
          "0 or 1 = one copy; at most 16. Hot samples use the first copy. The cpu backend "
          "ignores it.");
ABSL_FLAG(bool, samples, false, "Return the per-launch samples (at most 10,000) in the result.");
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
