// Request guards that run before routing and before nlohmann sees a body: the Host allow-list,
// body framing (cpp-httplib 0.11.4 lets chunked bodies past its payload limit and inflates
// gzip bodies without bound, so both are refused before the body is read), declared length,
// and a one-pass scan of JSON text for nesting depth, string length and array length
// (nlohmann-json 3.11.2 recurses per nesting level when parsing, copying and printing, so a
// 100,000-deep document would exhaust the stack). Plain C++20 with no Result type so the
// libFuzzer target (clang 14, which cannot compile libstdc++ 12's <expected>) builds it as is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace blocktune::server::guards {

struct Limits {
  size_t max_body_bytes = 1 << 20;  // 1 MiB: a 256-shape sweep request is under 20 KiB
  int max_depth = 16;               // our deepest request nests 3 levels
  size_t max_string_bytes = 4096;   // longest legitimate string: an override reason
  size_t max_array_items = 1024;    // longest legitimate array: 256 shapes or queries
  size_t max_shapes = 256;          // shapes per sweep
  size_t max_batch_queries = 256;   // queries per batch lookup
};

// Refusal: an HTTP status and the error body's code/message/path. status 0 = allowed.
struct Verdict {
  int status = 0;
  std::string code;
  std::string message;
  std::string path;
  bool ok() const { return status == 0; }
};

// What the head guard needs from a request, extracted by the HTTP layer (or the fuzzer).
struct Head {
  std::string_view method;
  std::string_view host;  // Host header; empty if absent
  bool has_content_length = false;
  std::string_view content_length;     // raw header value
  std::string_view transfer_encoding;  // raw header value
  std::string_view content_encoding;   // raw header value
};

// Hosts: lower-case names without port ("127.0.0.1", "localhost", "::1"); "*" allows any.
Verdict CheckHead(const Head& head, const std::vector<std::string>& allowed_hosts, const Limits& limits);

// The Host header's name without port, lower-cased: "LocalHost:8787" -> "localhost",
// "[::1]:80" -> "::1". Empty for a malformed value.
std::string HostName(std::string_view host_header);

// Depth, string-length and array-length limits over JSON text, without parsing it. A body
// that passes may still be invalid JSON; that is the parser's verdict to give.
Verdict ScanJson(std::string_view body, const Limits& limits);

// Shortens `s` to at most `max_bytes` for echoing in an error message, on a UTF-8 boundary.
std::string Clip(std::string_view s, size_t max_bytes = 64);

}  // namespace blocktune::server::guards
