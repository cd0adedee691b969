#include "common/files.h"

#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

#include <filesystem>

namespace gpubench {

bool ReadFileToString(const std::string& path, std::string* out) {
  // Only regular files (or what a symlink names): a directory opens fine as a stream and then
  // throws on the first read.
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return false;
  *out = std::move(text).str();
  return true;
}

}  // namespace gpubench
