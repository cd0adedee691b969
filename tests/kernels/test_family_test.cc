// A family that exists only in this test, registered through the public path
// (RegisterVariants) and run end to end on the CPU backend through the engine (ResolveRunRequest,
// MeasureRun): its shape rule, buffers of other types and counts, per-session state, sampled
// verification and its metric all come from the declaration below, with no engine code that
// knows it. A second variant places its output on a peer device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/backend.h"
#include "kernels/catalog.h"
#include "kernels/cpu_backend.h"
#include "kernels/family.h"
#include "kernels/reference.h"
#include "server/engine/measurement.h"
#include "server/engine/resolve.h"
#include "server/engine/run_memory.h"
#include "server/engine/run_spec.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

// ---- the family: row sums of an m x n matrix, in double ----------------------------------------

int64_t MatrixElements(const RunShape& s) { return s.m * s.n; }
int64_t RowCount(const RunShape& s) { return s.m; }

// Small integers, so every row sum is exact in double whatever the order of additions.
void GenerateSmallIntegers(const GenerateContext& c, std::span<std::byte> out) {
  auto* values = reinterpret_cast<float*>(out.data());
  const int64_t n = static_cast<int64_t>(out.size() / sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    values[i] = static_cast<float>(static_cast<int64_t>((c.seed + 31 * i) % 17) - 8);
  }
}

double RowSumReference(const KernelVariant&, const HostData& data, int, int64_t row) {
  const int64_t n = data.shape.n;
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    sum += LoadAsDouble(data.dtype, data.buffers[0].data(), row * n + j);
  }
  return sum;
}

// m x n from the request, or a square of `elements` rows when it gives none.
absl::StatusOr<RunShape> RowSumShape(int64_t elements, const RunShape& requested) {
  if (requested.k != 0) return absl::InvalidArgumentError("row sums take m and n only, no k");
  RunShape shape = requested;
  if (shape.m == 0 && shape.n == 0) shape.m = shape.n = elements;
  if (shape.m < 1 || shape.n < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("row sums need m >= 1 and n >= 1 (got ", shape.m, " x ", shape.n, ")"));
  }
  shape.elements = shape.m * shape.n;
  return shape;
}

constexpr BufferSpec kRowSumBuffers[] = {
    {.name = "matrix", .elements = &MatrixElements, .generate = &GenerateSmallIntegers},
    {.name = "sums", .role = BufferRole::kOutput, .dtype = DType::kF64, .elements = &RowCount},
};

constexpr KernelFamily kRowSum{
    .name = "test_row_sum",
    .buffers = kRowSumBuffers,
    .metric = Metric::kOperationsPerSecond,
    .operation_unit = "FLOP",
    .operations = [](const RunShape& s) { return s.m * s.n; },  // one add per element
    .reference = &RowSumReference,
    .verify_samples = 5,
    .resolve_shape = &RowSumShape,
    .launch_items = &RowCount,  // one emulated thread per row
    .cpu_chunk_threads = 1,
};

// The per-session state: the setup function decides how many columns a "thread" adds per step
// and says so; a launch without its state writes NaN, which fails verification.
struct RowSumState : LaunchState {
  int64_t columns_per_step = 0;
};

void RowSumSetup(const KernelBuffers& b, const LaunchGeometry&, std::unique_ptr<LaunchState>* state,
                 std::string* report) {
  auto s = std::make_unique<RowSumState>();
  s->columns_per_step = std::min<int64_t>(4, b.shape.n);
  *report = absl::StrCat("row sums, ", s->columns_per_step, " columns per step");
  *state = std::move(s);
}

void RowSumCpu(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  const auto* state = static_cast<const RowSumState*>(b.state);
  const float* matrix = b.at<const float>(0);
  double* sums = b.at<double>(1);
  const int64_t m = b.shape.m, n = b.shape.n;
  for (int64_t row = begin; row < std::min(end, m); ++row) {
    if (state == nullptr) {
      sums[row] = std::nan("");
      continue;
    }
    double sum = 0;
    for (int64_t j0 = 0; j0 < n; j0 += state->columns_per_step) {
      for (int64_t j = j0; j < std::min(n, j0 + state->columns_per_step); ++j) {
        sum += matrix[row * n + j];
      }
    }
    sums[row] = sum;
  }
}

