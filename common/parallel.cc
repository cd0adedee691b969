#include "common/parallel.h"

#include <algorithm>

namespace gpubench {

ParallelPool::ParallelPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ParallelPool::~ParallelPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ParallelPool::WorkerLoop(int worker) {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int64_t, int64_t)>* fn;
    std::pair<int64_t, int64_t> range{0, 0};
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
      if (static_cast<size_t>(worker) + 1 < ranges_.size()) range = ranges_[worker + 1];
    }
    if (range.second > range.first) (*fn)(range.first, range.second);
    std::lock_guard<std::mutex> lock(mu_);
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

void ParallelPool::For(int64_t n, int64_t min_chunk,
                       const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  std::lock_guard<std::mutex> call_lock(call_mu_);
  const int64_t max_parts = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const int parts = static_cast<int>(std::min<int64_t>(size(), max_parts));
  if (parts == 1) {
    fn(0, n);
    return;
  }
  std::vector<std::pair<int64_t, int64_t>> ranges(parts);
  for (int p = 0; p < parts; ++p) ranges[p] = {n * p / parts, n * (p + 1) / parts};
  {
    std::lock_guard<std::mutex> lock(mu_);
    ranges_ = std::move(ranges);
    fn_ = &fn;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  work_cv_.notify_all();
  fn(ranges_[0].first, ranges_[0].second);  // ranges_ is stable until pending_ reaches 0
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
}

}  // namespace gpubench
