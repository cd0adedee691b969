#include "kernels/cuda/cupti_activity.h"

#include <cupti_activity.h>
#include <cupti_result.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cupti_library.h"

namespace gpubench::cuda {
namespace {

// Ours among the external correlation kinds (CUSTOM0/1 are the ones other tools pick first).
constexpr CUpti_ExternalCorrelationKind kRegionKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
// Each buffer CUPTI asks for; a cold sample's region produces a handful of records (~1 KB), a
// hot batch of 256 launches a few hundred KB. Buffers are freed as soon as CUPTI hands them back.
constexpr size_t kBufferBytes = size_t{4} << 20;
// Operations whose region is not known yet (the L2 flush, the blocking kernel, warm-up launches
// never get one) are dropped wholesale past this many: a bound on memory, not a cache.
constexpr size_t kMaxUnmatchedCalls = size_t{1} << 16;
// Kernel records kept for finding foreign kernels (ActivityRecorder::Span::foreign_kernels):
// each TakeSpan forgets its context's past ones, so this bounds only a context nobody takes
// spans of (a hot batch of 256 launches keeps 256).
constexpr size_t kMaxKernelRecords = size_t{1} << 14;
// The GPU operations counted: enabled for the recording run's context only, so that other
// devices' runs are not traced (where CUPTI refuses that, for every context). CDP_KERNEL records
// (kernels launched from the device) come with CONCURRENT_KERNEL; they cannot be enabled apart.
constexpr CUpti_ActivityKind kContextKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET};
// The API records (runtime and driver calls, host-side only) that CUPTI needs enabled to emit the
// external-correlation records naming each call's region: process-wide.
constexpr CUpti_ActivityKind kGlobalKinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME,
                                               CUPTI_ACTIVITY_KIND_DRIVER,
                                               CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

// The CUPTI entry points used, resolved by CuptiSymbol; the declarations come from the headers.
struct Api {
#define GPUBENCH_CUPTI_FN(name) decltype(&::name) name = nullptr
  GPUBENCH_CUPTI_FN(cuptiGetResultString);
  GPUBENCH_CUPTI_FN(cuptiActivityRegisterCallbacks);
  GPUBENCH_CUPTI_FN(cuptiActivityEnable);
  GPUBENCH_CUPTI_FN(cuptiActivityDisable);
  GPUBENCH_CUPTI_FN(cuptiActivityEnableContext);
  GPUBENCH_CUPTI_FN(cuptiActivityDisableContext);
  GPUBENCH_CUPTI_FN(cuptiActivityFlushAll);
  GPUBENCH_CUPTI_FN(cuptiActivityGetNextRecord);
  GPUBENCH_CUPTI_FN(cuptiActivityPushExternalCorrelationId);
  GPUBENCH_CUPTI_FN(cuptiActivityPopExternalCorrelationId);
  GPUBENCH_CUPTI_FN(cuptiGetContextId);
#undef GPUBENCH_CUPTI_FN
  std::string load_error;
};

const Api& LoadApi() {
  static const Api* api = [] {
    auto* a = new Api();
    void* lib = CuptiLibrary(&a->load_error);
    if (lib == nullptr) return a;
#define GPUBENCH_LOAD(name) \
  a->name = reinterpret_cast<decltype(a->name)>(CuptiSymbol(lib, #name, &a->load_error))
    GPUBENCH_LOAD(cuptiGetResultString);
    GPUBENCH_LOAD(cuptiActivityRegisterCallbacks);
    GPUBENCH_LOAD(cuptiActivityEnable);
    GPUBENCH_LOAD(cuptiActivityDisable);
    GPUBENCH_LOAD(cuptiActivityEnableContext);
    GPUBENCH_LOAD(cuptiActivityDisableContext);
    GPUBENCH_LOAD(cuptiActivityFlushAll);
    GPUBENCH_LOAD(cuptiActivityGetNextRecord);
    GPUBENCH_LOAD(cuptiActivityPushExternalCorrelationId);
    GPUBENCH_LOAD(cuptiActivityPopExternalCorrelationId);
    GPUBENCH_LOAD(cuptiGetContextId);
#undef GPUBENCH_LOAD
    return a;
  }();
  return *api;
}

std::string Describe(const Api& api, const char* step, CUptiResult r) {
  const char* text = "unknown";
  api.cuptiGetResultString(r, &text);
  return absl::StrCat(step, " failed: ", text);
}

// One GPU operation: device timestamps in ns; incomplete when CUPTI had not filled them (a
// forced flush hands such records over).
struct Operation {
  uint64_t start = 0;
  uint64_t end = 0;
  bool complete = false;
  bool kernel = false;
};

// A kernel as the foreign-kernel count needs it.
struct KernelRecord {
  uint32_t context_id = 0;
  uint32_t correlation = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  bool device_launched = false;  // CDP, or part of a device-launched graph
};

struct RegionSpan {
  uint64_t start = std::numeric_limits<uint64_t>::max();
  uint64_t end = 0;
  int operations = 0;
  int kernels = 0;
  bool incomplete = false;
  std::vector<uint32_t> calls;  // correlation ids of the region's API calls
  void Add(const Operation& op) {
    if (!op.complete) {
      incomplete = true;
      return;
    }
    start = std::min(start, op.start);
    end = std::max(end, op.end);
    ++operations;
    if (op.kernel) ++kernels;
  }
};

// Process-wide state. `users_mu` guards enabling (CUPTI calls that may deliver buffers, so never
// under `mu`); `mu` guards what the buffer callback fills.
struct Store {
  std::mutex users_mu;
  int users = 0;
  bool registered = false;
  std::unordered_map<CUcontext, int> context_users;  // recorders per context
  bool context_kinds_global = false;  // kContextKinds enabled for every context (fallback)

  std::mutex mu;
  std::unordered_map<uint32_t, uint64_t> region_of_call;           // correlation id -> region
  std::unordered_map<uint32_t, std::vector<Operation>> unmatched;  // correlation id -> operations
  std::unordered_map<uint64_t, RegionSpan> regions;
  std::deque<KernelRecord> kernels;  // recent kernels of every traced context, in arrival order
  std::atomic<uint64_t> next_region{1};

  // With `mu` held.
  void AddCall(uint32_t correlation, uint64_t region) {
    region_of_call[correlation] = region;
    RegionSpan& span = regions[region];
    span.calls.push_back(correlation);
    if (auto it = unmatched.find(correlation); it != unmatched.end()) {
      for (const Operation& op : it->second) span.Add(op);
      unmatched.erase(it);
    }
  }
  void AddKernel(const KernelRecord& k) {
    if (kernels.size() >= kMaxKernelRecords) kernels.pop_front();
    kernels.push_back(k);
  }
  void AddOperation(uint32_t correlation, const Operation& op) {
    if (auto it = region_of_call.find(correlation); it != region_of_call.end()) {
      regions[it->second].Add(op);
      return;
    }
    if (unmatched.size() >= kMaxUnmatchedCalls) unmatched.clear();
    unmatched[correlation].push_back(op);
  }
};

Store& TheStore() {
  static auto* store = new Store();
  return *store;
}

template <typename Record>
Operation OperationOf(const CUpti_Activity* r, uint32_t* correlation) {
  const auto* rec = reinterpret_cast<const Record*>(r);
  *correlation = rec->correlationId;
  return {.start = rec->start,
          .end = rec->end,
          .complete = rec->start != 0 && rec->end != 0 && rec->end >= rec->start};
}

template <typename Record>
KernelRecord KernelRecordOf(const CUpti_Activity* r, bool device_launched) {
  const auto* rec = reinterpret_cast<const Record*>(r);
  return {.context_id = rec->contextId,
          .correlation = rec->correlationId,
          .start = rec->start,
          .end = rec->end,
          .device_launched = device_launched};
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer == nullptr ? 0 : kBufferBytes;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  const Api& api = LoadApi();
  Store& store = TheStore();
  {
    std::lock_guard<std::mutex> lock(store.mu);
    CUpti_Activity* r = nullptr;
    while (valid_bytes > 0 &&
           api.cuptiActivityGetNextRecord(buffer, valid_bytes, &r) == CUPTI_SUCCESS) {
      uint32_t correlation = 0;
      std::optional<Operation> op;
      switch (r->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          // A kernel of a device-launched graph is no operation of the host call it may carry
          // the correlation id of: counted as foreign only.
          const bool device_launched =
              reinterpret_cast<const CUpti_ActivityKernel10*>(r)->isDeviceLaunched != 0;
          store.AddKernel(KernelRecordOf<CUpti_ActivityKernel10>(r, device_launched));
          if (!device_launched) {
            op = OperationOf<CUpti_ActivityKernel10>(r, &correlation);
            op->kernel = true;
          }
          break;
        }
        case CUPTI_ACTIVITY_KIND_CDP_KERNEL:
          store.AddKernel(KernelRecordOf<CUpti_ActivityCdpKernel>(r, /*device_launched=*/true));
          break;
        case CUPTI_ACTIVITY_KIND_MEMCPY:
          op = OperationOf<CUpti_ActivityMemcpy6>(r, &correlation);
          break;
        case CUPTI_ACTIVITY_KIND_MEMCPY2:
          op = OperationOf<CUpti_ActivityMemcpyPtoP4>(r, &correlation);
          break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
          op = OperationOf<CUpti_ActivityMemset4>(r, &correlation);
          break;
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
          const auto* ext = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(r);
          if (ext->externalKind == kRegionKind) store.AddCall(ext->correlationId, ext->externalId);
          break;
        }
        default:  // API records: needed only for the external-correlation records
          break;
      }
      if (op.has_value()) store.AddOperation(correlation, *op);
    }
  }
  std::free(buffer);
}

// Enables `kinds` (for `context`, or for every context when it is null); on a failure disables
// the ones it enabled and says which failed.
std::string EnableKinds(const Api& api, CUcontext context, const CUpti_ActivityKind* kinds,
                        size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const CUptiResult r = context != nullptr ? api.cuptiActivityEnableContext(context, kinds[i])
                                             : api.cuptiActivityEnable(kinds[i]);
    if (r == CUPTI_SUCCESS) continue;
    for (size_t j = 0; j < i; ++j) {
      context != nullptr ? api.cuptiActivityDisableContext(context, kinds[j])
                         : api.cuptiActivityDisable(kinds[j]);
    }
    return Describe(api,
                    absl::StrCat(context != nullptr ? "cuptiActivityEnableContext(kind "
                                                    : "cuptiActivityEnable(kind ",
                                 static_cast<int>(kinds[i]), ")")
                        .c_str(),
                    r);
  }
  return "";
}

