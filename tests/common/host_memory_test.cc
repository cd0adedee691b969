#include "common/host_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpubench {
namespace {

class HostMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("gpubench_host_memory_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "cgroup");
    Write("meminfo", "MemTotal:       16000000 kB\nMemAvailable:    8000000 kB\n");
    Write("self_cgroup", "0::/\n");
    sources_.meminfo_path = (root_ / "meminfo").string();
    sources_.cgroup_root = (root_ / "cgroup").string();
    sources_.self_cgroup_path = (root_ / "self_cgroup").string();
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::filesystem::path& relative, const std::string& text) {
    std::filesystem::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  std::filesystem::path root_;
  HostMemorySources sources_;
};

TEST_F(HostMemoryTest, NoCgroupLimitMeansMemAvailable) {
  const HostMemoryBudget b = ReadHostMemoryBudget(sources_);
  EXPECT_EQ(b.mem_available_bytes, int64_t{8000000} * 1024);
  EXPECT_FALSE(b.cgroup_limit_bytes.has_value());
  EXPECT_EQ(b.available_bytes(), int64_t{8000000} * 1024);
}

TEST_F(HostMemoryTest, CgroupV2LimitMinusWorkingSet) {
  Write("cgroup/memory.max", "2147483648\n");
  Write("cgroup/memory.current", "1073741824\n");
  Write("cgroup/memory.stat", "anon 100\ninactive_file 536870912\nactive_file 5\n");
  const HostMemoryBudget b = ReadHostMemoryBudget(sources_);
  EXPECT_EQ(b.cgroup_limit_bytes, int64_t{2} << 30);
  EXPECT_EQ(b.cgroup_usage_bytes, int64_t{512} << 20);  // page cache that can be dropped is free
  EXPECT_EQ(b.available_bytes(), int64_t{1536} << 20);
  EXPECT_NE(b.Describe().find("cgroup limit 2.00 GiB"), std::string::npos) << b.Describe();
}

TEST_F(HostMemoryTest, CgroupV2MaxIsNoLimit) {
  Write("cgroup/memory.max", "max\n");
  EXPECT_FALSE(ReadHostMemoryBudget(sources_).cgroup_limit_bytes.has_value());
}

TEST_F(HostMemoryTest, CgroupV2OfTheProcessPath) {
  Write("self_cgroup", "0::/kubepods/pod1/c1\n");
  Write("cgroup/kubepods/pod1/c1/memory.max", "1073741824\n");
  Write("cgroup/kubepods/pod1/c1/memory.current", "0\n");
  EXPECT_EQ(ReadHostMemoryBudget(sources_).cgroup_limit_bytes, int64_t{1} << 30);
}

TEST_F(HostMemoryTest, CgroupV1LimitAndUnlimited) {
  Write("self_cgroup", "12:memory:/docker/abc\n11:cpu:/docker/abc\n");
  Write("cgroup/memory/docker/abc/memory.limit_in_bytes", "4294967296\n");
  Write("cgroup/memory/docker/abc/memory.usage_in_bytes", "3221225472\n");
  Write("cgroup/memory/docker/abc/memory.stat", "cache 5\ntotal_inactive_file 1073741824\n");
  HostMemoryBudget b = ReadHostMemoryBudget(sources_);
  EXPECT_EQ(b.cgroup_limit_bytes, int64_t{4} << 30);
  EXPECT_EQ(b.available_bytes(), int64_t{2} << 30);
  Write("cgroup/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
  b = ReadHostMemoryBudget(sources_);
  EXPECT_FALSE(b.cgroup_limit_bytes.has_value());
}

TEST_F(HostMemoryTest, SmallerOfTheTwo) {
  Write("cgroup/memory.max", std::to_string(int64_t{64} << 30) + "\n");
  Write("cgroup/memory.current", "0\n");
  EXPECT_EQ(ReadHostMemoryBudget(sources_).available_bytes(), int64_t{8000000} * 1024);
}

// A systemd slice's MemoryMax or a pod-level limit above the process's own cgroup binds too: the
// level with the least left wins, and Describe names it.
TEST_F(HostMemoryTest, CgroupV2AncestorLimitBinds) {
  Write("self_cgroup", "0::/kubepods/pod1/c1\n");
  Write("cgroup/kubepods/pod1/c1/memory.max", "max\n");  // the container: no limit of its own
  Write("cgroup/kubepods/pod1/c1/memory.current", std::to_string(int64_t{100} << 20) + "\n");
  Write("cgroup/kubepods/pod1/memory.max", std::to_string(int64_t{1} << 30) + "\n");
  Write("cgroup/kubepods/pod1/memory.current", std::to_string(int64_t{700} << 20) + "\n");
  Write("cgroup/kubepods/memory.max", std::to_string(int64_t{4} << 30) + "\n");
  Write("cgroup/kubepods/memory.current", std::to_string(int64_t{1} << 30) + "\n");
  const HostMemoryBudget b = ReadHostMemoryBudget(sources_);
  EXPECT_EQ(b.cgroup_levels_read, 3);  // the root has no memory.max, as on a real host
  EXPECT_EQ(b.cgroup_limit_bytes, int64_t{1} << 30);
  EXPECT_EQ(b.cgroup_usage_bytes, int64_t{700} << 20);
  EXPECT_EQ(b.available_bytes(), int64_t{324} << 20);
  EXPECT_NE(b.Describe().find("at /kubepods/pod1 "), std::string::npos) << b.Describe();
}

// The level with the least left binds, not the one with the smallest limit.
TEST_F(HostMemoryTest, CgroupV2LeastLeftNotSmallestLimit) {
  Write("self_cgroup", "0::/a/b\n");
  Write("cgroup/a/b/memory.max", std::to_string(int64_t{1} << 30) + "\n");
  Write("cgroup/a/b/memory.current", "0\n");
  Write("cgroup/a/memory.max", std::to_string(int64_t{2} << 30) + "\n");
  Write("cgroup/a/memory.current", std::to_string(int64_t{1800} << 20) + "\n");  // a sibling's
  const HostMemoryBudget b = ReadHostMemoryBudget(sources_);
  EXPECT_EQ(b.available_bytes(), int64_t{248} << 20);
  EXPECT_EQ(b.cgroup_dir, "/a");
}

TEST_F(HostMemoryTest, CgroupV1AncestorAndHierarchicalLimit) {
  Write("self_cgroup", "4:memory:/slice/job\n");
  Write("cgroup/memory/slice/job/memory.limit_in_bytes", "9223372036854771712\n");
  Write("cgroup/memory/slice/job/memory.usage_in_bytes", std::to_string(int64_t{64} << 20));
  Write("cgroup/memory/slice/memory.limit_in_bytes", std::to_string(int64_t{3} << 30));
  Write("cgroup/memory/slice/memory.usage_in_bytes", std::to_string(int64_t{1} << 30));
  HostMemoryBudget b = ReadHostMemoryBudget(sources_);
  EXPECT_EQ(b.cgroup_limit_bytes, int64_t{3} << 30);
  EXPECT_EQ(b.available_bytes(), int64_t{2} << 30);
  // A limit above a cgroup namespace's root shows only in memory.stat.
  Write("cgroup/memory/slice/job/memory.stat",
        "cache 0\nhierarchical_memory_limit " + std::to_string(int64_t{512} << 20) + "\n");
  b = ReadHostMemoryBudget(sources_);
  EXPECT_EQ(b.cgroup_limit_bytes, int64_t{512} << 20);
  EXPECT_EQ(b.available_bytes(), int64_t{448} << 20);
}

TEST_F(HostMemoryTest, NoneReadsNoCgroup) {
  Write("cgroup/memory.max", "1048576\n");
  sources_.cgroup_root = kNoCgroupRoot;
  const HostMemoryBudget b = ReadHostMemoryBudget(sources_);
  EXPECT_FALSE(b.cgroup_limit_bytes.has_value());
  EXPECT_EQ(b.available_bytes(), int64_t{8000000} * 1024);
}

// A --cgroup_root that holds no memory cgroup is refused, never read as "no limit".
TEST_F(HostMemoryTest, CheckCgroupRootRefusesWhatItCannotRead) {
  const std::string root = sources_.cgroup_root;
  EXPECT_EQ(CheckCgroupRoot(root).code(), absl::StatusCode::kInvalidArgument);  // empty dir
  EXPECT_NE(CheckCgroupRoot(root).message().find("no readable memory cgroup"), std::string::npos);
  EXPECT_EQ(CheckCgroupRoot(root + "/missing").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(CheckCgroupRoot(root + "/missing").message().find("is not a directory"),
            std::string::npos);
  Write("cgroup/file", "x");
  EXPECT_EQ(CheckCgroupRoot(root + "/file").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckCgroupRoot(kNoCgroupRoot).ok());
  Write("cgroup/cgroup.controllers", "cpu memory\n");  // v2
  EXPECT_TRUE(CheckCgroupRoot(root).ok());
  std::filesystem::remove(root_ / "cgroup/cgroup.controllers");
  Write("cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1
  EXPECT_TRUE(CheckCgroupRoot(root).ok());
}

// The default: this host's cgroup mount where it holds a memory cgroup, else MemAvailable only;
// an explicit choice is kept as given (CheckCgroupRoot then judges it).
TEST(ResolveCgroupRoot, AutoFallsBackOnlyWhenTheMountHasNoMemoryCgroup) {
  const std::string resolved = ResolveCgroupRoot(kAutoCgroupRoot);
  EXPECT_EQ(resolved, CheckCgroupRoot("/sys/fs/cgroup").ok() ? "/sys/fs/cgroup" : kNoCgroupRoot);
  EXPECT_EQ(ResolveCgroupRoot("/some/where"), "/some/where");
  EXPECT_EQ(ResolveCgroupRoot(kNoCgroupRoot), kNoCgroupRoot);
}

}  // namespace
}  // namespace gpubench
