// PCIe link rates (kernels/pcie.h) and NVML's PCIe and peer-link queries (kernels/nvml.h) against
// the fake libnvidia-ml (tests/kernels/fake_nvml.cc), for the copy families.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "kernels/cpu_backend.h"
#include "kernels/nvml.h"
#include "kernels/nvml_backend.h"
#include "kernels/pcie.h"

namespace gpubench {
namespace {

TEST(PcieTest, PerLaneRatesByGeneration) {
  // Gen3 8 GT/s x 128/130 / 8 bits = 0.985 GB/s per lane; Gen5 x16 = 63.0 GB/s per direction.
  EXPECT_NEAR(*PcieLinkBytesPerSecond(3, 1), 8e9 * 128 / 130 / 8, 1);
  EXPECT_NEAR(*PcieLinkBytesPerSecond(4, 16), 31.5e9, 0.1e9);
  EXPECT_NEAR(*PcieLinkBytesPerSecond(5, 16), 63.0e9, 0.1e9);
  EXPECT_NEAR(*PcieLinkBytesPerSecond(1, 16), 4.0e9, 1);    // 2.5 GT/s, 8b/10b
  EXPECT_NEAR(*PcieLinkBytesPerSecond(6, 16), 121.0e9, 0.1e9);  // 64 GT/s, 242/256 FLIT
  EXPECT_EQ(PcieGenerationRate(6)->encoding, std::string("FLIT (242 of 256 bytes)"));
  EXPECT_EQ(PcieLinkBytesPerSecond(0, 16).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PcieLinkBytesPerSecond(9, 16).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PcieLinkBytesPerSecond(5, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PcieTest, RateFromMaxWithCurrentReported) {
  // Idle GPUs retrain down (Gen1): the rate comes from the maximum and the note says so.
  PcieLinkFacts idle = ChoosePcieRate(1, 16, 5, 16);
  EXPECT_EQ(idle.rate_source, "max");
  EXPECT_EQ(idle.generation, 5);
  EXPECT_NEAR(idle.bytes_per_second, 63.0e9, 0.1e9);
  EXPECT_NE(idle.note.find("Gen1 x16"), std::string::npos) << idle.note;
  PcieLinkFacts full = ChoosePcieRate(5, 16, 5, 16);
  EXPECT_EQ(full.note, "");
  PcieLinkFacts no_max = ChoosePcieRate(4, 8, 0, 0);
  EXPECT_EQ(no_max.rate_source, "current");
  EXPECT_NEAR(no_max.bytes_per_second, 15.75e9, 0.01e9);
  PcieLinkFacts none = ChoosePcieRate(0, 0, 0, 0);
  EXPECT_EQ(none.rate_source, "");
  EXPECT_EQ(none.bytes_per_second, 0);
  EXPECT_NE(none.note.find("unknown"), std::string::npos);
}

class NvmlLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"FAKE_NVML_PCIE", "FAKE_NVML_NVLINKS", "FAKE_NVML_UNKNOWN_UUID"}) {
      unsetenv(v);
    }
    absl::StatusOr<std::shared_ptr<Nvml>> nvml = Nvml::Load(FAKE_NVML_LIBRARY);
    ASSERT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *nvml;
  }
  std::shared_ptr<Nvml> nvml_;
};

TEST_F(NvmlLinkTest, ReadsPcieGenerationAndWidth) {
  setenv("FAKE_NVML_PCIE", "1,16,5,16", 1);
  absl::StatusOr<NvmlPcieLink> link = nvml_->PcieLink("GPU-0000");
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(link->current_generation, 1);
  EXPECT_EQ(link->current_width, 16);
  EXPECT_EQ(link->max_generation, 5);
  EXPECT_EQ(link->max_width, 16);
  setenv("FAKE_NVML_PCIE", "4,8,0,0", 1);  // the maximum queries fail
  link = nvml_->PcieLink("GPU-0000");
  ASSERT_TRUE(link.ok());
  EXPECT_EQ(link->max_generation, 0);
  EXPECT_EQ(link->current_width, 8);
  setenv("FAKE_NVML_UNKNOWN_UUID", "GPU-gone", 1);
  EXPECT_EQ(nvml_->PcieLink("GPU-gone").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(NvmlLinkTest, PeerLinkOverNvlinkOrNot) {
  absl::StatusOr<NvmlPeerLink> pcie = nvml_->PeerLink("GPU-a", "GPU-b");
  ASSERT_TRUE(pcie.ok()) << pcie.status();
  EXPECT_FALSE(pcie->nvlink);
  EXPECT_EQ(pcie->nvlink_status, "not supported");
  EXPECT_EQ(pcie->active_nvlinks, 0);
  setenv("FAKE_NVML_NVLINKS", "18", 1);
  absl::StatusOr<NvmlPeerLink> nvlink = nvml_->PeerLink("GPU-a", "GPU-b");
  ASSERT_TRUE(nvlink.ok());
  EXPECT_TRUE(nvlink->nvlink);
  EXPECT_EQ(nvlink->nvlink_status, "ok");
  EXPECT_EQ(nvlink->active_nvlinks, 18);
}

TEST_F(NvmlLinkTest, DeviceSnapshotCarriesTheLinkAndItsRate) {
  setenv("FAKE_NVML_PCIE", "1,16,5,16", 1);  // an idle H200: trained down to Gen1 when read
  std::unique_ptr<Backend> backend = WithNvmlFacts(MakeCpuBackend({.devices = 2}), nvml_);
  absl::StatusOr<DeviceInfo> d = backend->Describe(0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->pcie_link_current_generation, 1);
  EXPECT_EQ(d->pcie_link_max_generation, 5);
  EXPECT_EQ(d->pcie_link_max_width, 16);
  EXPECT_EQ(d->pcie_link_rate_source, "max");
  EXPECT_NEAR(d->pcie_link_bytes_per_second, 63.0e9, 0.1e9);
  // A device NVML does not know keeps no link facts.
  setenv("FAKE_NVML_UNKNOWN_UUID", "cpu-1", 1);
  absl::StatusOr<DeviceInfo> unknown = backend->Describe(1);
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->pcie_link_bytes_per_second, 0);
  EXPECT_EQ(unknown->pcie_link_rate_source, "");
}

}  // namespace
}  // namespace gpubench
