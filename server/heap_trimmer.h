// Gives freed heap memory back to the operating system while the server runs.
//
// glibc keeps what a burst of allocations freed in its per-thread arenas: after an HTTP/2
// rapid-reset flood (every reset stream is a gRPC call of about 10 KB, created and freed by
// gRPC), the process kept hundreds of MiB resident that nothing used any more, for ever.
// A background thread looks at the heap every interval and calls malloc_trim when more than
// `slack_bytes` of it is free but still held.
#ifndef GPUBENCH_SERVER_HEAP_TRIMMER_H_
#define GPUBENCH_SERVER_HEAP_TRIMMER_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "absl/time/time.h"

namespace gpubench {

struct HeapUsage {
  int64_t in_use_bytes = 0;    // allocated and not freed (small blocks and mmapped ones)
  int64_t free_held_bytes = 0;  // freed, but still held by the allocator's arenas
};
HeapUsage CurrentHeapUsage();

class HeapTrimmer {
 public:
  // interval <= 0 starts no thread.
  HeapTrimmer(absl::Duration interval, int64_t slack_bytes);
  ~HeapTrimmer();
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  // One check: trims when more than the slack is held free. Returns the bytes given back
  // (the drop of what the allocator held free), 0 when nothing was trimmed.
  static int64_t TrimIfWorthIt(int64_t slack_bytes);

 private:
  void Loop(absl::Duration interval, int64_t slack_bytes);

  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gpubench

#endif  // GPUBENCH_SERVER_HEAP_TRIMMER_H_
