// reference_oracle: runs one of blocktune's kernel references (the plain oracles the tuner
// verifies every config against) on inputs from files, for python/tests/test_peer_oracle.py,
// which checks them against JAX's own implementations on the same random inputs.
//   reference_oracle KERNEL DIR name=value...
// The names are the kernel's shape fields (and z_loss_weight for fused_cross_entropy). Inputs
// are DIR/<tensor>.bin, raw little-endian f32 (int32 for labels, group_sizes, kv_lens,
// page_indices, cu_q_lens) in the layouts of the kernel's header; outputs are written as
// DIR/<tensor>.out.bin, raw f32. Exit status 2 on a bad argument or file.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "kernels/flash_attention/flash_attention.h"
#include "kernels/fused_cross_entropy/fused_cross_entropy.h"
#include "kernels/grouped_matmul/grouped_matmul.h"
#include "kernels/matmul/matmul.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

namespace {

namespace k = blocktune::kernels;

struct Args {
  std::string dir;
  std::map<std::string, std::string> values;

  int64_t Int(const std::string& name) const {
    const auto it = values.find(name);
    if (it == values.end()) {
      std::cerr << "missing " << name << "=\n";
      std::exit(2);
    }
    return std::strtoll(it->second.c_str(), nullptr, 10);
  }
  float Float(const std::string& name) const {
    const auto it = values.find(name);
    return it == values.end() ? 0.0f : std::strtof(it->second.c_str(), nullptr);
  }
};

template <typename T>
std::vector<T> Read(const Args& a, const std::string& name, int64_t count) {
  std::ifstream f(a.dir + "/" + name + ".bin", std::ios::binary);
  std::vector<T> v(static_cast<size_t>(count));
  if (!f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T))) ||
      f.peek() != std::char_traits<char>::eof()) {
    std::cerr << name << ".bin: expected exactly " << count << " values of " << sizeof(T) << " bytes\n";
    std::exit(2);
  }
  return v;
}

