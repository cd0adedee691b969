// A small fixed pool of host threads that runs one data-parallel loop at a time.
#ifndef GPUBENCH_COMMON_PARALLEL_H_
#define GPUBENCH_COMMON_PARALLEL_H_

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include <condition_variable>
#include <mutex>

namespace gpubench {

class ParallelPool {
 public:
  // `threads` <= 0 means std::thread::hardware_concurrency().
  explicit ParallelPool(int threads);
  ~ParallelPool();
  ParallelPool(const ParallelPool&) = delete;
  ParallelPool& operator=(const ParallelPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Splits [0, n) into at most size() contiguous ranges and calls fn(begin, end) for each, the
  // calling thread taking one; returns when all are done. Ranges smaller than `min_chunk` are not
  // split further. Calls are serialized: the pool runs one loop at a time (thread-safe).
  void For(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop(int worker);

  std::mutex call_mu_;  // serializes For()
  std::mutex mu_;       // guards the fields below
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> ranges_;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_PARALLEL_H_
