// Internal to kernels/ragged_paged_attention: the table of operations one ISA provides, so the
// driver in ragged_paged_attention.cc is written once and each ragged_paged_attention_<isa>.cc,
// under its own target attribute, only supplies the inner loops.
//
#pragma once

#include <cstdint>

#include "kernels/flash_attention/flash_attention_ops.h"

namespace blocktune::kernels {

// One algorithm (ragged_paged_attention.cc) in two forms, chosen per work item:
//  * panel form (an item with at least Ops::panel_min_queries queries, i.e. prefill): the
//    item's score rows are panels of flash_attention's layout, one query head x up to `panel`
//    consecutive queries in the vector lanes, and the inner loops are flash_attention's own
//    (Ops::panel) on K/V blocks packed out of the pages. The causal limit of query c of a panel
//    is a diagonal, exactly flash_attention's mask.
//  * dot form (fewer queries, i.e. decode): score rows are (query, head) pairs of the item, each
//    a row of head_dim floats; scores are register tiles of dot products against the block's
//    K rows (rows x keys, reduced across lanes once per tile), P.V register tiles of rows x
//    head_dim chunks. Both forms pack each K/V block out of the pages first (rows in order).
// Layout contract of the dot-form operations: q and o rows are 64-byte aligned, `ldq`/`ldo` a
// multiple of 16 floats, q zero beyond head_dim; k and v are row pointers (head_dim floats each,
// any alignment) and k has n + 16 readable entries (tiles past n read repeats; their scores
// are dropped); s rows hold at least n rounded up to 16 floats.
namespace rpa_internal {

struct Ops {
  const char* name;
  const flash_attention_internal::Ops* panel;  // the panel form's inner loops
  int64_t panel_min_queries;                   // items with fewer queries take the dot form
  // s[r * lds + t] = q_r . k_t for r < rows, t < n.
  void (*dot_scores)(const float* q, int64_t ldq, int64_t rows, const float* const* k, int64_t n, int64_t head_dim,
                     float* s, int64_t lds);
  // One online-softmax step of one row: scores s[0, n_valid) are live, [n_valid, n) masked.
  // Updates the running max *m and sum *l, replaces s[0, n) by p (0 where masked) and returns
  // alpha = exp(m_old - m_new) (0 on a row's first live block, 1 when n_valid <= 0).
  float (*softmax_row)(float* s, int64_t n, int64_t n_valid, float* m, float* l);
  // o_r = alpha[r] * o_r + sum_{t < n} p[r * ldp + t] * v_t for r < rows, over head_dim.
  void (*dot_pv)(const float* p, int64_t ldp, int64_t rows, const float* const* v, int64_t n, int64_t head_dim,
                 float* o, int64_t ldo, const float* alpha);

  // One table per ISA (kernels/core/isa_dispatch.h), each in ragged_paged_attention_<isa>.cc;
  // Avx512 and Avx2 exist on x86-64 builds only (kernels/CMakeLists.txt).
  static const Ops& Avx512();
  static const Ops& Avx2();
  static const Ops& Portable();
};

}  // namespace rpa_internal

}  // namespace blocktune::kernels
