// Spec files of external kernels: parsing, checking and the KernelSpec they become.
#include "external/spec.h"

#include <muParser.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "external/runner.h"

namespace blocktune::external {
namespace {

using nlohmann::json;

// Bounds on what a spec may declare: the config space is materialised (ConfigSpace), and the
// daemon holds every spec in memory.
constexpr size_t kMaxParams = 16;
constexpr size_t kMaxValues = 1024;
constexpr size_t kMaxDims = 8;
constexpr size_t kMaxRestrictions = 64;
constexpr size_t kMaxExpressionChars = 1000;
constexpr double kMaxSpaceSize = 1e6;
constexpr int64_t kMaxDimValue = int64_t{1} << 40;
constexpr size_t kMaxSpecBytes = 1 << 20;

const char kSchema[] = {
#include "external/kernel_spec_schema.inc"
};

bool IsIdentifier(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  if (!(std::islower(static_cast<unsigned char>(s[0])) || std::isupper(static_cast<unsigned char>(s[0])) ||
        s[0] == '_')) {
    return false;
  }
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool IsKernelName(std::string_view s) {
  if (s.empty() || s.size() > 64 || !std::islower(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

double Mod(double a, double b) { return std::fmod(a, b); }

// A parser with the names bound and the operators a restriction may use besides muparser's
// built-ins (+ - * / ^ == != < <= > >= && || ?:, min, max, abs, ...): % (fmod).
std::unique_ptr<mu::Parser> MakeParser(const std::vector<std::string>& names, double* values) {
  auto p = std::make_unique<mu::Parser>();
  p->DefineOprt("%", Mod, mu::prMUL_DIV, mu::oaLEFT, true);
  for (size_t i = 0; i < names.size(); ++i) p->DefineVar(names[i], &values[i]);
  return p;
}

// digits (least significant first) *= factor, exactly.
void MultiplyDecimal(std::vector<int>& digits, size_t factor) {
  uint64_t carry = 0;
  for (int& d : digits) {
    const uint64_t v = static_cast<uint64_t>(d) * factor + carry;
    d = static_cast<int>(v % 10);
    carry = v / 10;
  }
  for (; carry > 0; carry /= 10) digits.push_back(static_cast<int>(carry % 10));
}

}  // namespace

std::string_view KernelSpecSchema() { return std::string_view(kSchema, sizeof kSchema); }

struct ExternalKernelSpec::Expressions {
  std::mutex mu;
  std::vector<std::string> names;  // params, then dims
  std::vector<double> values;      // bound to the parsers; same order as names
  std::vector<std::unique_ptr<mu::Parser>> restrictions;
  std::unique_ptr<mu::Parser> flops, bytes;
  size_t params = 0;
};

ExternalKernelSpec::ExternalKernelSpec() : expr_(std::make_unique<Expressions>()) {}
ExternalKernelSpec::~ExternalKernelSpec() = default;

namespace {

class RunnerOnlyInstance final : public KernelInstance {
 public:
  explicit RunnerOnlyInstance(std::string name) : name_(std::move(name)) {}
  Status Run(const Config&, int) override {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "kernel " + name_ + " is external: it runs in its runner, not in this process");
  }
  void RunReference() override {}
  void PoisonOutputs() override {}
  VerifyReport Verify() const override { return {}; }

 private:
  std::string name_;
};

}  // namespace

Status ExternalKernelSpec::ValidateConfig(const Config& config, const Problem& problem, const HardwareProfile&) const {
  for (const auto& [n, v] : config.values()) {
    const auto it = std::find_if(params_.begin(), params_.end(), [&](const ParamSpec& p) { return p.name == n; });
    if (it == params_.end()) return InvalidArgument("unknown parameter '" + n + "' for kernel " + name_, "config." + n);
    if (std::find(it->candidates.begin(), it->candidates.end(), v) == it->candidates.end()) {
      return InvalidArgument(n + "=" + std::to_string(v) + " is not one of the spec's values", "config." + n);
    }
  }
  for (const auto& p : params_) {
    if (!config.Get(p.name)) return InvalidArgument("missing parameter '" + p.name + "'", "config." + p.name);
  }
  std::lock_guard lock(expr_->mu);
  for (size_t i = 0; i < params_.size(); ++i) expr_->values[i] = static_cast<double>(*config.Get(params_[i].name));
  for (size_t i = 0; i < dims_.size(); ++i) {
    expr_->values[params_.size() + i] = static_cast<double>(problem.Dim(dim_names_[i]));
  }
  for (size_t i = 0; i < expr_->restrictions.size(); ++i) {
    double v = 0;
    try {
      v = expr_->restrictions[i]->Eval();
    } catch (const mu::Parser::exception_type& e) {
      return InvalidArgument("restriction '" + restriction_texts_[i] + "': " + e.GetMsg(), "config");
    }
    if (v == 0 || std::isnan(v)) {
      return InvalidArgument("restriction '" + restriction_texts_[i] + "' does not hold for " + config.ToString(),
                             "config");
    }
  }
  return {};
}

Problem ExternalKernelSpec::VerificationProblem(const Config&, const Problem& bucket_problem) const {
  return bucket_problem;
}

std::unique_ptr<KernelInstance> ExternalKernelSpec::MakeInstance(const Problem&, uint64_t) const {
  return std::make_unique<RunnerOnlyInstance>(name_);
}

double ExternalKernelSpec::Flops(const Problem& problem) const {
  if (!expr_->flops) return 0;
  std::lock_guard lock(expr_->mu);
  for (size_t i = 0; i < dims_.size(); ++i)
    expr_->values[params_.size() + i] = static_cast<double>(problem.Dim(dim_names_[i]));
  try {
    const double v = expr_->flops->Eval();
    return std::isfinite(v) && v > 0 ? v : 0;
  } catch (const mu::Parser::exception_type&) {
    return 0;
  }
}

double ExternalKernelSpec::Bytes(const Problem& problem) const {
  if (!expr_->bytes) return 0;
  std::lock_guard lock(expr_->mu);
  for (size_t i = 0; i < dims_.size(); ++i)
    expr_->values[params_.size() + i] = static_cast<double>(problem.Dim(dim_names_[i]));
  try {
    const double v = expr_->bytes->Eval();
    return std::isfinite(v) && v > 0 ? v : 0;
  } catch (const mu::Parser::exception_type&) {
    return 0;
  }
}

namespace {

// Errors name the file and the field: "specs/mm.json: parameters[1].values: ...".
struct Ctx {
  const std::string& source;
  std::unexpected<Error> Bad(const std::string& path, const std::string& message) const {
    return InvalidArgument(source + ": " + path + ": " + message, path);
  }
};

Result<int64_t> GetInt(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_number_integer()) return ctx.Bad(path, "must be an integer");
  return j.get<int64_t>();
}

Result<std::string> GetString(const Ctx& ctx, const json& j, const std::string& path, size_t max_chars) {
  if (!j.is_string()) return ctx.Bad(path, "must be a string");
  std::string s = j.get<std::string>();
  if (s.size() > max_chars) return ctx.Bad(path, "longer than " + std::to_string(max_chars) + " characters");
  return s;
}

Status CheckKeys(const Ctx& ctx, const json& obj, const std::string& path,
                 std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, _] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      return ctx.Bad(path.empty() ? k : path + "." + k, "unknown field");
    }
  }
  return {};
}

// Parses `text` against the bound names; evaluates once so muparser reports syntax errors and
// unknown names now, at load, rather than during a sweep.
Result<std::unique_ptr<mu::Parser>> Compile(const Ctx& ctx, const std::string& path, const std::string& what,
                                            const std::string& text, const std::vector<std::string>& names,
                                            double* values) {
  auto parser = MakeParser(names, values);
  try {
    parser->SetExpr(text);
    parser->Eval();
  } catch (const mu::Parser::exception_type& e) {
    return ctx.Bad(path, what + " '" + text + "': " + e.GetMsg());
  }
  return parser;
}

}  // namespace

