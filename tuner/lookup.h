// Best-config lookup over tuned entries: bucket the problem with the kernel's bucket function,
// then apply tables/resolve.h's precedence. The daemon (rows from SQLite), the CLI (rows from
// the checked-in table) and generated headers (constexpr rows) all answer through ResolveRow,
// so the three can never disagree about which row wins.
#pragma once

#include <string>
#include <vector>

#include "blocktune/tables/resolve.h"
#include "kernels/core/kernel_spec.h"
#include "tuner/measurement.h"

namespace blocktune::tuner {

struct LookupQuery {
  DType dtype = DType::kF32;
  NamedInts dims;
  std::string hardware_key;  // the key of the machine that will run the kernel
};

struct LookupAnswer {
  std::string kernel;
  Config config;
  tables::Source source = tables::Source::kDefault;
  std::string hardware;   // key of the row that answered; the queried key for the default
  std::string bucket;
  double median_ns = 0;   // 0 for the default
  int64_t samples = 0;
  int64_t sweep_id = 0;
  int64_t measurement_id = 0;
  std::string measured_at;
};

// Errors only for a malformed query (unknown dim, out of range, unsupported dtype).
Result<LookupAnswer> Lookup(const KernelSpec& spec, const std::vector<TunedEntry>& rows, const LookupQuery& query);

}  // namespace blocktune::tuner
