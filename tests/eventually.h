// Polling for tests that wait on another thread or process (a worker's exit, a kept buffer's
// release, a scheduled pass).
#ifndef GPUBENCH_TESTS_EVENTUALLY_H_
#define GPUBENCH_TESTS_EVENTUALLY_H_

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gpubench {

// Checks `done` every `period` until it holds, at most timeout / period times; returns whether it
// held at the last check.
inline bool Eventually(const std::function<bool()>& done, absl::Duration timeout,
                       absl::Duration period) {
  const int64_t polls = absl::IDivDuration(timeout, period, &timeout);
  for (int64_t i = 0; i < polls && !done(); ++i) absl::SleepFor(period);
  return done();
}

}  // namespace gpubench

#endif  // GPUBENCH_TESTS_EVENTUALLY_H_
