// A fresh, empty directory per test for databases and other files, removed when the test ends.
// Named after the process and the running test (and parameter), so tests running in parallel
// under ctest -j never share one, and a crashed run's leftovers are cleared by the next run.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace blocktune::test {

class ScratchDir {
 public:
  // <TempDir>/<prefix>_<pid>_<suite>_<test>, with '/' of parameterised names turned into '_'.
  explicit ScratchDir(std::string_view prefix) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(prefix) + "_" + std::to_string(getpid());
    if (info) name += std::string("_") + info->test_suite_name() + "_" + info->name();
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    path_ = std::filesystem::path(::testing::TempDir()) / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;  // best effort: a test that failed may have left files open
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A path inside the directory, as a string (what Store::Open and friends take).
  std::string File(std::string_view name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace blocktune::test
