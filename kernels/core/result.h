// Result<T> and Error: how every blocktune library reports failure without throwing.
// Codes follow Abseil's canonical set so that one function (server/errors) can map them to
// HTTP statuses; `path` names the offending field ("shapes[2].m", "config.block_k").
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace blocktune {

enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kResourceExhausted,
  kUnavailable,
  kDeadlineExceeded,
  kDataLoss,
  kInternal,
};

std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string path;  // the field the error is about, empty if none

  // "invalid_argument: block_m must be a multiple of 16 (got 50) [config.block_m]"
  std::string ToString() const;
};

template <typename T>
using Result = std::expected<T, Error>;

using Status = std::expected<void, Error>;

inline std::unexpected<Error> MakeError(ErrorCode code, std::string message, std::string path = {}) {
  return std::unexpected<Error>(Error{code, std::move(message), std::move(path)});
}
inline std::unexpected<Error> InvalidArgument(std::string message, std::string path = {}) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message), std::move(path));
}
inline std::unexpected<Error> NotFound(std::string message, std::string path = {}) {
  return MakeError(ErrorCode::kNotFound, std::move(message), std::move(path));
}
inline std::unexpected<Error> Internal(std::string message) {
  return MakeError(ErrorCode::kInternal, std::move(message));
}

// Prefixes an error's path: errors from a nested decoder get the caller's field in front.
inline Error WithPathPrefix(Error e, std::string_view prefix) {
  if (e.path.empty()) {
    e.path = std::string(prefix);
  } else if (!prefix.empty()) {
    e.path = std::string(prefix) + (e.path.front() == '[' ? "" : ".") + e.path;
  }
  return e;
}

}  // namespace blocktune
