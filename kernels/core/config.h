// Config and Problem: the type-erased views of block sizes and problem shapes that the generic
// machinery (tuner, store, server, CLI) passes around. Each kernel converts to and from its
// own typed struct through one parameter list, so names are spelled once.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/core/dtype.h"
#include "kernels/core/result.h"

namespace blocktune {

// Ordered name -> int64 pairs; order is the kernel's parameter order, so the canonical string
// ("block_m=128,block_n=256,block_k=64") is stable and comparable.
class NamedInts {
 public:
  NamedInts() = default;
  explicit NamedInts(std::vector<std::pair<std::string, int64_t>> values) : values_(std::move(values)) {}

  std::optional<int64_t> Get(std::string_view name) const;
  // Replaces the value of an existing name or appends a new one.
  void Set(std::string_view name, int64_t value);
  const std::vector<std::pair<std::string, int64_t>>& values() const { return values_; }
  bool empty() const { return values_.empty(); }
  size_t size() const { return values_.size(); }

  std::string ToString() const;
  // Parses "a=1,b=2"; whitespace around items is ignored. Duplicate names are an error.
  static Result<NamedInts> Parse(std::string_view text);

  friend bool operator==(const NamedInts&, const NamedInts&) = default;

 private:
  std::vector<std::pair<std::string, int64_t>> values_;
};

using Config = NamedInts;

struct Problem {
  DType dtype = DType::kF32;
  NamedInts dims;  // e.g. m, n, k

  int64_t Dim(std::string_view name) const { return dims.Get(name).value_or(0); }
  std::string ToString() const { return std::string(DTypeName(dtype)) + ":" + dims.ToString(); }
  friend bool operator==(const Problem&, const Problem&) = default;
};

// Typed block sizes declare their fields once; these templates derive the Config views.
template <typename T>
struct ParamField {
  const char* name;
  int64_t T::*field;
};

template <typename T>
Config ToConfig(const T& bs) {
  Config c;
  for (const auto& p : T::kParams) c.Set(p.name, bs.*(p.field));
  return c;
}

// Missing names keep the struct's defaults; unknown names are an error naming the field.
template <typename T>
Result<T> FromConfig(const Config& c) {
  T bs;
  for (const auto& [name, value] : c.values()) {
    bool known = false;
    for (const auto& p : T::kParams) {
      if (name == p.name) {
        bs.*(p.field) = value;
        known = true;
      }
    }
    if (!known) return InvalidArgument("unknown block-size parameter '" + name + "'", "config." + name);
  }
  return bs;
}

}  // namespace blocktune
