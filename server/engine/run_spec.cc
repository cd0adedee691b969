#include "server/engine/run_spec.h"

namespace gpubench {

const char* CacheModeName(CacheMode mode) { return mode == CacheMode::kHot ? "hot" : "cold"; }

}  // namespace gpubench
