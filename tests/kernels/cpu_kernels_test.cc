// Every catalog variant on the CPU backend against the independent host reference, at sizes
// that exercise tails and vector widths, plus checks that the verification can fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/cpu_backend.h"
#include "kernels/reference.h"

namespace gpubench {
namespace {

LaunchGeometry DefaultGeometry(const KernelVariant& k, int64_t n, int block = 0, int items = 0) {
  LaunchGeometry g;
  g.block_size = block > 0 ? block : k.default_policy.block_size;
  g.items_per_thread = items > 0 ? items : k.default_policy.items_per_thread;
  const int64_t per_block = int64_t{g.block_size} * g.items_per_thread;
  g.grid_size = (LaunchItems(k, ShapeOfElements(*k.family, n)) + per_block - 1) / per_block;
  return g;
}

struct Outcome {
  Verification verification;
  BufferContents out;
};

Outcome RunOnCpu(Backend& backend, const KernelVariant& k, int64_t n, const LaunchGeometry& g,
                 uint64_t seed) {
  ParallelPool pool(2);
  HostData data = GenerateHostData(k, n, seed, &pool);
  if (NeedsPeerDevice(*k.family)) data.peer_device = 1;  // peer copies: the second device
  auto session = backend.Open(0, k, g, data);
  EXPECT_TRUE(session.ok()) << session.status();
  Outcome o;
  EXPECT_TRUE((*session)->RunOnceAndRead(&o.out).ok());
  o.verification = Verify(k, data, o.out, &pool);
  return o;
}

class EveryVariant : public ::testing::TestWithParam<const KernelVariant*> {};

TEST_P(EveryVariant, MatchesReferenceAtAwkwardSizes) {
  const KernelVariant& k = *GetParam();
  if (k.family->resolve_shape != nullptr) {
    GTEST_SKIP() << k.name << ": its family has its own sizes (resolve_shape), tested in its test";
  }
  auto backend = MakeCpuBackend({.devices = 2, .threads_per_device = 3});
  uint64_t seed = 1;
  // A family with its own shape rule (GEMM: M = N = K = n) does O(n^3) work: small sizes, still
  // ragged against its tiles.
  const std::vector<int64_t> sizes =
      k.family->resolve_shape != nullptr
          ? std::vector<int64_t>{1, 2, 7, 33, 65, 130}
          : std::vector<int64_t>{1, 2, 7, 8, 9, 31, 33, 255, 257, 1023, 4099, (1 << 20) + 3};
  for (int64_t n : sizes) {
    const Outcome o = RunOnCpu(*backend, k, n, DefaultGeometry(k, n), ++seed);
    EXPECT_TRUE(o.verification.passed)
        << k.name << " n=" << n << ": " << o.verification.mismatches << " mismatches, first at "
        << o.verification.first_mismatch_index << " expected "
        << o.verification.first_mismatch_expected << " got "
        << o.verification.first_mismatch_actual;
    int64_t verified = 0;  // every element, or the family's samples of each output
    const RunShape shape = ShapeOfElements(*k.family, n);
    for (const BufferSpec& b : k.family->buffers) {
      if (!IsVerified(b)) continue;
      const int64_t elements = BufferElements(b, shape);
      verified += k.family->verify_samples > 0 ? std::min(k.family->verify_samples, elements)
                                               : elements;
    }
    EXPECT_EQ(o.verification.checked, verified);
  }
}

TEST_P(EveryVariant, OtherBlockSizes) {
  const KernelVariant& k = *GetParam();
  if (!k.default_policy.block_size_tunable) GTEST_SKIP() << k.name << " has a library launch";
  auto backend = MakeCpuBackend({.devices = 2, .threads_per_device = 2});
  for (int block : {32, 96, 128, 1024}) {
    const int64_t n = 100003;
    const Outcome o = RunOnCpu(*backend, k, n, DefaultGeometry(k, n, block), 77 + block);
    EXPECT_TRUE(o.verification.passed) << k.name << " block=" << block;
  }
}

TEST_P(EveryVariant, EveryAllowedItemsPerThread) {
  const KernelVariant& k = *GetParam();
  if (!ItemsPerThreadTunable(k)) GTEST_SKIP() << k.name << " fixes its items per thread";
  auto backend = MakeCpuBackend({.devices = 2, .threads_per_device = 2});
  std::vector<int> values = ItemsPerThreadCandidates(k);
  if (k.default_policy.items_any_count) values.insert(values.end(), {3, 5, 12});
  int allowed = 0;
  for (int items : values) {
    ASSERT_TRUE(ItemsPerThreadAllowed(k, items)) << k.name << " items=" << items;
    ++allowed;
    for (int64_t n : {int64_t{5}, int64_t{100003}}) {
      for (int block : {32, 256}) {
        const Outcome o = RunOnCpu(*backend, k, n, DefaultGeometry(k, n, block, items), n + items);
        EXPECT_TRUE(o.verification.passed)
            << k.name << " n=" << n << " block=" << block << " items=" << items;
      }
    }
  }
  EXPECT_GE(allowed, 3) << k.name;  // at least 1, 2 and 4 packets
}

TEST_P(EveryVariant, TooSmallGridLeavesElementsUnwrittenAndFailsVerification) {
  const KernelVariant& k = *GetParam();
  if (k.family->buffers.back().role == BufferRole::kInOut) {
    GTEST_SKIP() << "SAXPY updates y in place: an unwritten y keeps its old value, checked below";
  }
  if (k.default_policy.grid_stride) {
    GTEST_SKIP() << "grid-stride kernels cover any N with any grid (checked by GridStride...)";
  }
  auto backend = MakeCpuBackend({.devices = 2, .threads_per_device = 2});
  const int64_t n = k.family->resolve_shape != nullptr ? 40 : 10000;  // GEMM: O(n^3)
  LaunchGeometry g = DefaultGeometry(k, n);
  g.grid_size -= 1;
  const Outcome o = RunOnCpu(*backend, k, n, g, 5);
  EXPECT_FALSE(o.verification.passed);
  EXPECT_GT(o.verification.mismatches, 0);
}

TEST_P(EveryVariant, GridStrideKernelsCoverEverythingWithFewBlocks) {
  const KernelVariant& k = *GetParam();
  if (!k.default_policy.grid_stride) GTEST_SKIP() << k.name << " is one pass, not grid-stride";
  auto backend = MakeCpuBackend({.devices = 2, .threads_per_device = 2});
  for (int64_t grid : {int64_t{1}, int64_t{3}, int64_t{7}}) {
    for (int64_t n : {int64_t{5}, int64_t{1000003}}) {
      LaunchGeometry g = DefaultGeometry(k, n);
      g.grid_size = std::min(g.grid_size, grid);
      const Outcome o = RunOnCpu(*backend, k, n, g, 11 + grid);
      EXPECT_TRUE(o.verification.passed) << k.name << " grid=" << grid << " n=" << n;
    }
  }
}

std::string VariantName(const ::testing::TestParamInfo<const KernelVariant*>& info) {
  return std::string(info.param->name);
}

std::vector<const KernelVariant*> AllVariantPointers() {
  std::vector<const KernelVariant*> out;
  for (const KernelVariant& k : AllKernels()) out.push_back(&k);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Catalog, EveryVariant, ::testing::ValuesIn(AllVariantPointers()),
                         VariantName);

TEST(Verify, DetectsOneWrongElementAndNaN) {
  const KernelVariant& k = **FindKernel("add_f32");
  ParallelPool pool(2);
  const int64_t n = 1000;
  const HostData data = GenerateHostData(k, n, 9, &pool);
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(ReferenceValue(k, data, i));
  EXPECT_TRUE(Verify(k, data, out.data(), &pool).passed);
  out[637] = std::nextafter(out[637], 10.0f);  // one ulp off: add must be exact
  Verification v = Verify(k, data, out.data(), &pool);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.mismatches, 1);
  EXPECT_EQ(v.first_mismatch_index, 637);
  out[637] = std::nanf("");
  v = Verify(k, data, out.data(), &pool);
  EXPECT_FALSE(v.passed);
  EXPECT_TRUE(std::isinf(v.max_abs_error));
}

TEST(Verify, SaxpyWithoutTheUpdateFails) {
  const KernelVariant& k = **FindKernel("saxpy_balanced");
  ParallelPool pool(2);
  const HostData data = GenerateHostData(k, 4096, 3, &pool);
  // The untouched y is not alpha * x + y.
  EXPECT_FALSE(Verify(k, data, data.buffers[1].data(), &pool).passed);
}

TEST(HostData, DeterministicAndNotDegenerate) {
  const KernelVariant& k = **FindKernel("add_f16");
  ParallelPool one(1), four(4);
  const HostData a = GenerateHostData(k, 100001, 42, &one);
  const HostData b = GenerateHostData(k, 100001, 42, &four);
  EXPECT_EQ(a.buffers[0], b.buffers[0]);
  EXPECT_EQ(a.buffers[1], b.buffers[1]);
  const HostData c = GenerateHostData(k, 100001, 43, &four);
  EXPECT_NE(a.buffers[0], c.buffers[0]);
  EXPECT_NE(a.buffers[0], a.buffers[1]);
  EXPECT_TRUE(a.buffers[2].empty());  // the output c is not generated
  int zeros = 0;
  for (int64_t i = 0; i < a.n; ++i) zeros += LoadAsDouble(k.dtype, a.buffers[0].data(), i) == 0;
  EXPECT_LT(zeros, 10);
}

// The cold flush evicts only the buffers' lines where that is exact and cheaper than the 2x LLC
// write pass; setup state (of unknown extent) and buffers beyond 2x LLC keep the write pass.
TEST(CpuColdFlush, EvictsBuffersOnlyWhereThatIsExact) {
  constexpr int64_t kLlc = int64_t{32} << 20;
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
  EXPECT_EQ(ChooseCpuColdFlush(12000, kLlc, false), CpuColdFlush::kEvictBuffers);
  EXPECT_EQ(ChooseCpuColdFlush(2 * kLlc, kLlc, false), CpuColdFlush::kEvictBuffers);
#endif
  EXPECT_EQ(ChooseCpuColdFlush(2 * kLlc + 1, kLlc, false), CpuColdFlush::kWriteTwiceLlc);
  EXPECT_EQ(ChooseCpuColdFlush(12000, kLlc, true), CpuColdFlush::kWriteTwiceLlc);
}

// Cold samples with either flush leave the buffers intact: the next launch still verifies.
TEST(CpuColdFlush, ColdSamplesKeepTheData) {
  auto backend = MakeCpuBackend({.devices = 1, .threads_per_device = 2});
  absl::StatusOr<const KernelVariant*> found = FindKernel("add_f32");
  ASSERT_TRUE(found.ok()) << found.status();
  const KernelVariant* k = *found;
  ParallelPool pool(2);
  // 12 KB: lines evicted; 96 MiB: the write pass on hosts with an LLC under 48 MiB.
  for (int64_t n : {int64_t{1000}, int64_t{8} << 20}) {
    HostData data = GenerateHostData(*k, n, 7, &pool);
    auto session = backend->Open(0, *k, DefaultGeometry(*k, n), data);
    ASSERT_TRUE(session.ok()) << session.status();
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<SampleRecord> s = (*session)->ColdSample();
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_GT(s->seconds, 0);
      EXPECT_FALSE(s->clock_hz.has_value());  // no SM clock on the host
    }
    BufferContents out;
    ASSERT_TRUE((*session)->RunOnceAndRead(&out).ok());
    EXPECT_TRUE(Verify(*k, data, out, &pool).passed) << n;
  }
}

