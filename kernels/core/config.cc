// Parsing and printing of the canonical "name=value,..." form.
#include "kernels/core/config.h"

#include <charconv>

namespace blocktune {

std::optional<int64_t> NamedInts::Get(std::string_view name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return v;
  }
  return std::nullopt;
}

void NamedInts::Set(std::string_view name, int64_t value) {
  for (auto& [n, v] : values_) {
    if (n == name) {
      v = value;
      return;
    }
  }
  values_.emplace_back(std::string(name), value);
}

std::string NamedInts::ToString() const {
  std::string out;
  for (const auto& [n, v] : values_) {
    if (!out.empty()) out += ',';
    out += n;
    out += '=';
    out += std::to_string(v);
  }
  return out;
}

namespace {
std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
}  // namespace

Result<NamedInts> NamedInts::Parse(std::string_view text) {
  NamedInts out;
  text = Trim(text);
  if (text.empty()) return out;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = Trim(text.substr(0, comma));
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("expected name=value, got '" + std::string(item) + "'");
    }
    const std::string_view name = Trim(item.substr(0, eq));
    const std::string_view value = Trim(item.substr(eq + 1));
    if (name.empty()) return InvalidArgument("empty name in '" + std::string(item) + "'");
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
      return InvalidArgument("'" + std::string(value) + "' is not an integer", std::string(name));
    }
    if (out.Get(name)) return InvalidArgument("duplicate name '" + std::string(name) + "'", std::string(name));
    out.values_.emplace_back(std::string(name), v);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace blocktune
