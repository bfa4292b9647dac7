// Keeps docs/adding-a-kernel.md true. The page's table lists every file a new kernel touches
// (paths with <kernel> / <Kernel> placeholders, and what each must contain); this test reads
// it and checks, for every registered kernel, that the files exist and contain it, that the
// kernel's folder holds nothing the table does not name, that every file of the tree naming all
// registered kernels (a list a new kernel would have to join) is in the table, and that the
// folders the page says never change do not reach into any kernel's folder.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/kernel_spec.h"

namespace blocktune {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = BLOCKTUNE_SOURCE_DIR;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Replace(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

// grouped_matmul -> GroupedMatmul (the spelling of types and of <Kernel>Spec()).
std::string PascalCase(std::string_view name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
    } else {
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
  }
  return out;
}

std::string ForKernel(const std::string& pattern, std::string_view kernel) {
  return Replace(Replace(pattern, "<kernel>", kernel), "<Kernel>", PascalCase(kernel));
}

// Shell-style match with '*' only (within one path component is enough for the table).
bool GlobMatch(std::string_view pattern, std::string_view text) {
  const size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == text;
  const std::string_view head = pattern.substr(0, star), tail = pattern.substr(star + 1);
  return text.size() >= head.size() + tail.size() && text.substr(0, head.size()) == head &&
         text.substr(text.size() - tail.size()) == tail;
}

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `word` stands in `text` with no identifier character either side (grouped_matmul does not
// name matmul).
bool NamesWord(std::string_view text, std::string_view word) {
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    const bool left = at == 0 || !IsWordChar(text[at - 1]);
    const size_t end = at + word.size();
    const bool right = end == text.size() || !IsWordChar(text[end]);
    if (left && right) return true;
  }
  return false;
}

struct Row {
  std::string path;     // may hold <kernel>, <Kernel> and one '*'
  std::string contain;  // may be empty
};

struct Doc {
  std::vector<Row> rows;
  std::vector<std::string> unchanged;  // folders, with a trailing '/'
};

std::string Unquote(std::string cell) {
  const size_t a = cell.find('`');
  const size_t b = cell.rfind('`');
  return a == std::string::npos || b == a ? std::string() : cell.substr(a + 1, b - a - 1);
}

Doc ParseDoc() {
  Doc doc;
  std::istringstream in(ReadFile(kRoot / "docs/adding-a-kernel.md"));
  std::string section, line;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) section = line.substr(3);
    if (section == "The files" && line.rfind("| `", 0) == 0) {
      std::vector<std::string> cells;
      std::string cell;
      for (char c : line.substr(1)) {
        if (c == '|') {
          cells.push_back(cell);
          cell.clear();
        } else {
          cell += c;
        }
      }
      if (cells.size() >= 3) doc.rows.push_back({Unquote(cells[0]), Unquote(cells[2])});
    }
    if (section == "What does not change" && line.rfind("- `", 0) == 0) doc.unchanged.push_back(Unquote(line));
  }
  return doc;
}

// Every file of the source tree, relative to it, without VCS metadata, build trees (a folder
// holding CMakeCache.txt) and installed packages.
std::vector<std::string> TreeFiles() {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(kRoot); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory()) {
      if (name == ".git" || name == "node_modules" || name == "var" || fs::exists(it->path() / "CMakeCache.txt")) {
        it.disable_recursion_pending();
      }
      continue;
    }
    if (it->is_regular_file() && it->file_size() < (2 << 20)) out.push_back(fs::relative(it->path(), kRoot).string());
  }
  return out;
}

class AddingAKernelDoc : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { doc_ = new Doc(ParseDoc()); }
  static void TearDownTestSuite() {
    delete doc_;
    doc_ = nullptr;
  }
  static Doc* doc_;
};
Doc* AddingAKernelDoc::doc_ = nullptr;

TEST_F(AddingAKernelDoc, TableParses) {
  // A table that no longer parses would make every other check here vacuous.
  ASSERT_GE(doc_->rows.size(), 10u);
  ASSERT_GE(doc_->unchanged.size(), 3u);
  bool registry = false;
  for (const Row& r : doc_->rows) registry |= r.path == "kernels/builtin/builtin.cc";
  EXPECT_TRUE(registry);
}

