// Names of error codes, as they appear in JSON error bodies and logs.
#include "kernels/core/result.h"

namespace blocktune {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kAlreadyExists: return "already_exists";
    case ErrorCode::kFailedPrecondition: return "failed_precondition";
    case ErrorCode::kResourceExhausted: return "resource_exhausted";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kDeadlineExceeded: return "deadline_exceeded";
    case ErrorCode::kDataLoss: return "data_loss";
    case ErrorCode::kInternal: return "internal";
  }
  return "internal";
}

std::string Error::ToString() const {
  std::string s(ErrorCodeName(code));
  s += ": ";
  s += message;
  if (!path.empty()) s += " [" + path + "]";
  return s;
}

}  // namespace blocktune