Result<std::unique_ptr<ExternalKernelSpec>> ParseKernelSpec(std::string_view json_text, const std::string& source,
                                                            const std::string& base_dir) {
  const Ctx ctx{source};
  if (json_text.size() > kMaxSpecBytes) return ctx.Bad("", "larger than 1 MiB");
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded()) return InvalidArgument(source + ": not valid JSON");
  if (!j.is_object()) return InvalidArgument(source + ": must be a JSON object");
  if (auto s = CheckKeys(ctx, j, "",
                         {"$schema", "name", "description", "parameters", "restrictions", "dims", "dtypes", "default",
                          "runner", "flops", "bytes"});
      !s) {
    return std::unexpected(s.error());
  }
  std::unique_ptr<ExternalKernelSpec> spec(new ExternalKernelSpec());
  spec->source_ = source;

  if (!j.contains("name")) return ctx.Bad("name", "required");
  auto name = GetString(ctx, j["name"], "name", 64);
  if (!name) return std::unexpected(name.error());
  if (!IsKernelName(*name)) return ctx.Bad("name", "must match [a-z][a-z0-9_]* (at most 64 characters)");
  spec->name_ = *name;
  if (j.contains("description")) {
    auto d = GetString(ctx, j["description"], "description", 4000);
    if (!d) return std::unexpected(d.error());
    spec->description_ = *d;
  }

  std::set<std::string> taken;
  // Parameters.
  if (!j.contains("parameters") || !j["parameters"].is_array() || j["parameters"].empty()) {
    return ctx.Bad("parameters", "required: a non-empty array");
  }
  if (j["parameters"].size() > kMaxParams) return ctx.Bad("parameters", "at most 16 parameters");
  // The size of the space, exactly, as decimal digits (least significant first): 16 parameters
  // of 1,024 values are 2^160 configs, past any integer type, and the refusal must say the
  // true figure (a double cast to int64 printed -9223372036854775808).
  std::vector<int> space_digits = {1};
  for (size_t i = 0; i < j["parameters"].size(); ++i) {
    const json& pj = j["parameters"][i];
    const std::string path = "parameters[" + std::to_string(i) + "]";
    if (!pj.is_object()) return ctx.Bad(path, "must be an object");
    if (auto s = CheckKeys(ctx, pj, path, {"name", "values", "categorical", "doc"}); !s)
      return std::unexpected(s.error());
    ParamSpec p;
    if (!pj.contains("name")) return ctx.Bad(path + ".name", "required");
    auto pn = GetString(ctx, pj["name"], path + ".name", 64);
    if (!pn) return std::unexpected(pn.error());
    if (!IsIdentifier(*pn)) return ctx.Bad(path + ".name", "must be an identifier ([A-Za-z_][A-Za-z0-9_]*)");
    if (!taken.insert(*pn).second) return ctx.Bad(path + ".name", "'" + *pn + "' is declared twice");
    p.name = *pn;
    if (!pj.contains("values") || !pj["values"].is_array() || pj["values"].empty()) {
      return ctx.Bad(path + ".values", "required: a non-empty array of integers");
    }
    if (pj["values"].size() > kMaxValues) return ctx.Bad(path + ".values", "at most 1024 values");
    for (size_t k = 0; k < pj["values"].size(); ++k) {
      auto v = GetInt(ctx, pj["values"][k], path + ".values[" + std::to_string(k) + "]");
      if (!v) return std::unexpected(v.error());
      if (std::find(p.candidates.begin(), p.candidates.end(), *v) != p.candidates.end()) {
        return ctx.Bad(path + ".values[" + std::to_string(k) + "]", std::to_string(*v) + " is listed twice");
      }
      p.candidates.push_back(*v);
    }
    if (pj.contains("categorical")) {
      if (!pj["categorical"].is_boolean()) return ctx.Bad(path + ".categorical", "must be true or false");
      p.categorical = pj["categorical"].get<bool>();
    }
    // Ordered parameters are searched by stepping to the next larger or smaller value.
    if (!p.categorical) std::sort(p.candidates.begin(), p.candidates.end());
    if (pj.contains("doc")) {
      auto d = GetString(ctx, pj["doc"], path + ".doc", 1000);
      if (!d) return std::unexpected(d.error());
      p.doc = *d;
    }
    MultiplyDecimal(space_digits, p.candidates.size());
    spec->params_.push_back(std::move(p));
  }
  std::string space;
  int64_t space_size = 0;  // exact while it has at most 18 digits
  for (auto d = space_digits.rbegin(); d != space_digits.rend(); ++d) {
    space += static_cast<char>('0' + *d);
    if (space_digits.size() <= 18) space_size = space_size * 10 + *d;
  }
  if (space_digits.size() > 18 || space_size > static_cast<int64_t>(kMaxSpaceSize)) {
    return ctx.Bad("parameters", "the product of the value counts is " + space + ", more than " +
                                     std::to_string(static_cast<int64_t>(kMaxSpaceSize)) + " configs");
  }

  // Dims.
  if (!j.contains("dims") || !j["dims"].is_array() || j["dims"].empty()) {
    return ctx.Bad("dims", "required: a non-empty array");
  }
  if (j["dims"].size() > kMaxDims) return ctx.Bad("dims", "at most 8 dims");
  spec->dim_names_.reserve(j["dims"].size());  // DimSpec points into these strings
  for (size_t i = 0; i < j["dims"].size(); ++i) {
    const json& dj = j["dims"][i];
    const std::string path = "dims[" + std::to_string(i) + "]";
    if (!dj.is_object()) return ctx.Bad(path, "must be an object");
    if (auto s = CheckKeys(ctx, dj, path, {"name", "rounding", "min", "max", "doc"}); !s)
      return std::unexpected(s.error());
    if (!dj.contains("name")) return ctx.Bad(path + ".name", "required");
    auto dn = GetString(ctx, dj["name"], path + ".name", 64);
    if (!dn) return std::unexpected(dn.error());
    if (!IsIdentifier(*dn)) return ctx.Bad(path + ".name", "must be an identifier ([A-Za-z_][A-Za-z0-9_]*)");
    if (!taken.insert(*dn).second) return ctx.Bad(path + ".name", "'" + *dn + "' is already a parameter or dim name");
    tables::Rounding rounding = tables::Rounding::kPow2Ceil;
    if (dj.contains("rounding")) {
      auto r = GetString(ctx, dj["rounding"], path + ".rounding", 16);
      if (!r) return std::unexpected(r.error());
      if (*r == "pow2_ceil") {
        rounding = tables::Rounding::kPow2Ceil;
      } else if (*r == "exact") {
        rounding = tables::Rounding::kExact;
      } else {
        return ctx.Bad(path + ".rounding", "must be \"pow2_ceil\" or \"exact\"");
      }
    }
    int64_t lo = 1, hi = 65536;
    if (dj.contains("min")) {
      auto v = GetInt(ctx, dj["min"], path + ".min");
      if (!v) return std::unexpected(v.error());
      lo = *v;
    }
    if (!dj.contains("max")) return ctx.Bad(path + ".max", "required");
    auto v = GetInt(ctx, dj["max"], path + ".max");
    if (!v) return std::unexpected(v.error());
    hi = *v;
    if (lo < 1 || hi < lo || hi > kMaxDimValue) return ctx.Bad(path, "needs 1 <= min <= max <= 2^40");
    std::string doc;
    if (dj.contains("doc")) {
      auto d = GetString(ctx, dj["doc"], path + ".doc", 1000);
      if (!d) return std::unexpected(d.error());
      doc = *d;
    }
    spec->dim_names_.push_back(*dn);
    spec->dims_.push_back(DimSpec{{spec->dim_names_.back().c_str(), rounding, lo, hi}, hi, doc});
  }

  // Dtypes.
  if (j.contains("dtypes")) {
    if (!j["dtypes"].is_array() || j["dtypes"].empty()) return ctx.Bad("dtypes", "must be a non-empty array");
    for (size_t i = 0; i < j["dtypes"].size(); ++i) {
      const std::string path = "dtypes[" + std::to_string(i) + "]";
      auto s = GetString(ctx, j["dtypes"][i], path, 16);
      if (!s) return std::unexpected(s.error());
      auto d = ParseDType(*s);
      if (!d) return ctx.Bad(path, "unknown dtype '" + *s + "' (f32, bf16, f16, f64, c64, c128)");
      if (std::find(spec->dtypes_.begin(), spec->dtypes_.end(), *d) == spec->dtypes_.end()) spec->dtypes_.push_back(*d);
    }
  } else {
    spec->dtypes_ = {DType::kF32};
  }

  // Default config: every parameter, each one of its values; a missing one takes its first value.
  for (const auto& p : spec->params_) spec->default_.Set(p.name, p.candidates.front());
  if (j.contains("default")) {
    if (!j["default"].is_object()) return ctx.Bad("default", "must be an object of parameter values");
    for (const auto& [k, v] : j["default"].items()) {
      const std::string path = "default." + k;
      const auto it =
          std::find_if(spec->params_.begin(), spec->params_.end(), [&](const ParamSpec& p) { return p.name == k; });
      if (it == spec->params_.end()) return ctx.Bad(path, "not a parameter");
      auto iv = GetInt(ctx, v, path);
      if (!iv) return std::unexpected(iv.error());
      if (std::find(it->candidates.begin(), it->candidates.end(), *iv) == it->candidates.end()) {
        return ctx.Bad(path, std::to_string(*iv) + " is not one of the parameter's values");
      }
      spec->default_.Set(k, *iv);
    }
  }

  // Runner.
  if (j.contains("runner") && !j["runner"].is_object()) return ctx.Bad("runner", "must be an object");
  // Without a runner (an imported kernel) the kernel is looked up, simulated and exported but
  // every config a sweep asks for is recorded invalid.
  if (j.contains("runner")) {
    const json& rj = j["runner"];
    if (auto s = CheckKeys(ctx, rj, "runner", {"command", "persistent", "timeout_s"}); !s)
      return std::unexpected(s.error());
    if (!rj.contains("command") || !rj["command"].is_array() || rj["command"].empty() || rj["command"].size() > 64) {
      return ctx.Bad("runner.command", "required: an argv array of 1-64 strings (no shell)");
    }
    for (size_t i = 0; i < rj["command"].size(); ++i) {
      auto a = GetString(ctx, rj["command"][i], "runner.command[" + std::to_string(i) + "]", 4096);
      if (!a) return std::unexpected(a.error());
      if (a->find('\0') != std::string::npos || (i == 0 && a->empty())) {
        return ctx.Bad("runner.command[" + std::to_string(i) + "]", "must be a non-empty string without NUL");
      }
      spec->runner_.command.push_back(*a);
    }
    if (rj.contains("persistent")) {
      if (!rj["persistent"].is_boolean()) return ctx.Bad("runner.persistent", "must be true or false");
      spec->runner_.persistent = rj["persistent"].get<bool>();
    }
    if (rj.contains("timeout_s")) {
      if (!rj["timeout_s"].is_number() || rj["timeout_s"].get<double>() <= 0 || rj["timeout_s"].get<double>() > 3600) {
        return ctx.Bad("runner.timeout_s", "must be a number of seconds in (0, 3600]");
      }
      spec->runner_.timeout_s = rj["timeout_s"].get<double>();
    }
    spec->runner_.working_dir = base_dir.empty() ? "." : base_dir;
  }

  // Expressions: restrictions over params and dims, flops/bytes over dims.
  ExternalKernelSpec::Expressions& ex = *spec->expr_;
  for (const auto& p : spec->params_) ex.names.push_back(p.name);
  ex.params = ex.names.size();
  for (const auto& d : spec->dim_names_) ex.names.push_back(d);
  ex.values.assign(ex.names.size(), 1.0);
  if (j.contains("restrictions")) {
    if (!j["restrictions"].is_array()) return ctx.Bad("restrictions", "must be an array of expressions");
    if (j["restrictions"].size() > kMaxRestrictions) return ctx.Bad("restrictions", "at most 64 restrictions");
    for (size_t i = 0; i < j["restrictions"].size(); ++i) {
      const std::string path = "restrictions[" + std::to_string(i) + "]";
      auto text = GetString(ctx, j["restrictions"][i], path, kMaxExpressionChars);
      if (!text) return std::unexpected(text.error());
      auto parser = Compile(ctx, path, "restriction", *text, ex.names, ex.values.data());
      if (!parser) return std::unexpected(parser.error());
      spec->restriction_texts_.push_back(*text);
      ex.restrictions.push_back(std::move(*parser));
    }
  }
  for (const char* key : {"flops", "bytes"}) {
    if (!j.contains(key)) continue;
    auto text = GetString(ctx, j[key], key, kMaxExpressionChars);
    if (!text) return std::unexpected(text.error());
    // Over the dims only: bind the parameters to nothing so a parameter name is an error.
    auto parser =
        Compile(ctx, key, std::string(key) + " expression", *text, spec->dim_names_, ex.values.data() + ex.params);
    if (!parser) return std::unexpected(parser.error());
    (std::string_view(key) == "flops" ? ex.flops : ex.bytes) = std::move(*parser);
  }
  spec->spec_json_ = j.dump();
  return spec;
}

