// The flags more than one command reads, defined once (flags.cc) and declared here. A flag of
// one command only is defined in that command's file; which command takes which flag is the
// table's business (commands.cc).
#ifndef GPUBENCH_CLIENT_COMMANDS_FLAGS_H_
#define GPUBENCH_CLIENT_COMMANDS_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::string, target);
ABSL_DECLARE_FLAG(bool, tls);
ABSL_DECLARE_FLAG(std::string, ca_cert);
ABSL_DECLARE_FLAG(std::string, client_cert);
ABSL_DECLARE_FLAG(std::string, client_key);
ABSL_DECLARE_FLAG(std::string, tls_server_name);
ABSL_DECLARE_FLAG(std::string, token_file);
ABSL_DECLARE_FLAG(std::string, format);
ABSL_DECLARE_FLAG(std::string, output_file);
ABSL_DECLARE_FLAG(double, rpc_timeout_seconds);
ABSL_DECLARE_FLAG(std::string, size);
ABSL_DECLARE_FLAG(std::string, sizes);
ABSL_DECLARE_FLAG(std::string, block_sizes);
ABSL_DECLARE_FLAG(int, device);
ABSL_DECLARE_FLAG(std::string, device_uuid);
ABSL_DECLARE_FLAG(std::string, items_per_thread);
ABSL_DECLARE_FLAG(std::string, mode);
ABSL_DECLARE_FLAG(int, warmup);
ABSL_DECLARE_FLAG(int, min_samples);
ABSL_DECLARE_FLAG(int, max_samples);
ABSL_DECLARE_FLAG(double, min_time);
ABSL_DECLARE_FLAG(double, max_noise);
ABSL_DECLARE_FLAG(double, timeout);
ABSL_DECLARE_FLAG(bool, verify);
ABSL_DECLARE_FLAG(int, profile_runs);
ABSL_DECLARE_FLAG(std::string, timer);
ABSL_DECLARE_FLAG(std::optional<double>, throttle_threshold);
ABSL_DECLARE_FLAG(double, max_duty);
ABSL_DECLARE_FLAG(std::string, placement_pad);
ABSL_DECLARE_FLAG(int32_t, placements);
ABSL_DECLARE_FLAG(bool, samples);
ABSL_DECLARE_FLAG(bool, histogram);
ABSL_DECLARE_FLAG(int64_t, seed);
ABSL_DECLARE_FLAG(bool, progress);
ABSL_DECLARE_FLAG(bool, force);
ABSL_DECLARE_FLAG(bool, profile);

#endif  // GPUBENCH_CLIENT_COMMANDS_FLAGS_H_
