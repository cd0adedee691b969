// A Backend decorator whose Describe adds NVML's facts (NVML index, PCI bus id in NVML's format,
// kernel driver version) to the devices NVML knows, so every consumer of DeviceInfo (ListDevices,
// run results, metrics) carries the labels dcgm-exporter uses.
#ifndef GPUBENCH_KERNELS_NVML_BACKEND_H_
#define GPUBENCH_KERNELS_NVML_BACKEND_H_

#include <memory>

#include "kernels/backend.h"
#include "kernels/nvml.h"

namespace gpubench {

std::unique_ptr<Backend> WithNvmlFacts(std::unique_ptr<Backend> inner,
                                       std::shared_ptr<const Nvml> nvml);

}  // namespace gpubench

#endif  // GPUBENCH_KERNELS_NVML_BACKEND_H_
