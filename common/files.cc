#include "common/files.h"

#include <fstream>
#include <iterator>

namespace gpubench {

bool ReadFileToString(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace gpubench
