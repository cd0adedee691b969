#include "server/heap_trimmer.h"

#include <malloc.h>

#include <chrono>

#include <spdlog/spdlog.h>

namespace gpubench {

HeapUsage CurrentHeapUsage() {
  const struct mallinfo2 info = mallinfo2();  // summed over every arena
  HeapUsage usage;
  usage.in_use_bytes = static_cast<int64_t>(info.uordblks + info.hblkhd);
  usage.free_held_bytes = static_cast<int64_t>(info.fordblks);
  return usage;
}

int64_t HeapTrimmer::TrimIfWorthIt(int64_t slack_bytes) {
  const HeapUsage before = CurrentHeapUsage();
  if (before.free_held_bytes <= slack_bytes) return 0;
  malloc_trim(0);
  const HeapUsage after = CurrentHeapUsage();
  return before.free_held_bytes - after.free_held_bytes;
}

HeapTrimmer::HeapTrimmer(absl::Duration interval, int64_t slack_bytes) {
  if (interval <= absl::ZeroDuration()) return;
  thread_ = std::thread([this, interval, slack_bytes] { Loop(interval, slack_bytes); });
}

HeapTrimmer::~HeapTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HeapTrimmer::Loop(absl::Duration interval, int64_t slack_bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, absl::ToChronoNanoseconds(interval), [this] { return stop_; })) {
    lock.unlock();  // malloc_trim walks every arena: the destructor does not wait on the lock
    if (const int64_t returned = TrimIfWorthIt(slack_bytes); returned > (int64_t{64} << 20)) {
      spdlog::info("returned {} MiB of freed heap memory to the system", returned >> 20);
    }
    lock.lock();
  }
}

}  // namespace gpubench
