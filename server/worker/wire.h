// What crosses the process boundary between gpubench_server and a gpubench_worker: framed
// protobuf messages of the private protocol (proto/gpubench/worker/v1/worker.proto), and the
// engine's structs inside them as CBOR. Both ends come from one build. Thread-compatible: the
// functions share no state; a file descriptor must be written by one thread at a time.
#ifndef GPUBENCH_SERVER_WORKER_WIRE_H_
#define GPUBENCH_SERVER_WORKER_WIRE_H_

#include <cstdint>
#include <string>

#include <google/protobuf/message_lite.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpubench/worker/v1/worker.pb.h"
#include "kernels/backend.h"
#include "server/engine/run_result.h"
#include "server/engine/run_spec.h"

namespace gpubench {

// Largest frame either side accepts (a RunResult with 10,000 kept samples is about 100 KB).
inline constexpr uint32_t kMaxWorkerFrameBytes = 64u << 20;

// Writes `message` as one frame. Handles short writes and EINTR; UNAVAILABLE when the peer is
// gone (EPIPE: SIGPIPE must be ignored or the fd must be a socket written with MSG_NOSIGNAL).
absl::Status WriteFrame(int fd, const google::protobuf::MessageLite& message);
// Reads one frame into `message`. UNAVAILABLE "closed" at a clean end of stream, DATA_LOSS for a
// frame over kMaxWorkerFrameBytes or one that does not parse.
absl::Status ReadFrame(int fd, google::protobuf::MessageLite* message);

// absl::Status <-> the protocol's Status. Payload markers (kDeviceLostPayload, ...) keep their
// type URL; their values are not carried.
void StatusToWire(const absl::Status& status, worker::v1::Status* out);
absl::Status StatusFromWire(const worker::v1::Status& wire);

// The engine's structs as CBOR. Decoding a RunSpec looks its kernel up in this process's catalog:
// NOT_FOUND where it is not registered here (a fault kernel without --test_fault_kernels).
std::string EncodeRunSpec(const RunSpec& spec);
absl::StatusOr<RunSpec> DecodeRunSpec(const std::string& cbor);
std::string EncodeRunResult(const RunResult& result);
absl::StatusOr<RunResult> DecodeRunResult(const std::string& cbor);
std::string EncodeCapabilities(const BackendCapabilities& can);
absl::StatusOr<BackendCapabilities> DecodeCapabilities(const std::string& cbor);
std::string EncodeDeviceInfo(const DeviceInfo& info);
absl::StatusOr<DeviceInfo> DecodeDeviceInfo(const std::string& cbor);

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_WORKER_WIRE_H_
