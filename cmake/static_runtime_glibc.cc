// Linked into the static runtime's programs only (cmake/static_runtime.cmake), never into the
// normal build: definitions of the two glibc functions newer than 2.34 that Debian 12's static
// libstdc++ and libgcc call, so the programs need glibc 2.34 (manylinux_2_34: RHEL 9, Ubuntu
// 22.04, Debian 12) rather than 2.36. Our own code needs 2.34 (posix_spawn_file_actions_
// addclosefrom_np, and __libc_start_main for any program linked against glibc >= 2.34).
//   arc4random (glibc 2.36): std::random_device's default source in libstdc++.a. Here from
//     getrandom (2.25), which is what glibc's own arc4random reads.
//   _dl_find_object (2.35): the unwinder in libgcc_eh.a finds the .eh_frame_hdr of the object
//     holding a return address with it. Here from dl_iterate_phdr, which that unwinder used
//     before 2.35 and does on older glibc: the same answer, with the loader's lock taken per
//     frame. Exceptions are rare in blocktune (CLI11's --help and --version, muparser's syntax
//     errors, both covered by the e2e_wheel test).
// A program's own definition wins over the C library's at link time, so no GLIBC_2.35/2.36
// version is required; deploy/wheel.sh derives the wheel's tag from what remains.
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>

extern "C" uint32_t arc4random() noexcept {
  uint32_t value = 0;
  size_t got = 0;
  while (got < sizeof value) {
    const ssize_t n = getrandom(reinterpret_cast<char*>(&value) + got, sizeof value - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      abort();  // as glibc's: arc4random has no way to fail
    }
  }
  return value;
}

namespace {

struct Search {
  uintptr_t pc;
  dl_find_object* out;
  bool found;
};

int FindObject(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Search*>(data);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  void* eh_frame = nullptr;
  bool inside = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      lo = start < lo ? start : lo;
      hi = start + ph.p_memsz > hi ? start + ph.p_memsz : hi;
      inside = inside || (s->pc >= start && s->pc < start + ph.p_memsz);
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      eh_frame = reinterpret_cast<void*>(start);
    }
  }
  if (!inside) return 0;
  *s->out = dl_find_object{};
  s->out->dlfo_map_start = reinterpret_cast<void*>(lo);
  s->out->dlfo_map_end = reinterpret_cast<void*>(hi);
  s->out->dlfo_eh_frame = eh_frame;
  s->found = true;
  return 1;
}

}  // namespace

extern "C" int _dl_find_object(void* pc, dl_find_object* result) noexcept {
  Search s{reinterpret_cast<uintptr_t>(pc), result, false};
  dl_iterate_phdr(FindObject, &s);
  if (!s.found) return -1;
  Dl_info info;
  link_map* map = nullptr;
  if (dladdr1(pc, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0) result->dlfo_link_map = map;
  return 0;
}
