#include "kernels/pcie.h"

#include "absl/strings/str_cat.h"

namespace gpubench {
namespace {

// PCI-SIG base specifications, per lane and direction:
//   Gen1 2.5 GT/s and Gen2 5.0 GT/s: 8b/10b line code (PCIe 1.0a / 2.0, section 4.2).
//   Gen3 8 GT/s, Gen4 16 GT/s, Gen5 32 GT/s: 128b/130b line code (PCIe 3.0 section 4.2.2;
//   4.0 and 5.0 double the rate and keep the code).
//   Gen6 64 GT/s (PAM4) and Gen7 128 GT/s: FLIT mode, no line code; each 256-byte flit carries
//   236 bytes of TLPs and 6 of DLLP, plus 8 bytes CRC and 6 bytes FEC (PCIe 6.0 section 4.2.3.4).
//   The data link layer's 242 of 256 bytes count as payload here, as the 128b/130b framing does
//   for Gen3-5; TLP headers are deducted in neither case.
constexpr PcieGeneration kGenerations[] = {
    {1, 2.5e9, 8.0 / 10.0, "8b/10b"},
    {2, 5.0e9, 8.0 / 10.0, "8b/10b"},
    {3, 8.0e9, 128.0 / 130.0, "128b/130b"},
    {4, 16.0e9, 128.0 / 130.0, "128b/130b"},
    {5, 32.0e9, 128.0 / 130.0, "128b/130b"},
    {6, 64.0e9, 242.0 / 256.0, "FLIT (242 of 256 bytes)"},
    {7, 128.0e9, 242.0 / 256.0, "FLIT (242 of 256 bytes)"},
};

}  // namespace

absl::StatusOr<PcieGeneration> PcieGenerationRate(int generation) {
  for (const PcieGeneration& g : kGenerations) {
    if (g.generation == generation) return g;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("PCIe generation ", generation, " is not known (1 to 7 are)"));
}

absl::StatusOr<double> PcieLinkBytesPerSecond(int generation, int width) {
  absl::StatusOr<PcieGeneration> g = PcieGenerationRate(generation);
  if (!g.ok()) return g.status();
  if (width <= 0 || width > 32) {
    return absl::InvalidArgumentError(absl::StrCat("PCIe link width x", width, " is not valid"));
  }
  return g->transfers_per_second * g->encoding_efficiency * width / 8.0;
}

PcieLinkFacts ChoosePcieRate(int current_generation, int current_width, int max_generation,
                             int max_width) {
  PcieLinkFacts f;
  f.current_generation = current_generation;
  f.current_width = current_width;
  f.max_generation = max_generation;
  f.max_width = max_width;
  const bool have_max = max_generation > 0 && max_width > 0;
  const bool have_current = current_generation > 0 && current_width > 0;
  if (!have_max && !have_current) {
    f.note = "PCIe link generation and width unknown (NVML not loaded or not answering)";
    return f;
  }
  f.rate_source = have_max ? "max" : "current";
  f.generation = have_max ? max_generation : current_generation;
  f.width = have_max ? max_width : current_width;
  absl::StatusOr<double> rate = PcieLinkBytesPerSecond(f.generation, f.width);
  if (!rate.ok()) {
    f.note = std::string(rate.status().message());
    f.rate_source.clear();
    return f;
  }
  f.bytes_per_second = *rate;
  if (have_max && have_current &&
      (current_generation < max_generation || current_width < max_width)) {
    f.note = absl::StrCat("the link ran at Gen", current_generation, " x", current_width,
                          " when read, below its Gen", max_generation, " x", max_width,
                          " maximum (idle power saving retrains it down between transfers; a "
                          "width below the maximum under load means a degraded slot or riser)");
  }
  return f;
}

}  // namespace gpubench
