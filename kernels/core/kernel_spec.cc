// The parts of KernelSpec that follow from each kernel's declarations.
#include "kernels/core/kernel_spec.h"

#include <cmath>

namespace blocktune {

VerifyReport Compare(const float* out, const float* ref, int64_t n, Tolerance tol) {
  VerifyReport r;
  r.elements = n;
  for (int64_t i = 0; i < n; ++i) {
    const double o = out[i];
    const double e = ref[i];
    if (!std::isfinite(o)) {
      ++r.non_finite;
      ++r.mismatches;
      continue;
    }
    const double abs_err = std::fabs(o - e);
    const double rel = abs_err / (tol.atol + tol.rtol * std::fabs(e));
    if (abs_err > r.max_abs_err) r.max_abs_err = abs_err;
    if (rel > r.max_rel_err) r.max_rel_err = rel;
    if (rel > 1.0) ++r.mismatches;
  }
  r.ok = r.mismatches == 0;
  return r;
}

Status KernelSpec::ValidateProblem(const Problem& problem) const {
  bool dtype_ok = false;
  for (DType d : dtypes()) dtype_ok |= d == problem.dtype;
  if (!dtype_ok) {
    return InvalidArgument(
        "kernel " + std::string(name()) + " does not support dtype " + std::string(DTypeName(problem.dtype)), "dtype");
  }
  for (const auto& [n, v] : problem.dims.values()) {
    bool known = false;
    for (const auto& d : dims()) known |= n == d.bucket.name;
    if (!known) return InvalidArgument("unknown dimension '" + n + "' for kernel " + std::string(name()), n);
  }
  for (const auto& d : dims()) {
    const auto v = problem.dims.Get(d.bucket.name);
    if (!v) return InvalidArgument(std::string("missing dimension '") + d.bucket.name + "'", d.bucket.name);
    if (*v < d.bucket.min || *v > d.max_value) {
      return InvalidArgument(std::string(d.bucket.name) + " must be in [" + std::to_string(d.bucket.min) + ", " +
                                 std::to_string(d.max_value) + "], got " + std::to_string(*v),
                             d.bucket.name);
    }
  }
  return {};
}

std::pair<std::string, Problem> KernelSpec::Bucket(const Problem& problem) const {
  std::vector<tables::BucketDim> bdims;
  std::vector<int64_t> values;
  for (const auto& d : dims()) {
    bdims.push_back(d.bucket);
    values.push_back(problem.Dim(d.bucket.name));
  }
  std::string id = tables::BucketId(bdims.data(), bdims.size(), values.data());
  Problem rep;
  rep.dtype = problem.dtype;
  for (size_t i = 0; i < bdims.size(); ++i) rep.dims.Set(bdims[i].name, values[i]);
  return {std::move(id), std::move(rep)};
}

Result<Problem> KernelSpec::ProblemFromBucket(DType dtype, std::string_view bucket_id) const {
  Problem p;
  p.dtype = dtype;
  std::string_view rest = bucket_id;
  for (const auto& d : dims()) {
    const std::string_view name = d.bucket.name;
    if (rest.substr(0, name.size()) != name) return InvalidArgument("malformed bucket id", "bucket");
    rest.remove_prefix(name.size());
    int64_t v = 0;
    size_t i = 0;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') v = v * 10 + (rest[i++] - '0');
    if (i == 0) return InvalidArgument("malformed bucket id", "bucket");
    rest.remove_prefix(i);
    if (!rest.empty() && rest.front() == '_') rest.remove_prefix(1);
    p.dims.Set(name, v);
  }
  if (!rest.empty()) return InvalidArgument("malformed bucket id", "bucket");
  if (Bucket(p).first != bucket_id) return InvalidArgument("bucket id is not canonical", "bucket");
  return p;
}

std::vector<Config> KernelSpec::ConfigSpace() const {
  std::vector<Config> out{Config{}};
  for (const auto& p : params()) {
    std::vector<Config> next;
    next.reserve(out.size() * p.candidates.size());
    for (const auto& c : out) {
      for (int64_t v : p.candidates) {
        Config e = c;
        e.Set(p.name, v);
        next.push_back(std::move(e));
      }
    }
    out = std::move(next);
  }
  return out;
}

Result<Config> KernelSpec::CompleteConfig(const Config& partial) const {
  for (const auto& [n, v] : partial.values()) {
    bool known = false;
    for (const auto& p : params()) known |= n == p.name;
    if (!known) {
      return InvalidArgument("unknown parameter '" + n + "' for kernel " + std::string(name()), "config." + n);
    }
  }
  Config out = DefaultConfig();
  for (const auto& [n, v] : partial.values()) out.Set(n, v);
  return out;
}

}  // namespace blocktune