Result<std::unique_ptr<ExternalKernelSpec>> LoadKernelSpecFile(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return NotFound(path + ": cannot read: " + ec.message());
  if (size > kMaxSpecBytes) return InvalidArgument(path + ": larger than 1 MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  const fs::path abs = fs::absolute(path, ec);
  return ParseKernelSpec(text.str(), path, ec ? std::string(".") : abs.parent_path().string());
}

Result<std::vector<std::string>> KernelSpecFiles(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound("--kernel-dir " + dir + ": not a directory", "kernel_dir");
  std::vector<std::string> files;
  std::vector<fs::path> folders;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code type_ec;
    if (e.path().extension() == ".json" && e.is_regular_file(type_ec)) {
      files.push_back(e.path().string());
    } else if (e.is_directory(type_ec) && e.path().filename().string().rfind('.', 0) != 0) {
      folders.push_back(e.path());
    }
  }
  if (ec) return NotFound("--kernel-dir " + dir + ": " + ec.message(), "kernel_dir");
  // One level down only: a kernel folder's own subfolders (a virtualenv, build output) are
  // never scanned.
  for (const fs::path& folder : folders) {
    std::error_code sub_ec;
    for (const auto& e : fs::directory_iterator(folder, sub_ec)) {
      std::error_code type_ec;
      if (e.path().extension() == ".json" && e.is_regular_file(type_ec)) files.push_back(e.path().string());
    }
    if (sub_ec) return NotFound("--kernel-dir " + dir + ": " + folder.string() + ": " + sub_ec.message(), "kernel_dir");
  }
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

// Loads and registers the specs of `dir`, appending what it loaded to `out`.
Status LoadDirInto(const std::string& dir, std::vector<LoadedKernel>& out) {
  auto files = KernelSpecFiles(dir);
  if (!files) return std::unexpected(files.error());
  for (const auto& f : *files) {
    auto spec = LoadKernelSpecFile(f);
    if (!spec) return std::unexpected(spec.error());
    (*spec)->set_kernel_dir(dir);
    LoadedKernel loaded{std::string((*spec)->name()), f, dir, ""};
    for (const auto& arg : (*spec)->runner()->command) loaded.runner += (loaded.runner.empty() ? "" : " ") + arg;
    if (auto s = RegisterKernel(std::move(*spec)); !s) {
      return InvalidArgument(f + ": " + s.error().message, "name");
    }
    out.push_back(std::move(loaded));
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> LoadKernelDir(const std::string& dir) {
  std::vector<LoadedKernel> loaded;
  if (auto s = LoadDirInto(dir, loaded); !s) return std::unexpected(s.error());
  std::vector<std::string> names;
  for (auto& k : loaded) names.push_back(std::move(k.name));
  return names;
}

Result<ReloadReport> ReloadKernelDirs(const std::vector<std::string>& dirs) {
  std::vector<std::unique_ptr<ExternalKernelSpec>> fresh;
  std::set<std::string> names;
  for (const auto& dir : dirs) {
    auto files = KernelSpecFiles(dir);
    if (!files) return std::unexpected(files.error());
    for (const auto& f : *files) {
      auto spec = LoadKernelSpecFile(f);
      if (!spec) return InvalidArgument(spec.error().message, f);
      (*spec)->set_kernel_dir(dir);
      const std::string name((*spec)->name());
      if (!names.insert(name).second) return InvalidArgument(f + ": kernel '" + name + "' is declared twice", f);
      const KernelSpec* old = FindKernel(name);
      if (old != nullptr && old->source_file() != (*spec)->source_file()) {
        return InvalidArgument(
            f + ": kernel '" + name + "' is already registered" +
                (old->source_file().empty() ? " (built in)" : " (" + std::string(old->source_file()) + ")"),
            f);
      }
      fresh.push_back(std::move(*spec));
    }
  }
  ReloadReport report;
  for (auto& spec : fresh) {
    const std::string name(spec->name());
    const auto* old = dynamic_cast<const ExternalKernelSpec*>(FindKernel(name));
    if (old == nullptr) {
      if (auto s = RegisterKernel(std::move(spec)); !s) return std::unexpected(s.error());
      report.added.push_back(name);
    } else if (old->spec_json() != spec->spec_json() || old->source_file() != spec->source_file()) {
      if (auto s = ReplaceKernel(std::move(spec)); !s) return std::unexpected(s.error());
      report.replaced.push_back(name);
    } else {
      ++report.unchanged;
    }
  }
  return report;
}

Result<KernelDirsLoad> LoadKernelDirs(const std::vector<std::string>& dirs) {
  KernelDirsLoad all;
  for (const auto& d : dirs) {
    const size_t before = all.kernels.size();
    if (auto s = LoadDirInto(d, all.kernels); !s) return std::unexpected(s.error());
    if (all.kernels.size() == before) all.empty_dirs.push_back(d);
  }
  return all;
}

}  // namespace blocktune::external
