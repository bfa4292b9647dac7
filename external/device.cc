// The device line's identity object; see device.h.
#include "external/device.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace blocktune::external {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 8> kFields = {"kind",         "vendor", "model",   "arch",
                                                     "memory_bytes", "driver", "runtime", "platform"};

// Characters of UTF-8 text (code points: bytes that do not continue a sequence), as Python's
// len() counts them.
size_t CodePoints(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

}  // namespace

Result<tuner::DeviceIdentity> ParseDeviceIdentity(std::string_view json_text) {
  const json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded()) return InvalidArgument("not JSON", "device");
  if (!j.is_object()) return InvalidArgument("must be an object, not " + std::string(j.type_name()), "device");
  std::vector<std::string> unknown;
  for (const auto& [name, value] : j.items()) {
    if (std::find(kFields.begin(), kFields.end(), name) == kFields.end()) unknown.push_back(name);
  }
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    return InvalidArgument("unknown field (known: kind, vendor, model, arch, memory_bytes, driver, runtime, platform)",
                           "device." + unknown.front().substr(0, 64));
  }
  tuner::DeviceIdentity id;
  if (auto m = j.find("memory_bytes"); m != j.end()) {
    const bool ok = m->is_number_unsigned() ? m->get<uint64_t>() <= uint64_t{INT64_MAX}
                                            : m->is_number_integer() && m->get<int64_t>() >= 0;
    if (!ok) return InvalidArgument("must be an integer >= 0, not " + m->dump().substr(0, 40), "device.memory_bytes");
    id.memory_bytes = m->is_number_unsigned() ? static_cast<int64_t>(m->get<uint64_t>()) : m->get<int64_t>();
  }
  for (auto [name, field] :
       std::initializer_list<std::pair<std::string_view, std::string*>>{{"kind", &id.kind},
                                                                        {"vendor", &id.vendor},
                                                                        {"model", &id.model},
                                                                        {"arch", &id.arch},
                                                                        {"driver", &id.driver},
                                                                        {"runtime", &id.runtime},
                                                                        {"platform", &id.platform}}) {
    const std::string path = "device." + std::string(name);
    auto v = j.find(name);
    if (v == j.end()) continue;
    if (!v->is_string()) return InvalidArgument("must be a string, not " + std::string(v->type_name()), path);
    *field = v->get<std::string>();
    if (const size_t n = CodePoints(*field); n > tuner::kMaxDeviceFieldChars) {
      return InvalidArgument("longer than 256 characters (" + std::to_string(n) + ")", path);
    }
    // A control character in a name (a newline, an escape sequence) would reach logs, generated
    // tables' comments and the dashboard; nothing a framework reports has one.
    for (size_t i = 0; i < field->size(); ++i) {
      const auto c = static_cast<unsigned char>((*field)[i]);
      if (c < 0x20 || c == 0x7f) return InvalidArgument("control character at byte " + std::to_string(i), path);
    }
  }
  if (auto key = tuner::DeviceKey(id); !key) return std::unexpected(key.error());
  return id;
}

std::string DeviceIdentityJson(const tuner::DeviceIdentity& id) {
  // Written field by field: nlohmann's object sorts its keys, and the protocol's order reads
  // better in a stored record.
  const auto text = [](const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); };
  return "{\"kind\":" + text(id.kind) + ",\"vendor\":" + text(id.vendor) + ",\"model\":" + text(id.model) +
         ",\"arch\":" + text(id.arch) + ",\"memory_bytes\":" + std::to_string(id.memory_bytes) +
         ",\"driver\":" + text(id.driver) + ",\"runtime\":" + text(id.runtime) + ",\"platform\":" + text(id.platform) +
         "}";
}

}  // namespace blocktune::external
