// A stand-in libnvidia-ml.so.1 for CPU-only tests of the NVML loader (kernels/nvml.cc): the same
// C symbols with NVML's ABI, behaviour set through environment variables read at each call:
//   FAKE_NVML_INIT_ERROR      nvmlInit_v2 returns this code (e.g. 9: driver not loaded)
//   FAKE_NVML_UNKNOWN_UUID    this UUID is not found (6); every other UUID is "the" fake GPU
//   FAKE_NVML_PIDS            comma-separated PIDs of compute processes on the GPU
//   FAKE_NVML_REASONS         clock-event reasons mask (decimal or 0x hex)
//   FAKE_NVML_PCIE            "current_gen,current_width,max_gen,max_width" (default 5,16,5,16);
//                             a 0 makes that query fail (NOT_SUPPORTED)
//   FAKE_NVML_NVLINKS         active NVLinks; > 0 also makes the P2P NVLink status OK
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct ProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};

int g_device_token = 0;

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

std::vector<unsigned int> Pids() {
  std::vector<unsigned int> pids;
  if (const char* list = Env("FAKE_NVML_PIDS")) {
    std::string s(list);
    size_t start = 0;
    while (start < s.size()) {
      size_t comma = s.find(',', start);
      if (comma == std::string::npos) comma = s.size();
      pids.push_back(static_cast<unsigned int>(std::stoul(s.substr(start, comma - start))));
      start = comma + 1;
    }
  }
  return pids;
}

// FAKE_NVML_PCIE's field `i`.
unsigned int PcieField(int i) {
  unsigned int f[4] = {5, 16, 5, 16};
  if (const char* v = Env("FAKE_NVML_PCIE")) {
    std::sscanf(v, "%u,%u,%u,%u", &f[0], &f[1], &f[2], &f[3]);
  }
  return f[i];
}

int PcieQuery(int i, unsigned int* value) {
  *value = PcieField(i);
  return *value == 0 ? 3 : 0;  // NVML_ERROR_NOT_SUPPORTED
}

unsigned int ActiveNvlinks() {
  const char* v = Env("FAKE_NVML_NVLINKS");
  return v != nullptr ? static_cast<unsigned int>(std::atoi(v)) : 0;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  const char* e = Env("FAKE_NVML_INIT_ERROR");
  return e != nullptr ? std::atoi(e) : 0;
}
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int r) {
  switch (r) {
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}
int nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  std::snprintf(version, length, "%s", "580.159.04");
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  const char* unknown = Env("FAKE_NVML_UNKNOWN_UUID");
  if (unknown != nullptr && std::strcmp(uuid, unknown) == 0) return 6;
  *device = &g_device_token;
  return 0;
}
int nvmlDeviceGetIndex(void*, unsigned int* index) {
  *index = 3;
  return 0;
}
int nvmlDeviceGetName(void*, char* name, unsigned int length) {
  std::snprintf(name, length, "%s", "NVIDIA H200");
  return 0;
}
int nvmlDeviceGetPciInfo_v3(void*, PciInfo* pci) {
  std::memset(pci, 0, sizeof(*pci));
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%s", "0000:19:00.0");
  std::snprintf(pci->busId, sizeof(pci->busId), "%s", "00000000:19:00.0");
  pci->bus = 0x19;
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void*, unsigned int* count, ProcessInfo* infos) {
  const std::vector<unsigned int> pids = Pids();
  if (*count < pids.size()) {
    *count = static_cast<unsigned int>(pids.size());
    return 7;
  }
  for (size_t i = 0; i < pids.size(); ++i) infos[i] = {pids[i], 512ull << 20, 0, 0};
  *count = static_cast<unsigned int>(pids.size());
  return 0;
}
int nvmlDeviceGetGraphicsRunningProcesses_v3(void*, unsigned int* count, ProcessInfo*) {
  *count = 0;
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void*, unsigned long long* mask) {
  const char* r = Env("FAKE_NVML_REASONS");
  *mask = r != nullptr ? std::strtoull(r, nullptr, 0) : 0;
  return 0;
}

int nvmlDeviceGetCurrPcieLinkGeneration(void*, unsigned int* v) { return PcieQuery(0, v); }
int nvmlDeviceGetCurrPcieLinkWidth(void*, unsigned int* v) { return PcieQuery(1, v); }
int nvmlDeviceGetMaxPcieLinkGeneration(void*, unsigned int* v) { return PcieQuery(2, v); }
int nvmlDeviceGetMaxPcieLinkWidth(void*, unsigned int* v) { return PcieQuery(3, v); }
int nvmlDeviceGetP2PStatus(void*, void*, int index, int* status) {
  if (index != 2) return 2;  // only the NVLink index is used
  *status = ActiveNvlinks() > 0 ? 0 : 5;  // OK or NOT_SUPPORTED
  return 0;
}
int nvmlDeviceGetNvLinkState(void*, unsigned int link, int* active) {
  if (link >= 18) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *active = link < ActiveNvlinks() ? 1 : 0;
  return 0;
}

}  // extern "C"