void Write(const Args& a, const std::string& name, const std::vector<float>& v) {
  std::ofstream f(a.dir + "/" + name + ".out.bin", std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  if (!f) {
    std::cerr << "cannot write " << name << ".out.bin\n";
    std::exit(2);
  }
}

void Matmul(const Args& a) {
  const k::MatmulShape s{a.Int("m"), a.Int("n"), a.Int("k")};
  const auto x = Read<float>(a, "a", s.m * s.k);
  const auto y = Read<float>(a, "b", s.k * s.n);
  std::vector<float> c(static_cast<size_t>(s.m * s.n));
  k::MatmulReference(s, x.data(), y.data(), c.data());
  Write(a, "c", c);
}

void FlashAttention(const Args& a) {
  k::FlashAttentionShape s;
  s.batch = a.Int("batch");
  s.heads = a.Int("heads");
  s.kv_heads = a.Int("kv_heads");
  s.seq_q = a.Int("seq_q");
  s.seq_kv = a.Int("seq_kv");
  s.head_dim = a.Int("head_dim");
  s.causal = a.Int("causal") != 0;
  const auto q = Read<float>(a, "q", s.batch * s.heads * s.seq_q * s.head_dim);
  const auto kk = Read<float>(a, "k", s.batch * s.kv_heads * s.seq_kv * s.head_dim);
  const auto v = Read<float>(a, "v", s.batch * s.kv_heads * s.seq_kv * s.head_dim);
  std::vector<float> o(q.size()), lse(static_cast<size_t>(s.batch * s.heads * s.seq_q));
  k::FlashAttentionReference(s, q.data(), kk.data(), v.data(), o.data(), lse.data());
  Write(a, "o", o);
  Write(a, "lse", lse);
}

void FusedCrossEntropy(const Args& a) {
  const k::FusedCrossEntropyShape s{a.Int("b"), a.Int("h"), a.Int("v")};
  const auto x = Read<float>(a, "x", s.b * s.h);
  const auto w = Read<float>(a, "w", s.h * s.v);
  const auto labels = Read<int32_t>(a, "labels", s.b);
  const auto dloss = Read<float>(a, "dloss", s.b);
  std::vector<float> loss(static_cast<size_t>(s.b)), lse(loss.size()), dx(x.size()), dw(w.size());
  k::FusedCrossEntropyReference(s, x.data(), w.data(), labels.data(), a.Float("z_loss_weight"), loss.data(), lse.data(),
                                dloss.data(), dx.data(), dw.data());
  Write(a, "loss", loss);
  Write(a, "lse", lse);
  Write(a, "dx", dx);
  Write(a, "dw", dw);
}

void GroupedMatmul(const Args& a) {
  k::GroupedMatmulShape s;
  s.m = a.Int("m");
  s.k = a.Int("k");
  s.n = a.Int("n");
  s.groups = a.Int("groups");
  const auto sizes = Read<int32_t>(a, "group_sizes", s.groups);
  const auto lhs = Read<float>(a, "lhs", s.m * s.k);
  const auto rhs = Read<float>(a, "rhs", s.groups * s.k * s.n);
  std::vector<float> out(static_cast<size_t>(s.m * s.n));
  k::GroupedMatmulReference(s, sizes.data(), lhs.data(), rhs.data(), out.data());
  Write(a, "out", out);
}

void RaggedPagedAttention(const Args& a) {
  k::RaggedPagedAttentionShape s;
  s.num_seqs = a.Int("num_seqs");
  s.total_q_tokens = a.Int("total_q_tokens");
  s.num_pages = a.Int("num_pages");
  s.page_size = a.Int("page_size");
  s.pages_per_seq = a.Int("pages_per_seq");
  s.heads = a.Int("heads");
  s.kv_heads = a.Int("kv_heads");
  s.head_dim = a.Int("head_dim");
  const auto q = Read<float>(a, "q", s.total_q_tokens * s.heads * s.head_dim);
  const auto kp = Read<float>(a, "k_pages", s.num_pages * s.page_size * s.kv_heads * s.head_dim);
  const auto vp = Read<float>(a, "v_pages", s.num_pages * s.page_size * s.kv_heads * s.head_dim);
  const auto kv_lens = Read<int32_t>(a, "kv_lens", s.num_seqs);
  const auto pages = Read<int32_t>(a, "page_indices", s.num_seqs * s.pages_per_seq);
  const auto cu = Read<int32_t>(a, "cu_q_lens", s.num_seqs + 1);
  k::RaggedPagedAttentionInputs in;
  in.q = q.data();
  in.k_pages = kp.data();
  in.v_pages = vp.data();
  in.kv_lens = kv_lens.data();
  in.page_indices = pages.data();
  in.cu_q_lens = cu.data();
  if (const auto st = k::ValidateMetadata(s, in); !st) {
    std::cerr << "metadata: " << st.error().message << "\n";
    std::exit(2);
  }
  std::vector<float> out(q.size());
  k::RaggedPagedAttentionReference(s, in, out.data());
  Write(a, "out", out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: reference_oracle KERNEL DIR name=value...\n";
    return 2;
  }
  const std::string kernel = argv[1];
  Args a{argv[2], {}};
  for (int i = 3; i < argc; ++i) {
    const std::string kv = argv[i];
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      std::cerr << "not name=value: " << kv << "\n";
      return 2;
    }
    a.values[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (kernel == "matmul") {
    Matmul(a);
  } else if (kernel == "flash_attention") {
    FlashAttention(a);
  } else if (kernel == "fused_cross_entropy") {
    FusedCrossEntropy(a);
  } else if (kernel == "grouped_matmul") {
    GroupedMatmul(a);
  } else if (kernel == "ragged_paged_attention") {
    RaggedPagedAttention(a);
  } else {
    std::cerr << "unknown kernel " << kernel << "\n";
    return 2;
  }
  return 0;
}
