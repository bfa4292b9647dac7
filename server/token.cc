// Token loading and generation; see token.h.
#include "server/token.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace blocktune::server {

Result<std::string> LoadOrCreateToken(const std::string& path) {
  if (const char* env = std::getenv("BLOCKTUNE_TOKEN"); env != nullptr && *env != '\0') {
    if (std::string(env).size() < 16) return InvalidArgument("BLOCKTUNE_TOKEN must be at least 16 characters");
    return std::string(env);
  }
  {
    std::ifstream in(path);
    if (in) {
      std::string token;
      std::getline(in, token);
      if (token.size() < 16) return InvalidArgument("token in " + path + " is shorter than 16 characters");
      return token;
    }
  }
  unsigned char bytes[24];
  const int rnd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (rnd < 0 || read(rnd, bytes, sizeof bytes) != static_cast<ssize_t>(sizeof bytes)) {
    if (rnd >= 0) close(rnd);
    return Internal("cannot read /dev/urandom");
  }
  close(rnd);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return MakeError(ErrorCode::kFailedPrecondition, "cannot create token file " + path);
  const std::string line = token + "\n";
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (!ok) return MakeError(ErrorCode::kFailedPrecondition, "cannot write token file " + path);
  return token;
}

}  // namespace blocktune::server