// A copy whose destination lives on the peer device.
constexpr BufferSpec kPeerBuffers[] = {
    {.name = "src"},
    {.name = "dst", .role = BufferRole::kOutput, .placement = Placement::kPeerDevice},
};

double PeerCopyReference(const KernelVariant&, const HostData& data, int, int64_t i) {
  return LoadAsDouble(data.dtype, data.buffers[0].data(), i);
}

constexpr KernelFamily kPeerCopy{
    .name = "test_peer_copy",
    .buffers = kPeerBuffers,
    .bytes_moved = [](const RunShape& s, DType d) { return s.elements * DTypeSize(d); },
    .reference = &PeerCopyReference,
};

void PeerCopyCpu(const KernelBuffers& b, const LaunchGeometry&, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < std::min(end, b.n); ++i) b.at<float>(1)[i] = b.at<const float>(0)[i];
}

constexpr KernelVariant kTestVariants[] = {
    {.name = "test_row_sum_f32",
     .family = &kRowSum,
     .dtype = DType::kF32,
     .default_policy = {.block_size = 32, .items_per_thread = 1},
     .description = "sums[i] = sum of row i, in double",
     .provenance = "test-only family",
     .cpu = &RowSumCpu,
     .cpu_setup = &RowSumSetup},
    {.name = "test_peer_copy_f32",
     .family = &kPeerCopy,
     .dtype = DType::kF32,
     .default_policy = {.block_size = 64, .items_per_thread = 1},
     .description = "dst (on the peer device) = src",
     .provenance = "test-only family",
     .cpu = &PeerCopyCpu},
};

const absl::Status kRegistered = RegisterVariants(kTestVariants);

class TestFamily : public ::testing::Test {
 protected:
  absl::StatusOr<RunResult> Run(RunRequest request) {
    request.seed = 3;
    request.measurement.min_samples = 3;
    request.measurement.min_time_seconds = 0.001;
    request.measurement.max_noise = 0.5;
    request.measurement.timeout_seconds = 1;
    ASSIGN_OR_RETURN(const RunSpec spec, ResolveRunRequest(request, *backend_, ServerLimits()));
    return MeasureRun(
        *backend_, spec, [] { return false; }, &pool_);
  }

  std::unique_ptr<Backend> backend_ = MakeCpuBackend({.devices = 2, .threads_per_device = 2});
  ParallelPool pool_{2};
};

TEST_F(TestFamily, RegisteredThroughThePublicPath) {
  ASSERT_TRUE(kRegistered.ok()) << kRegistered;
  absl::StatusOr<const KernelVariant*> k = FindKernel("test_row_sum_f32");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ((*k)->family, &kRowSum);
  EXPECT_EQ(AllKernels().front().name, "add_f32");  // built-ins first, then registrations
  // A second registration of the same names is refused, and adds nothing.
  const size_t before = AllKernels().size();
  absl::Status again = RegisterVariants(kTestVariants);
  EXPECT_EQ(again.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(again.message()), HasSubstr("test_row_sum_f32"));
  EXPECT_EQ(AllKernels().size(), before);
}

