// The numbered migration files, embedded in order (0001_init.sql first).
#pragma once

#include <string_view>
#include <vector>

namespace blocktune::store {

struct Migration {
  std::string_view name;
  std::string_view sql;
};

const std::vector<Migration>& Migrations();

}  // namespace blocktune::store
