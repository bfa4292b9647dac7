// What the table generator's readers and writers share (codegen/*.cc; not installed, not for
// callers of codegen.h): the one row order every output uses, the shortest exact spelling of a
// double, the banner of a generated file, and the JSON and comment forms of a row's gate record.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "tuner/measurement.h"

namespace blocktune::codegen {

using nlohmann::ordered_json;

// (kernel, hardware key, dtype, bucket): the key rows are sorted, merged and replaced by.
inline auto SortKey(const tuner::TunedEntry& e) {
  return std::make_tuple(e.kernel, e.hardware_key, std::string(DTypeName(e.dtype)), e.bucket);
}

std::vector<tuner::TunedEntry> Sorted(std::vector<tuner::TunedEntry> v);
// The rows of `spec`'s kernel among `entries`, sorted.
std::vector<tuner::TunedEntry> RowsFor(const KernelSpec& spec, const std::vector<tuner::TunedEntry>& entries);

// Shortest text that reads back as the same double, so output is stable and exact.
std::string Num(double v);
// The "GENERATED ... do not edit" lines at the top of a generated file, after `comment`.
std::string Banner(std::string_view comment, const KernelSpec& spec, size_t rows);

ordered_json ConfigJson(const Config& c);
// A row's regression-gate record as the jsonl and the JSON tables write it.
ordered_json GateJson(const tuner::GateRecord& g);
// One line for comments: what the gate decided and both timings.
std::string GateSummary(const tuner::GateRecord& g);
// A row's device identity (TunedEntry::device) as an object; null for none (or text that is not
// one, which the store never writes).
ordered_json DeviceJson(const tuner::TunedEntry& e);
// One line for comments: the device a row was measured on, its identity as provenance (the key
// says only kind, vendor, arch and model). Printable ASCII only: the identity's text comes from a
// runner, and a comment must not end early.
std::string DeviceSummary(const tuner::TunedEntry& e);

}  // namespace blocktune::codegen
