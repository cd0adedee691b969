// Status propagation helpers shared by every layer (Abseil 20220623 ships none).
#ifndef GPUBENCH_COMMON_STATUS_MACROS_H_
#define GPUBENCH_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GPUBENCH_CONCAT_INNER_(a, b) a##b
#define GPUBENCH_CONCAT_(a, b) GPUBENCH_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::absl::Status gpubench_status_ = (expr);          \
    if (!gpubench_status_.ok()) return gpubench_status_; \
  } while (0)

// `lhs = value of expr` where expr is an absl::StatusOr<T>; returns its status on error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(GPUBENCH_CONCAT_(gpubench_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                           \
  if (!statusor.ok()) return statusor.status();     \
  lhs = std::move(statusor).value()

#endif  // GPUBENCH_COMMON_STATUS_MACROS_H_
