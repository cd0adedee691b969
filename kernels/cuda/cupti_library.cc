#include "kernels/cuda/cupti_library.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace gpubench::cuda {

void* CuptiSymbol(void* lib, const char* name, std::string* error) {
  void* symbol = dlsym(lib, name);
  if (symbol == nullptr && error->empty()) {
    *error = absl::StrCat("libcupti has no ", name, " (CUPTI too old)");
  }
  return symbol;
}

void* CuptiLibrary(std::string* error) {
  struct Loaded {
    void* handle = nullptr;
    std::string error;
  };
  static const Loaded* loaded = [] {
    auto* l = new Loaded();
    // By name (LD_LIBRARY_PATH, ld.so.conf: the image's /usr/local/lib/gpubench), then where CUDA
    // installs put it: extras/CUPTI/lib64 is not on the loader's path.
    for (const char* name : {"libcupti.so.13", "libcupti.so",
                             "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                             "/usr/local/cuda/lib64/libcupti.so.13"}) {
      l->handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (l->handle != nullptr) break;
    }
    if (l->handle == nullptr) {
      l->error = absl::StrCat("libcupti.so.13 not found (", dlerror(),
                              "); install CUPTI or add it to LD_LIBRARY_PATH");
    }
    return l;
  }();
  if (loaded->handle == nullptr && error != nullptr) *error = loaded->error;
  return loaded->handle;
}

CUcontext CurrentContext(std::string* error) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q) !=
          cudaSuccess ||
      fn == nullptr) {
    *error = "cuCtxGetCurrent not available from the driver";
    return nullptr;
  }
  CUcontext ctx = nullptr;
  reinterpret_cast<CUresult (*)(CUcontext*)>(fn)(&ctx);
  if (ctx == nullptr) *error = "no current CUDA context";
  return ctx;
}

std::shared_mutex& CuptiGate() {
  static auto* gate = new std::shared_mutex();
  return *gate;
}

}  // namespace gpubench::cuda
