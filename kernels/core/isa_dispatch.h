// Per-ISA dispatch, written once for every kernel: which of a kernel's operations tables (one
// per ISA level, see docs/adding-a-kernel.md#per-isa-tables) runs, for the host and for a
// forced level. The inner loops behind the tables are not touched here: a kernel's driver gets
// one `const Ops&` per call and passes it down, as before.
//
// A kernel's table is `struct Ops` in `<kernel>_internal`, declared in `<kernel>_ops.h`, with
// `const char* name` ("avx512", "avx2", "portable") and three static accessors, each defined in
// the ISA's own file under its own target attribute:
//   static const Ops& Avx512();   // <kernel>_avx512.cc, x86-64 builds only
//   static const Ops& Avx2();     // <kernel>_avx2.cc, x86-64 builds only
//   static const Ops& Portable(); // <kernel>_portable.cc, every build
// The x86 accessors are named only inside `if constexpr (kIsaX86Tables)` of a template, so off
// x86-64 (where kernels/CMakeLists.txt does not compile those files) nothing references them.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "kernels/core/hardware.h"
#include "kernels/core/result.h"

namespace blocktune::kernels {

// Whether the avx512 and avx2 files are compiled (kernels/CMakeLists.txt, BLOCKTUNE_X86_64).
#if defined(__x86_64__)
inline constexpr bool kIsaX86Tables = true;
#else
inline constexpr bool kIsaX86Tables = false;
#endif

// The table for an ISA name ("avx512", "avx2", "base" or its kernel name "portable"); nullptr
// for an unknown name, and off x86-64 for avx512/avx2 too (HostCanRun never admits them there).
template <typename Ops>
const Ops* TableForIsa(std::string_view isa) {
  if constexpr (kIsaX86Tables) {
    if (isa == "avx512") return &Ops::Avx512();
    if (isa == "avx2") return &Ops::Avx2();
  }
  if (isa == "base" || isa == "portable") return &Ops::Portable();
  return nullptr;
}

// The host's table, chosen once per process per kernel (a function-local static: thread-safe,
// and after the first call a guard load and a pointer per kernel call) from HostHardware(),
// which already honours ForceIsa / BLOCKTUNE_ISA; the portable table if that level has none.
template <typename Ops>
const Ops& HostOps() {
  static const Ops* const kOps = [] {
    const Ops* o = TableForIsa<Ops>(HostHardware().cpu.isa);
    return o != nullptr ? o : &Ops::Portable();
  }();
  return *kOps;
}

// What a `<Kernel>WithIsa` call runs: the level's table and the host profile filed under that
// level (cpu.isa = "avx512", "avx2" or "base"), so Validate checks the level's tile.
template <typename Ops>
struct IsaOps {
  const Ops* ops;
  HardwareProfile hw;
};

// The table for a level this call forces. Errors (path "isa"): invalid_argument for an unknown
// name; failed_precondition for a level this process cannot run (the CPU lacks it, a lower level
// was forced with ForceIsa / BLOCKTUNE_ISA, or its files are not compiled on this target).
template <typename Ops>
Result<IsaOps<Ops>> OpsForIsa(std::string_view isa) {
  const Ops* ops = TableForIsa<Ops>(isa);
  if (ops == nullptr && isa != "avx512" && isa != "avx2") {
    return InvalidArgument("unknown ISA '" + std::string(isa) + "'", "isa");
  }
  if (ops == nullptr || !HostCanRun(isa)) {
    return MakeError(ErrorCode::kFailedPrecondition, "this CPU cannot run the " + std::string(isa) + " kernel", "isa");
  }
  HardwareProfile hw = HostHardware();
  hw.cpu.isa = isa == "portable" ? "base" : std::string(isa);
  return IsaOps<Ops>{ops, std::move(hw)};
}

}  // namespace blocktune::kernels
