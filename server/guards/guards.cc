// Request guards; see guards.h.
#include "server/guards/guards.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace blocktune::server::guards {
namespace {

Verdict Refuse(int status, std::string code, std::string message, std::string path) {
  return Verdict{status, std::move(code), std::move(message), std::move(path)};
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string Clip(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t n = max_bytes;
  // Back off continuation bytes (10xxxxxx) so a multi-byte character is not cut in half.
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n)) + "...";
}

std::string HostName(std::string_view host) {
  host = Trim(host);
  if (host.empty()) return {};
  std::string_view name;
  if (host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return {};
    name = host.substr(1, close - 1);
    host.remove_prefix(close + 1);
    if (!host.empty() && host.front() != ':') return {};
  } else {
    const size_t colon = host.find(':');
    name = host.substr(0, colon);
    host = colon == std::string_view::npos ? std::string_view() : host.substr(colon);
  }
  if (!host.empty()) {  // ":port"
    host.remove_prefix(1);
    if (host.empty() || host.size() > 5) return {};
    for (char c : host) {
      if (c < '0' || c > '9') return {};
    }
  }
  if (name.empty() || name.size() > 253) return {};
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '.' || c == '-' || c == ':' || c == '_')) return {};
  }
  return Lower(name);
}

Verdict CheckHead(const Head& head, const std::vector<std::string>& allowed_hosts, const Limits& limits) {
  // DNS rebinding: a browser page on evil.example that resolves to 127.0.0.1 still sends
  // Host: evil.example, so only the names the daemon is known by are served.
  const bool any_host = std::find(allowed_hosts.begin(), allowed_hosts.end(), "*") != allowed_hosts.end();
  if (!any_host) {
    const std::string name = HostName(head.host);
    if (name.empty() || std::find(allowed_hosts.begin(), allowed_hosts.end(), name) == allowed_hosts.end()) {
      return Refuse(421, "invalid_argument", "Host '" + Clip(head.host) + "' is not served here", "Host");
    }
  }
  if (!Trim(head.transfer_encoding).empty()) {
    // Chunked bodies bypass the library's payload limit; our clients always send a length.
    return Refuse(411, "invalid_argument", "Transfer-Encoding is not accepted; send Content-Length",
                  "Transfer-Encoding");
  }
  const std::string encoding = Lower(Trim(head.content_encoding));
  if (!encoding.empty() && encoding != "identity") {
    // The library would inflate gzip/deflate without bound (a 1 MiB bomb is 1 GiB inflated).
    return Refuse(415, "invalid_argument", "Content-Encoding '" + Clip(encoding) + "' is not accepted",
                  "Content-Encoding");
  }
  const bool carries_body = head.method == "POST" || head.method == "PUT" || head.method == "PATCH";
  if (carries_body && !head.has_content_length) {
    return Refuse(411, "invalid_argument", "Content-Length is required (0 for an empty body)", "Content-Length");
  }
  if (head.has_content_length) {
    const std::string_view v = Trim(head.content_length);
    uint64_t n = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size()) {
      return Refuse(400, "invalid_argument", "Content-Length must be a decimal integer", "Content-Length");
    }
    if (n > limits.max_body_bytes) {
      return Refuse(413, "invalid_argument", "request body exceeds " + std::to_string(limits.max_body_bytes) + " bytes",
                    "body");
    }
  }
  return {};
}

Verdict ScanJson(std::string_view body, const Limits& limits) {
  if (body.size() > limits.max_body_bytes) {
    return Refuse(413, "invalid_argument", "request body exceeds " + std::to_string(limits.max_body_bytes) + " bytes",
                  "body");
  }
  // One entry per open container: whether it is an array and how many items it has so far.
  struct Open {
    bool array;
    size_t items;
    bool item_started;
  };
  std::vector<Open> stack;
  stack.reserve(static_cast<size_t>(limits.max_depth) + 1);
  bool in_string = false;
  size_t string_start = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
        if (i - string_start > limits.max_string_bytes) {
          return Refuse(400, "invalid_argument",
                        "JSON string longer than " + std::to_string(limits.max_string_bytes) + " bytes", "body");
        }
      }
      continue;
    }
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (!stack.empty() && stack.back().array && !stack.back().item_started && c != ']' && c != ',') {
      stack.back().item_started = true;
      if (++stack.back().items > limits.max_array_items) {
        return Refuse(400, "invalid_argument",
                      "JSON array longer than " + std::to_string(limits.max_array_items) + " items", "body");
      }
    }
    if (c == '"') {
      in_string = true;
      string_start = i + 1;
    } else if (c == '[' || c == '{') {
      if (static_cast<int>(stack.size()) >= limits.max_depth) {
        return Refuse(400, "invalid_argument", "JSON nesting deeper than " + std::to_string(limits.max_depth), "body");
      }
      stack.push_back(Open{c == '[', 0, false});
    } else if (c == ']' || c == '}') {
      if (!stack.empty()) stack.pop_back();
    } else if (c == ',') {
      if (!stack.empty()) stack.back().item_started = false;
    }
  }
  return {};
}

}  // namespace blocktune::server::guards
