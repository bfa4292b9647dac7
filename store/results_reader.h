// ResultsReader: another blocktune database cut into results batches (store/results.h) without
// writing to it, which is what `blocktune db merge` applies to its output and `blocktune push`
// sends to POST /v1/results.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "kernels/core/result.h"
#include "store/results.h"
#include "store/sqlite.h"

namespace blocktune::store {

// Another blocktune database, opened read-only (its bytes are never changed). One at this
// build's schema version is read in place; an older one is copied (VACUUM INTO a temporary
// file) and the copy migrated; a newer one is refused (failed_precondition), as is a file that
// is not a blocktune database (data_loss).
class ResultsReader {
 public:
  static Result<std::unique_ptr<ResultsReader>> Open(const std::string& path);
  ~ResultsReader();
  ResultsReader(const ResultsReader&) = delete;
  ResultsReader& operator=(const ResultsReader&) = delete;

  // Every sweep in id order, each as batches of at most `batch_size` measurements in id order
  // (a sweep without measurements as one empty batch). Stops at the first error of `emit`.
  Status ForEachBatch(int64_t batch_size, const std::function<Status(const ResultsBatch&)>& emit);
  // Measurements and sweeps in the file.
  Result<std::pair<int64_t, int64_t>> Counts();
  int schema_version() const { return version_; }

 private:
  ResultsReader() = default;
  Connection conn_;
  std::string temp_path_;  // the migrated copy of an older file, removed on destruction
  int version_ = 0;
};

}  // namespace blocktune::store
