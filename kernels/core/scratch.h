// ScratchBuffer: a 4 KiB-aligned float buffer that only grows. Kernels keep them thread_local:
// the pool's workers persist, so after the first call of a given size no call allocates.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace blocktune::kernels {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(data_); }

  // At least `floats` floats (contents unspecified). A 4 KiB multiple for aligned_alloc, plus
  // 16 floats of slack for packers whose 16-byte stores overhang the last element. Out of
  // memory aborts: kernels do not throw, and a half-allocated panel has no sane fallback.
  float* Get(int64_t floats) {
    if (floats > capacity_) {
      std::free(data_);
      const int64_t bytes = ((floats + 16) * 4 + 4095) / 4096 * 4096;
      data_ = static_cast<float*>(std::aligned_alloc(4096, static_cast<size_t>(bytes)));
      if (data_ == nullptr) std::abort();
      capacity_ = bytes / 4 - 16;
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  int64_t capacity_ = 0;
};

}  // namespace blocktune::kernels
