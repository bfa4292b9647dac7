// BatchDigest and the SHA-256 it hashes with; see batch_digest.h.
#include "store/batch_digest.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace blocktune::store {
namespace {

// SHA-256 (FIPS 180-4), for the batch digest below; a few hundred bytes per measurement, once
// per batch, so a plain implementation is plenty.
class Sha256 {
 public:
  void Update(std::string_view data) {
    for (unsigned char c : data) {
      block_[fill_++] = c;
      ++bytes_;
      if (fill_ == 64) Compress();
    }
  }
  std::string HexDigest() {
    const uint64_t bits = bytes_ * 8;
    Update(std::string_view("\x80", 1));
    while (fill_ != 56) Update(std::string_view("\0", 1));
    for (int i = 7; i >= 0; --i) {
      block_[fill_++] = static_cast<unsigned char>(bits >> (8 * i));
    }
    Compress();
    std::string out;
    char buf[9];
    for (uint32_t v : h_) {
      std::snprintf(buf, sizeof buf, "%08x", v);
      out += buf;
    }
    return out;
  }

 private:
  static uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void Compress() {
    static constexpr uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = uint32_t{block_[4 * i]} << 24 | uint32_t{block_[4 * i + 1]} << 16 | uint32_t{block_[4 * i + 2]} << 8 |
             uint32_t{block_[4 * i + 3]};
    }
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    const uint32_t add[8] = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i) h_[i] += add[i];
    fill_ = 0;
  }

  std::array<uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char block_[64] = {};
  int fill_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace

std::string BatchDigest(const ResultsBatch& b) {
  Sha256 sha;
  auto field = [&](std::string_view v) {
    sha.Update(std::to_string(v.size()));
    sha.Update(":");
    sha.Update(v);
  };
  auto number = [&](double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%a", v);
    field(buf);
  };
  field(b.sweep.uid);
  field(b.hardware.Key());
  field(std::to_string(b.measurements.size()));
  for (const tuner::Measurement& m : b.measurements) {
    field(m.bucket);
    field(m.problem.dims.ToString());
    field(m.config.ToString());
    field(tuner::OutcomeName(m.outcome));
    field(m.detail);
    field(std::to_string(m.iterations));
    for (double v : {m.median_ns, m.cv, m.max_abs_err, m.max_rel_err}) number(v);
    field(std::to_string(m.samples_ns.size()));
    for (double v : m.samples_ns) number(v);
    field(m.created_at);
    field(m.fingerprint);
  }
  return sha.HexDigest();
}

}  // namespace blocktune::store