TEST(CpuBackendIdentity, NameBasedUuidsAreStableAndFollowRfc4122) {
  // Expected values from Python: uuid.uuid5(<gpubench namespace>, "node-a/0") and ".../1".
  EXPECT_EQ(SimulatedDeviceUuid("node-a", 0), "CPU-a9af5ced-50d8-59ef-988e-eda5e864cd0c");
  EXPECT_EQ(SimulatedDeviceUuid("node-a", 1), "CPU-04a26f3e-0ed6-524e-8fce-ea4b1a6eedb6");
  EXPECT_NE(SimulatedDeviceUuid("node-b", 0), SimulatedDeviceUuid("node-a", 0));

  CpuBackendOptions options;
  options.devices = 2;
  options.threads_per_device = 1;
  options.device_name = "Simulated H200";
  options.uuid_seed = "node-a";
  std::unique_ptr<Backend> backend = WithNodeName(MakeCpuBackend(options), "node-a");
  absl::StatusOr<DeviceInfo> d1 = backend->Describe(1);
  ASSERT_TRUE(d1.ok()) << d1.status();
  EXPECT_EQ(d1->uuid, SimulatedDeviceUuid("node-a", 1));
  EXPECT_EQ(d1->name, "Simulated H200");
  EXPECT_EQ(d1->node_name, "node-a");
  EXPECT_EQ(backend->name(), "cpu");
  EXPECT_EQ(backend->device_count(), 2);
  // A launch floor (a simulated device model of a fixed speed) holds for every launch.
  CpuBackendOptions slow;
  slow.threads_per_device = 1;
  slow.min_launch_seconds = 0.02;
  std::unique_ptr<Backend> throttled = MakeCpuBackend(slow);
  const KernelVariant& add = **FindKernel("add_f32");
  ParallelPool pool(1);
  const HostData data = GenerateHostData(add, 1000, 1, &pool);
  auto session = throttled->Open(0, add, DefaultGeometry(add, 1000), data);
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<SampleRecord> three = (*session)->HotSample(3);
  ASSERT_TRUE(three.ok());
  EXPECT_GE(three->seconds, 0.06);
  // Without a seed: the historical per-host names.
  EXPECT_EQ(MakeCpuBackend({})->Describe(0)->uuid, "cpu-0");
}

}  // namespace
}  // namespace gpubench
