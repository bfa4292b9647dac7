// libFuzzer target on request decoding: the head guard (Host, framing, length), the JSON
// scanner, then nlohmann's parser, copy and dump on whatever the scanner lets through. The
// input is "Header: value" lines, a blank line, then the body. Beyond "no crash, no sanitizer
// report", it checks the scanner's promise: a body it passes never parses deeper, or with
// longer arrays, than the limits. Built with clang 14 by deploy/fuzz-request.sh (plain C++20:
// clang 14 cannot compile libstdc++ 12's <expected>, so only guards.cc and nlohmann are linked).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/guards/guards.h"

namespace {

using Json = nlohmann::ordered_json;
using blocktune::server::guards::Limits;

// Depth and the longest array, iteratively (the point is not to trust recursion).
void Measure(const Json& root, int& depth, size_t& widest) {
  struct Item {
    const Json* j;
    int level;
  };
  std::vector<Item> stack{{&root, 0}};
  depth = 0;
  widest = 0;
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    if (it.j->is_structured()) {
      depth = std::max(depth, it.level + 1);
      if (it.j->is_array()) widest = std::max(widest, it.j->size());
      for (const auto& child : *it.j) stack.push_back({&child, it.level + 1});
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find("\n\n");
  const std::string_view head_text = input.substr(0, split);
  const std::string_view body = split == std::string_view::npos ? std::string_view() : input.substr(split + 2);

  blocktune::server::guards::Head head;
  head.method = "POST";
  size_t pos = 0;
  while (pos < head_text.size()) {
    const size_t nl = head_text.find('\n', pos);
    const std::string_view line =
        head_text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? head_text.size() : nl + 1;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      head.method = line;
      continue;
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 1);
    if (name == "Host") head.host = value;
    if (name == "Content-Length") {
      head.has_content_length = true;
      head.content_length = value;
    }
    if (name == "Transfer-Encoding") head.transfer_encoding = value;
    if (name == "Content-Encoding") head.content_encoding = value;
  }
  Limits limits;
  const std::vector<std::string> hosts = {"127.0.0.1", "localhost", "::1"};
  (void)blocktune::server::guards::CheckHead(head, hosts, limits);
  (void)blocktune::server::guards::HostName(head.host);
  (void)blocktune::server::guards::Clip(body, 17);

  const auto verdict = blocktune::server::guards::ScanJson(body, limits);
  if (!verdict.ok()) return 0;
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  int depth = 0;
  size_t widest = 0;
  Measure(j, depth, widest);
  if (depth > limits.max_depth || widest > limits.max_array_items) {
    std::abort();  // the scanner let through what it promised to stop
  }
  const Json copy = j;
  const std::string text = copy.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.empty()) std::abort();
  return 0;
}