TEST_F(TestFamily, EndToEndOnTheCpuBackendWithItsOwnShapeMetricAndState) {
  RunRequest r;
  r.kernel = "test_row_sum_f32";
  r.shape = {.m = 300, .n = 7};
  absl::StatusOr<RunResult> result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->spec.shape.m, 300);
  EXPECT_EQ(result->spec.shape.n, 7);
  EXPECT_EQ(result->spec.elements, 2100);
  // 300 rows: ceil(300 / 32) blocks of 32 emulated threads.
  EXPECT_EQ(result->spec.geometry.grid_size, 10);
  // Work and metric from the declaration: bytes = matrix (f32) + sums (f64).
  EXPECT_EQ(result->metric, Metric::kOperationsPerSecond);
  EXPECT_EQ(result->operation_unit, "FLOP");
  EXPECT_EQ(result->operations, 2100);
  EXPECT_EQ(result->bytes_moved, 2100 * 4 + 300 * 8);
  EXPECT_DOUBLE_EQ(result->operations_per_second, 2100 / result->stats.median_seconds);
  EXPECT_DOUBLE_EQ(result->seconds_per_operation, result->stats.median_seconds / 2100);
  EXPECT_FALSE(result->percent_of_peak.has_value());  // the family names no peak
  // The setup function's state reached every launch (else NaN fails), and its words the result.
  EXPECT_EQ(result->launch_report, "row sums, 4 columns per step");
  ASSERT_TRUE(result->verification.has_value());
  EXPECT_TRUE(result->verification->passed);
  EXPECT_TRUE(result->verification->sampled);
  EXPECT_EQ(result->verification->checked, 5);  // verify_samples of the 300 sums
}

TEST_F(TestFamily, ElementsAloneGiveTheFamilysSquareAndBadShapesAreRefused) {
  RunRequest r;
  r.kernel = "test_row_sum_f32";
  r.elements = 9;
  absl::StatusOr<RunResult> square = Run(r);
  ASSERT_TRUE(square.ok()) << square.status();
  EXPECT_EQ(square->spec.shape.m, 9);
  EXPECT_EQ(square->operations, 81);
  EXPECT_TRUE(square->verification->passed);

  r.shape = {.m = 4, .n = 4, .k = 4};
  absl::StatusOr<RunResult> bad = Run(r);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  // A family without dimensions refuses them.
  RunRequest add;
  add.kernel = "add_f32";
  add.elements = 100;
  add.shape = {.m = 10};
  EXPECT_EQ(Run(add).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TestFamily, SampledVerificationCatchesAWrongSampledElement) {
  const KernelVariant& k = **FindKernel("test_row_sum_f32");
  const RunShape shape = *ResolveShape(kRowSum, 0, {.m = 101, .n = 3});
  const HostData data = GenerateHostData(k, shape, 5, &pool_);
  EXPECT_TRUE(data.buffers[1].empty());  // outputs are not generated
  std::vector<double> sums(101);
  for (int64_t i = 0; i < 101; ++i) sums[i] = ReferenceValue(k, data, 1, i);
  EXPECT_TRUE(Verify(k, data, sums.data(), &pool_).passed);
  sums[100] += 1;  // the last element is always among the samples
  const Verification v = Verify(k, data, sums.data(), &pool_);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.first_mismatch_buffer, "sums");
  EXPECT_EQ(v.first_mismatch_index, 100);
}

TEST_F(TestFamily, PeerBufferNeedsASecondDevice) {
  RunRequest r;
  r.kernel = "test_peer_copy_f32";
  r.elements = 1000;
  absl::StatusOr<RunResult> result = Run(r);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->spec.peer_device_index, 1);  // the next device by default
  EXPECT_EQ(result->bytes_moved, 4000);          // the family's own byte count
  EXPECT_TRUE(result->verification->passed);
  // Memory: the peer buffer is device memory too.
  EXPECT_EQ(
      RunMemoryOf(**FindKernel("test_peer_copy_f32"), {.elements = 1000}, true, 0).device_bytes,
      8000);

  r.peer_device_index = 0;  // the run's own device
  EXPECT_EQ(Run(r).status().code(), absl::StatusCode::kInvalidArgument);
  r.peer_device_index.reset();
  std::unique_ptr<Backend> one = MakeCpuBackend({.devices = 1, .threads_per_device = 1});
  absl::StatusOr<RunSpec> spec = ResolveRunRequest(r, *one, ServerLimits());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("two devices"));
  // A single-device family refuses a peer.
  RunRequest add;
  add.kernel = "add_f32";
  add.elements = 10;
  add.peer_device_index = 1;
  EXPECT_EQ(Run(add).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpubench
