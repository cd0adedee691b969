// The theoretical data rate of a PCI Express link, from its generation and width (as NVML reports
// them: kernels/nvml.h). Host-only; no CUDA.
#ifndef GPUBENCH_KERNELS_PCIE_H_
#define GPUBENCH_KERNELS_PCIE_H_

#include <string>

#include "absl/status/statusor.h"

namespace gpubench {

// The per-lane signalling of one PCIe generation.
struct PcieGeneration {
  int generation = 0;
  double transfers_per_second = 0;  // per lane (GT/s x 1e9)
  double encoding_efficiency = 0;   // payload bits per transferred bit (line code / FLIT framing)
  const char* encoding = "";        // in words, e.g. "128b/130b"
};

// Generation 1 to 7; INVALID_ARGUMENT otherwise (0 is what NVML reports where it cannot say).
absl::StatusOr<PcieGeneration> PcieGenerationRate(int generation);

// Bytes per second ONE direction of a link of `generation` and `width` lanes can carry after line
// coding: transfers/s x efficiency x width / 8. Transaction-layer overheads (TLP headers, DLLPs,
// flow control; about 5-15% at the 256-512-byte payloads GPUs use) are not deducted: this is the
// link's theoretical rate, the reference nvbandwidth and the PCI-SIG figures use.
absl::StatusOr<double> PcieLinkBytesPerSecond(int generation, int width);

// The link a copy ran over, as NVML described it, and which reading the rate is taken from.
struct PcieLinkFacts {
  int current_generation = 0;  // 0: unknown
  int current_width = 0;
  int max_generation = 0;
  int max_width = 0;
  // The reading the theoretical rate comes from: "max" (the generation and width the GPU and the
  // slot support: what a healthy link delivers under load; a degraded link then shows as a low
  // percentage) or "current" (only when NVML gives no maximum). Empty: no rate.
  std::string rate_source;
  int generation = 0;  // of rate_source
  int width = 0;
  double bytes_per_second = 0;  // one direction; 0: unknown
  std::string note;  // e.g. why there is no rate, or that the link runs below its maximum now
};

// Chooses the rate from NVML's readings (0 where a reading failed), as PcieLinkFacts says.
PcieLinkFacts ChoosePcieRate(int current_generation, int current_width, int max_generation,
                             int max_width);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_PCIE_H_
