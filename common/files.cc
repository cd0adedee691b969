#include "common/files.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"

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

absl::Status ReplaceFileContents(const std::string& path, const std::string& contents,
                                 bool probe_only) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot create a file beside ", path, ": ", std::strerror(errno)));
  }
  int error = 0;  // the first failure's errno
  const auto failed = [&error](bool bad) {
    if (bad && error == 0) error = errno != 0 ? errno : EIO;
    return bad;
  };
  for (size_t written = 0; error == 0 && written < contents.size();) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (!failed(n <= 0)) written += static_cast<size_t>(n);
  }
  if (error == 0 && !probe_only) failed(fsync(fd) != 0);
  failed(close(fd) != 0);
  if (error == 0 && !probe_only) failed(std::rename(tmp.c_str(), path.c_str()) != 0);
  if (error != 0 || probe_only) unlink(tmp.c_str());
  if (error != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ", path, " (through ", tmp, "): ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace gpubench
