// The numbered migration files, embedded in order (0001_init.sql first). `version` is the
// number in the file's name; store/migrations.cmake fails the build unless the versions are
// exactly 1, 2, 3, ... so Migrations()[i].version == i + 1.
#pragma once

#include <string_view>
#include <vector>

namespace blocktune::store {

struct Migration {
  int version = 0;  // the NNNN of NNNN_name.sql
  std::string_view name;
  std::string_view sql;
};

const std::vector<Migration>& Migrations();

}  // namespace blocktune::store