void DisableKinds(const Api& api, CUcontext context, const CUpti_ActivityKind* kinds,
                  size_t count) {
  for (size_t i = 0; i < count; ++i) {
    context != nullptr ? api.cuptiActivityDisableContext(context, kinds[i])
                       : api.cuptiActivityDisable(kinds[i]);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ActivityRecorder>> ActivityRecorder::Start() {
  std::shared_lock<std::shared_mutex> gate(CuptiGate());  // waits for a counter pass to end
  const Api& api = LoadApi();
  if (!api.load_error.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("CUPTI activity: ", api.load_error));
  }
  std::string error;
  CUcontext context = CurrentContext(&error);
  if (context == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("CUPTI activity: ", error));
  }
  uint32_t context_id = 0;
  if (CUptiResult r = api.cuptiGetContextId(context, &context_id); r != CUPTI_SUCCESS) {
    return absl::FailedPreconditionError(Describe(api, "cuptiGetContextId", r));
  }
  Store& store = TheStore();
  std::lock_guard<std::mutex> lock(store.users_mu);
  if (!store.registered) {
    if (CUptiResult r = api.cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted);
        r != CUPTI_SUCCESS) {
      return absl::FailedPreconditionError(Describe(api, "cuptiActivityRegisterCallbacks", r));
    }
    store.registered = true;
  }
  if (store.users == 0) {
    error = EnableKinds(api, nullptr, kGlobalKinds, std::size(kGlobalKinds));
    if (!error.empty()) return absl::FailedPreconditionError(error);
  }
  if (store.context_users[context] == 0 && !store.context_kinds_global) {
    error = EnableKinds(api, context, kContextKinds, std::size(kContextKinds));
    if (!error.empty()) {
      // Where CUPTI cannot trace one context, trace them all (other devices' runs then pay it).
      const std::string global = EnableKinds(api, nullptr, kContextKinds, std::size(kContextKinds));
      if (!global.empty()) {
        store.context_users.erase(context);
        if (store.users == 0) DisableKinds(api, nullptr, kGlobalKinds, std::size(kGlobalKinds));
        return absl::FailedPreconditionError(absl::StrCat(error, "; ", global));
      }
      store.context_kinds_global = true;
    }
  }
  ++store.context_users[context];
  ++store.users;
  return std::unique_ptr<ActivityRecorder>(
      new ActivityRecorder(std::move(gate), context, context_id));
}

