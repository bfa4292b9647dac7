// The worker channel: what the daemon and a worker process say to each other, and how it is
// framed. Each message is a 4-byte little-endian payload length followed by a JSON payload
// carrying a protocol version; the channel is its own descriptor (kWorkerChannelFd in the
// worker), so whatever a kernel prints to stdout or stderr can never be mistaken for a frame.
// This file (protocol.cc) is the only place that spells the channel's JSON keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/result.h"
#include "tuner/breakdown.h"
#include "tuner/measurement.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner::isolation {

inline constexpr int kProtocolVersion = 1;
// The worker's end of the channel is always this descriptor (0-2 are stdin/stdout/stderr).
inline constexpr int kWorkerChannelFd = 3;
// Requests and responses are a few KiB (a response carries at most repetitions x configs
// samples); 16 MiB bounds what a confused peer can make the other side buffer.
inline constexpr uint32_t kMaxFrameBytes = 16u << 20;

// Worker exit codes the parent gives a meaning to; anything else without a verdict is
// worker_lost. 86-89 avoid the shell's 1/2/126/127 and 128+signal.
inline constexpr int kWorkerExitOutOfMemory = 86;  // operator new failed (RLIMIT_AS hit)
inline constexpr int kWorkerExitUsage = 87;        // bad command line or channel
inline constexpr int kWorkerExitOrphaned = 88;     // its parent was already gone at start

enum class RequestKind { kMeasure, kMeasureInterleaved };

struct WorkerRequest {
  RequestKind kind = RequestKind::kMeasure;
  std::string kernel;  // looked up in the worker's registry
  Problem problem;     // the timed problem (the bucket's representative)
  int threads = 1;
  uint64_t seed = 1;
  timing::TimingOptions timing;
  std::vector<Config> configs;  // kMeasure: exactly one
};

// The verdict fields of a Measurement (outcome, detail, errors, timing); identity fields
// (sweep, bucket, config) stay with the parent.
struct WorkerResponse {
  std::string error;  // the worker could not serve the request (unknown kernel, bad request)
  std::string fatal;  // "out_of_memory": sent by the worker's new_handler just before it exits
  // The worker's first frame, sent once it is set up and before it reads a request: the
  // parent starts a config's clock only after it, so exec, dynamic loading and start-up on a
  // loaded machine are never charged to the config that happens to follow a respawn.
  bool ready = false;
  std::vector<Measurement> results;  // one per request config, in order
  // What serving the request cost the worker, by phase (spawn and transport stay zero: the
  // parent measures those); the parent's sweep breakdown adds it up.
  EvalCosts costs;
};

std::string EncodeRequest(const WorkerRequest& request);
Result<WorkerRequest> DecodeRequest(std::string_view payload);
std::string EncodeResponse(const WorkerResponse& response);
Result<WorkerResponse> DecodeResponse(std::string_view payload);

// Length prefix + payload.
std::string Frame(std::string_view payload);

// Accumulates bytes read from a nonblocking channel and yields whole frames.
class FrameReader {
 public:
  void Append(const char* data, size_t size) { buffer_.append(data, size); }
  // The next complete payload, nullopt if more bytes are needed; an error if the declared
  // length exceeds kMaxFrameBytes.
  Result<std::optional<std::string>> Next();
  bool empty() const { return buffer_.empty(); }

 private:
  std::string buffer_;
};

// Blocking I/O for the worker's side. ReadFrame returns not_found on a clean EOF before any
// byte of a frame (the parent closed the channel: time to exit).
Status WriteFrame(int fd, std::string_view payload);
Result<std::string> ReadFrame(int fd);

}  // namespace blocktune::tuner::isolation
