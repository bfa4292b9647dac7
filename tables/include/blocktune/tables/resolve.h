// blocktune/tables/resolve.h: the lookup policy for tuned block sizes, written once.
//
// This header is the leaf every other piece stands on: the kernel specs use it to bucket
// problems, the daemon uses it to answer GET /v1/lookup from rows loaded out of SQLite, and
// every generated `<kernel>_tuned_block_sizes.h` uses it to answer from constexpr rows. It
// needs only the C++17 standard library (plus <cpuid.h> on x86), so an application can embed
// a generated table without linking anything of ours.
//
// Precedence: source.h, written once (Source, ByPrecedence) and used by both: a generated
// header answers tuned, tuned_fallback or default; the daemon adds explicit, override and
// nearest around the same index. A lookup always answers, says which source produced the
// answer and how many levels of the key's chain it fell.
//
// The parts, one job each (all included here, so `#include "resolve.h"` keeps giving all of it):
//   source.h         the lookup's sources and their precedence, written once for every lookup
//   hardware_key.h   the hardware key grammar and its fallback chain
//   host_cpu.h       the host's CPU (CPUID and BLOCKTUNE_ISA) and its hardware keys
//   bucket.h         shape buckets: each dim rounded as its kernel declares, the bucket id
//   hash_table.h     the hashing and the open-addressing hash table the index is built on
//   index.h          the index a lookup resolves over (names, choices) and BuildIndex, which builds it
//   query_memo.h     the per-thread memo of queried keys resolved against one index
//   table_lookup.h   the lookup every generated header exposes, over its constexpr tables
//   row_index.h      an index built at run time over rows in memory (the daemon's rows from SQLite)
#pragma once

#include "bucket.h"
#include "hardware_key.h"
#include "hash_table.h"
#include "host_cpu.h"
#include "index.h"
#include "query_memo.h"
#include "row_index.h"
#include "source.h"
#include "table_lookup.h"