ActivityRecorder::~ActivityRecorder() {
  const Api& api = LoadApi();
  Store& store = TheStore();
  std::lock_guard<std::mutex> lock(store.users_mu);
  auto* context = static_cast<CUcontext>(context_);
  if (--store.context_users[context] == 0) {
    store.context_users.erase(context);
    if (!store.context_kinds_global) {
      DisableKinds(api, context, kContextKinds, std::size(kContextKinds));
    }
  }
  if (--store.users > 0) return;
  DisableKinds(api, nullptr, kGlobalKinds, std::size(kGlobalKinds));
  if (store.context_kinds_global) {
    DisableKinds(api, nullptr, kContextKinds, std::size(kContextKinds));
    store.context_kinds_global = false;
  }
  api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // hand back every buffer
  std::lock_guard<std::mutex> data_lock(store.mu);
  store.region_of_call.clear();
  store.unmatched.clear();
  store.regions.clear();
  store.kernels.clear();
}

uint64_t ActivityRecorder::BeginRegion() {
  const uint64_t region = TheStore().next_region.fetch_add(1);
  LoadApi().cuptiActivityPushExternalCorrelationId(kRegionKind, region);
  return region;
}

void ActivityRecorder::EndRegion() {
  LoadApi().cuptiActivityPopExternalCorrelationId(kRegionKind, nullptr);
}