TEST_F(AddingAKernelDoc, EveryListedFileExistsAndSaysWhatItMust) {
  for (const KernelSpec* k : AllKernels()) {
    for (const Row& r : doc_->rows) {
      if (r.path.find('*') != std::string::npos) continue;  // optional files
      const std::string path = ForKernel(r.path, k->name());
      ASSERT_TRUE(fs::is_regular_file(kRoot / path)) << path << " (for " << k->name() << ") is listed but missing";
      if (!r.contain.empty()) {
        const std::string want = ForKernel(r.contain, k->name());
        EXPECT_NE(ReadFile(kRoot / path).find(want), std::string::npos) << path << " does not contain " << want;
      }
    }
  }
}

TEST_F(AddingAKernelDoc, AKernelsFolderHoldsOnlyListedFiles) {
  for (const KernelSpec* k : AllKernels()) {
    const fs::path folder = kRoot / "kernels" / std::string(k->name());
    ASSERT_TRUE(fs::is_directory(folder)) << folder;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      if (!entry.is_regular_file()) continue;
      const std::string rel = fs::relative(entry.path(), kRoot).string();
      bool listed = false;
      for (const Row& r : doc_->rows) listed |= GlobMatch(ForKernel(r.path, k->name()), rel);
      EXPECT_TRUE(listed) << rel << " is not in docs/adding-a-kernel.md";
    }
  }
}

// A file that names every registered kernel is a list; a new kernel has to join it, so the
// page must say so.
TEST_F(AddingAKernelDoc, EveryListOfAllKernelsIsInTheTable) {
  if (AllKernels().size() < 2) GTEST_SKIP() << "with one kernel every mention looks like a list";
  std::set<std::string> listed;
  for (const Row& r : doc_->rows) {
    if (r.path.find('<') == std::string::npos) listed.insert(r.path);
  }
  int lists = 0;
  for (const std::string& rel : TreeFiles()) {
    const std::string text = ReadFile(kRoot / rel);
    bool all = true;
    for (const KernelSpec* k : AllKernels()) all = all && NamesWord(text, k->name());
    if (!all) continue;
    ++lists;
    EXPECT_TRUE(listed.count(rel)) << rel << " names every kernel but is not in docs/adding-a-kernel.md";
  }
  EXPECT_GE(lists, 2) << "the registry and kernels/CMakeLists.txt at least";
}

TEST_F(AddingAKernelDoc, FoldersThatDoNotChangeNeverReachIntoAKernel) {
  std::vector<std::string> forbidden;
  for (const KernelSpec* k : AllKernels()) {
    const std::string name(k->name());
    forbidden.push_back("kernels/" + name + "/");
    forbidden.push_back(PascalCase(name) + "Spec()");
    forbidden.push_back("FindKernel(\"" + name + "\")");
  }
  int files = 0;
  for (const std::string& rel : TreeFiles()) {
    bool inside = false;
    for (const std::string& folder : doc_->unchanged) inside |= rel.rfind(folder, 0) == 0;
    if (!inside) continue;
    ++files;
    const std::string text = ReadFile(kRoot / rel);
    for (const std::string& f : forbidden) EXPECT_EQ(text.find(f), std::string::npos) << rel << " uses " << f;
  }
  EXPECT_GT(files, 20);
}

// The page tells per-ISA files to include kernels/core/simd.h: it keeps GCC 12's false
// positives inside <immintrin.h> silent, which only works if no file includes it first.
TEST_F(AddingAKernelDoc, KernelsIncludeIntrinsicsOnlyThroughSimdH) {
  for (const std::string& rel : TreeFiles()) {
    if (rel.rfind("kernels/", 0) != 0 || rel == "kernels/core/simd.h") continue;
    EXPECT_EQ(ReadFile(kRoot / rel).find("#include <immintrin.h>"), std::string::npos)
        << rel << ": include kernels/core/simd.h instead";
  }
}

}  // namespace
}  // namespace blocktune
