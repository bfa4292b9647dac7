// The registry of kernels: the built-in ones (BuiltinKernels, listed above core/ in
// kernels/builtin/builtin.cc) and the ones registered at run time.
#include "kernels/core/kernel_spec.h"

#include <mutex>
#include <shared_mutex>

namespace blocktune {

namespace {

struct Registry {
  std::shared_mutex mu;
  std::vector<const KernelSpec*> all = BuiltinKernels();
  size_t built_in = all.size();
  // Registered specs live as long as the process, replaced ones too: AllKernels and FindKernel
  // hand out raw pointers. A replaced spec is a few KiB and replacing takes an operator's reload.
  std::vector<std::unique_ptr<const KernelSpec>> owned;
};

Registry& TheRegistry() {
  static Registry r;
  return r;
}

// The position of `name` in r.all, or r.all.size(); the caller holds r.mu.
size_t IndexOf(const Registry& r, std::string_view name) {
  size_t i = 0;
  while (i < r.all.size() && r.all[i]->name() != name) ++i;
  return i;
}

}  // namespace

std::vector<const KernelSpec*> AllKernels() {
  Registry& r = TheRegistry();
  std::shared_lock lock(r.mu);
  return r.all;
}

Status RegisterKernel(std::unique_ptr<const KernelSpec> spec) {
  if (spec == nullptr) return InvalidArgument("no kernel to register");
  Registry& r = TheRegistry();
  std::unique_lock lock(r.mu);
  if (IndexOf(r, spec->name()) < r.all.size()) {
    return InvalidArgument("kernel '" + std::string(spec->name()) + "' is already registered" +
                               (spec->source_file().empty() ? "" : " (" + std::string(spec->source_file()) + ")"),
                           "name");
  }
  r.all.push_back(spec.get());
  r.owned.push_back(std::move(spec));
  return {};
}

Status ReplaceKernel(std::unique_ptr<const KernelSpec> spec) {
  if (spec == nullptr) return InvalidArgument("no kernel to register");
  Registry& r = TheRegistry();
  std::unique_lock lock(r.mu);
  const size_t i = IndexOf(r, spec->name());
  if (i < r.built_in) return InvalidArgument("kernel '" + std::string(spec->name()) + "' is built in", "name");
  if (i < r.all.size()) {
    r.all[i] = spec.get();
    r.owned.push_back(std::move(spec));
    return {};
  }
  return NotFound("kernel '" + std::string(spec->name()) + "' is not registered", "name");
}

const KernelSpec* FindKernel(std::string_view name) {
  Registry& r = TheRegistry();
  std::shared_lock lock(r.mu);
  const size_t i = IndexOf(r, name);
  return i < r.all.size() ? r.all[i] : nullptr;
}

}  // namespace blocktune