std::optional<ActivityRecorder::Span> ActivityRecorder::TakeSpan(uint64_t region) {
  const Api& api = LoadApi();
  Store& store = TheStore();
  auto collect = [&]() -> std::optional<Span> {
    std::lock_guard<std::mutex> lock(store.mu);
    auto it = store.regions.find(region);
    if (it == store.regions.end() || it->second.operations == 0 || it->second.incomplete) {
      return std::nullopt;
    }
    const RegionSpan& own = it->second;
    Span span{
        .nanoseconds = own.end - own.start, .operations = own.operations, .kernels = own.kernels};
    for (const KernelRecord& k : store.kernels) {
      if (k.context_id != context_id_) continue;
      if (k.device_launched) {
        if (k.start >= own.start) ++span.foreign_kernels;
        continue;
      }
      // Strictly inside: the blocking kernel before the region's launches ends where they start.
      if (k.start > own.start && k.start < own.end) {
        auto call = store.region_of_call.find(k.correlation);
        if (call == store.region_of_call.end() || call->second != region) ++span.foreign_kernels;
      }
    }
    return span;
  };
  // A default flush hands over the buffers whose records are all complete; where the region's
  // operations are not among them yet, a forced flush hands over the rest.
  api.cuptiActivityFlushAll(0);
  std::optional<Span> span = collect();
  if (!span.has_value()) {
    api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    span = collect();
  }
  std::lock_guard<std::mutex> lock(store.mu);
  if (auto it = store.regions.find(region); it != store.regions.end()) {
    // This context's kernels that ended by the region's end can concern no later region.
    const uint64_t end = it->second.end;
    std::erase_if(store.kernels, [&](const KernelRecord& k) {
      return k.context_id == context_id_ && k.end != 0 && k.end <= end;
    });
    for (uint32_t call : it->second.calls) store.region_of_call.erase(call);
    store.regions.erase(it);
  }
  return span;
}

}  // namespace gpubench::cuda
