// --tuned_defaults_file: what Autotune applies survives a restart, keyed by GPU UUID; a bad file
// fails at start-up with the entry named.
#include "server/service/tuned_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/cpu_backend.h"

namespace gpubench {
namespace {

using ::testing::HasSubstr;

class TunedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpubench_tuned_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "tuned.json").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::unique_ptr<Engine> NewEngine() {  // a "restart": fresh engine, nothing tuned
    return std::make_unique<Engine>(MakeCpuBackend({.devices = 2, .threads_per_device = 1}),
                                    ServerLimits());
  }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::string Read() {
    std::stringstream s;
    s << std::ifstream(path_).rdbuf();
    return s.str();
  }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(TunedStoreTest, MissingFileIsEmptyAndApplyWritesIt) {
  auto engine = NewEngine();
  auto store = TunedDefaultsStore::Open(path_, engine.get());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->applied_at_start(), 0);
  const KernelVariant& k = **FindKernel("add_f32_bulk");
  ASSERT_TRUE(engine->tuned_defaults().Apply(1, k, TunedLaunch{128, 3}, 1 << 26, 4.4e12).ok());
  EXPECT_EQ(engine->tuned_defaults().Get(1, "add_f32_bulk")->block_size, 128);
  const std::string json = Read();
  EXPECT_THAT(json, HasSubstr("\"gpu_uuid\": \"cpu-1\""));
  EXPECT_THAT(json, HasSubstr("\"items_per_thread\": 3"));
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
}

// A link planted at the predictable "<file>.tmp" (by whoever can write the directory) is not
// followed: its target stays as it was, and the file is written whole, beside it.
TEST_F(TunedStoreTest, PlantedTmpLinkIsNotFollowed) {
  const std::string victim = (dir_ / "victim").string();
  std::ofstream(victim) << "precious\n";
  std::filesystem::create_symlink(victim, path_ + ".tmp");
  std::filesystem::create_symlink(dir_ / "absent", path_ + ".tmp.dangling");
  auto engine = NewEngine();
  auto store = TunedDefaultsStore::Open(path_, engine.get());
  ASSERT_TRUE(store.ok()) << store.status();
  const KernelVariant& k = **FindKernel("add_f32_bulk");
  ASSERT_TRUE(engine->tuned_defaults().Apply(0, k, TunedLaunch{256, 2}, 1 << 20, 1e12).ok());
  std::stringstream v;
  v << std::ifstream(victim).rdbuf();
  EXPECT_EQ(v.str(), "precious\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "absent"));
  EXPECT_TRUE(std::filesystem::is_symlink(path_ + ".tmp"));  // left alone
  EXPECT_FALSE(std::filesystem::is_symlink(path_));
  EXPECT_THAT(Read(), HasSubstr("\"block_size\": 256"));
  // Nothing but the file, the planted links and the victim: no temporary left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 4);
}

TEST_F(TunedStoreTest, RestartAppliesByUuidAndReplacesOnReapply) {
  {
    auto engine = NewEngine();
    auto store = TunedDefaultsStore::Open(path_, engine.get());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(engine->tuned_defaults().Apply(1, **FindKernel("add_f16_tuned"), {512, 16}, 1000, 1e9).ok());
    ASSERT_TRUE(engine->tuned_defaults().Apply(1, **FindKernel("add_f16_tuned"), {256, 8}, 1000, 2e9).ok());
    ASSERT_TRUE(engine->tuned_defaults().Apply(0, **FindKernel("add_f16x8_pack"), {64, 0}, 1000, 1e9).ok());
  }
  auto engine = NewEngine();
  auto store = TunedDefaultsStore::Open(path_, engine.get());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->applied_at_start(), 2);  // the re-apply replaced the first entry
  std::optional<TunedLaunch> t = engine->tuned_defaults().Get(1, "add_f16_tuned");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->block_size, 256);
  EXPECT_EQ(t->items_per_thread, 8);
  EXPECT_FALSE(engine->tuned_defaults().Get(0, "add_f16_tuned").has_value());
  RunRequest r;
  r.kernel = "add_f16x8_pack";
  r.elements = 1000;
  absl::StatusOr<RunSpec> spec = engine->Resolve(r);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->geometry.block_size, 64);
  EXPECT_EQ(spec->block_size_source, "tuned");
}

TEST_F(TunedStoreTest, OtherGpusAreKeptButNotApplied) {
  Write(R"({"defaults": [{"gpu_uuid": "GPU-elsewhere", "kernel": "add_f32_tuned",
            "block_size": 256, "items_per_thread": 8}]})");
  auto engine = NewEngine();
  auto store = TunedDefaultsStore::Open(path_, engine.get());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->applied_at_start(), 0);
  ASSERT_TRUE(engine->tuned_defaults().Apply(0, **FindKernel("add_f32_tuned"), {768, 4}, 1, 1).ok());
  EXPECT_THAT(Read(), HasSubstr("GPU-elsewhere"));
}

TEST_F(TunedStoreTest, BadFilesFailWithTheEntryNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{not json", "--tuned_defaults_file"},
      {R"({"defaults": [{"gpu_uuid": "cpu-0", "kernel": "add_f64", "block_size": 256}]})",
       "unknown kernel 'add_f64'"},
      {R"({"defaults": [{"gpu_uuid": "cpu-0", "kernel": "cub_add_f32", "block_size": 256}]})",
       "picks its own launch configuration"},
      {R"({"defaults": [{"gpu_uuid": "cpu-0", "kernel": "add_f32", "block_size": 100}]})",
       "block_size 100"},
      {R"({"defaults": [{"gpu_uuid": "cpu-0", "kernel": "add_f32_tuned", "block_size": 256,
            "items_per_thread": 12}]})",
       "entry 1 (add_f32_tuned on cpu-0): items_per_thread 12"},
  };
  for (const auto& [text, message] : cases) {
    Write(text);
    auto engine = NewEngine();
    auto store = TunedDefaultsStore::Open(path_, engine.get());
    ASSERT_FALSE(store.ok()) << text;
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(store.status().message()), HasSubstr(message)) << text;
  }
}

TEST_F(TunedStoreTest, UnwritableFileKeepsTheValueInMemoryAndSaysSo) {
  auto engine = NewEngine();
  const auto later_removed = dir_ / "later-removed";
  std::filesystem::create_directories(later_removed);
  auto store = TunedDefaultsStore::Open((later_removed / "tuned.json").string(), engine.get());
  ASSERT_TRUE(store.ok()) << store.status();
  std::filesystem::remove_all(later_removed);  // the location goes away after start-up
  absl::Status s = engine->tuned_defaults().Apply(0, **FindKernel("add_f32"), {128, 0}, 1, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(engine->tuned_defaults().Get(0, "add_f32")->block_size, 128);
}

// An unusable location is found at start-up, not at the first apply, and
// a directory is refused with a message (it used to abort with an uncaught exception).
TEST_F(TunedStoreTest, UnusableLocationsFailAtOpen) {
  auto engine = NewEngine();
  auto missing = TunedDefaultsStore::Open((dir_ / "missing-dir" / "tuned.json").string(),
                                          engine.get());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("cannot create"), absl::string_view::npos);
  auto directory = TunedDefaultsStore::Open(dir_.string(), engine.get());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("is a directory"), absl::string_view::npos);
}

}  // namespace
}  // namespace gpubench
