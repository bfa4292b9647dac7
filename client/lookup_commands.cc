// blocktune lookup, kernels, hardware, tuned and misses: what the daemon answers lookups from;
// see service_commands.h.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "client/cli.h"
#include "client/service_commands.h"
#include "server/service.h"
#include "server/timing_flags.h"
#include "tuner/isolation/worker_evaluator.h"

namespace blocktune::client {

using server::api::Op;

std::expected<std::vector<server::MissView>, int> FetchMisses(
    const Common& c, const std::string& kernel, const std::string& hardware, int64_t want,
    const std::function<bool(const server::MissView&)>& keep) {
  std::vector<server::MissView> out;
  int64_t offset = 0;
  while (static_cast<int64_t>(out.size()) < want) {
    std::vector<std::pair<std::string, std::string>> query = {{"offset", std::to_string(offset)},
                                                              {"limit", std::to_string(std::min<int64_t>(want, 1000))}};
    if (!kernel.empty()) query.emplace_back("kernel", kernel);
    if (!hardware.empty()) query.emplace_back("hardware", hardware);
    auto got = Call(c, To(Op::kListMisses, {}, query));
    if (!got) return std::unexpected(got.error());
    int64_t next = 0;
    auto page = server::wire::DecodeMissList(got->body, &next);
    if (!page) return std::unexpected(Fail(kExitServerError, "malformed misses: " + page.error().ToString()));
    for (auto& m : *page) {
      if (static_cast<int64_t>(out.size()) < want && keep(m)) out.push_back(std::move(m));
    }
    if (next == 0) break;
    offset = next;
  }
  return out;
}

namespace {

struct MissesArgs {
  std::string kernel;
  std::string hardware;
  int64_t top = 20;
};

int RunMisses(const Common& c, const MissesArgs& a) {
  if (c.json) {
    // One page of the server's document, as received.
    std::vector<std::pair<std::string, std::string>> query = {{"limit", std::to_string(a.top)}};
    if (!a.kernel.empty()) query.emplace_back("kernel", a.kernel);
    if (!a.hardware.empty()) query.emplace_back("hardware", a.hardware);
    auto got = Call(c, To(Op::kListMisses, {}, query));
    if (!got) return got.error();
    std::printf("%s\n", got->text.c_str());
    return 0;
  }
  auto rows = FetchMisses(c, a.kernel, a.hardware, a.top, [](const server::MissView&) { return true; });
  if (!rows) return rows.error();
  std::printf("%8s %8s %8s %8s  %-22s %-5s %-36s %-22s %-16s %s\n", "count", "fallback", "nearest", "default", "kernel",
              "dtype", "hardware", "bucket", "now", "last seen");
  for (const auto& v : *rows) {
    const store::MissCount& m = v.miss.counts;
    std::printf("%8lld %8lld %8lld %8lld  %-22s %-5s %-36s %-22s %-16s %s\n", static_cast<long long>(m.count()),
                static_cast<long long>(m.fallback), static_cast<long long>(m.nearest),
                static_cast<long long>(m.defaulted), m.kernel.c_str(), std::string(DTypeName(m.dtype)).c_str(),
                m.hardware_key.c_str(), m.bucket.c_str(), std::string(tables::SourceName(v.current)).c_str(),
                m.last_seen_at.c_str());
  }
  if (rows->empty()) std::printf("no lookup misses stored\n");
  return 0;
}

void PrintAnswer(const tuner::LookupAnswer& a) {
  std::printf("kernel    %s\nconfig    %s\nsource    %s\nhardware  %s\nbucket    %s%s\n", a.kernel.c_str(),
              a.config.ToString().c_str(), std::string(tables::SourceName(a.source)).c_str(), a.hardware.c_str(),
              a.bucket.c_str(), a.matched_bucket != a.bucket ? (" (from " + a.matched_bucket + ")").c_str() : "");
  if (!a.queried_hardware.empty()) {
    std::printf("queried   %s (fell back %d level%s)\n", a.queried_hardware.c_str(), a.fallback_levels,
                a.fallback_levels == 1 ? "" : "s");
  }
  if (a.source == tables::Source::kOverride) {
    std::printf("override  #%lld: %s (expires %s)\n", static_cast<long long>(a.override_id), a.reason.c_str(),
                a.expires_at.empty() ? "never" : a.expires_at.c_str());
  } else if (a.sweep_id != 0) {
    std::printf("median    %.0f ns (%lld samples, sweep %lld, measured %s)\n", a.median_ns,
                static_cast<long long>(a.samples), static_cast<long long>(a.sweep_id), a.measured_at.c_str());
  }
  if (a.source == tables::Source::kTuned || a.source == tables::Source::kTunedFallback ||
      a.source == tables::Source::kNearest) {
    std::printf("fingerprint %s%s\n", a.fingerprint.empty() ? "unknown" : a.fingerprint.c_str(),
                a.stale ? " (STALE: measured by another build of the kernel)" : "");
  }
}

struct LookupArgs {
  std::string kernel;
  std::string dtype = "f32";
  std::string shape;
  int threads = 1;
  std::string hardware;
  std::string config;
  std::string batch;
};

int RunLookup(const Common& c, const LookupArgs& a) {
  if (!a.batch.empty()) {
    auto text = ReadText(a.batch);
    if (!text) return Fail(kExitUsage, text.error().message);
    auto parsed = server::wire::ParseBody(*text, server::wire::Limits{});
    if (!parsed) return Fail(kExitUsage, a.batch + ": " + parsed.error().ToString());
    auto queries = server::wire::DecodeBatchLookup(*parsed, server::wire::Limits{});
    if (!queries) return Fail(kExitUsage, a.batch + ": " + queries.error().ToString());
    CallOptions o;
    o.body = server::wire::Dump(server::wire::EncodeBatchLookupRequest(*queries));
    auto got = Call(c, To(Op::kBatchLookup), o);
    if (!got) return got.error();
    return PrintReply(c, *got);
  }
  if (a.kernel.empty() || a.shape.empty()) return Fail(kExitUsage, "lookup needs KERNEL and --shape (or --batch FILE)");
  auto dims = ParseShape(a.shape);
  if (!dims) return Fail(kExitUsage, dims.error().ToString());
  std::vector<std::pair<std::string, std::string>> query = {
      {"kernel", a.kernel}, {"dtype", a.dtype}, {"threads", std::to_string(a.threads)}};
  for (const auto& [n, v] : dims->values()) query.emplace_back(n, std::to_string(v));
  if (!a.hardware.empty()) query.emplace_back("hardware", a.hardware);
  if (!a.config.empty()) query.emplace_back("config", a.config);
  auto got = Call(c, To(Op::kGetLookup, {}, query));
  if (!got) return got.error();
  if (c.json) {
    std::printf("%s\n", got->text.c_str());
    return 0;
  }
  auto ans = server::wire::DecodeLookup(got->body);
  if (!ans) return Fail(kExitServerError, "malformed lookup answer: " + ans.error().ToString());
  PrintAnswer(*ans);
  return 0;
}

int RunTuned(const Common& c, const std::string& kernel, const std::string& hardware, const std::string& dtype) {
  auto got = Call(c, To(Op::kListTuned, {}, {{"kernel", kernel}, {"hardware", hardware}, {"dtype", dtype}}));
  if (!got) return got.error();
  if (c.json) {
    std::printf("%s\n", got->text.c_str());
    return 0;
  }
  auto rows = server::wire::DecodeTunedList(got->body);
  if (!rows) return Fail(kExitServerError, rows.error().ToString());
  std::printf("%-22s %-36s %-5s %-22s %-40s %14s %6s\n", "kernel", "hardware", "dtype", "bucket", "config", "median ns",
              "sweep");
  for (const auto& e : *rows) {
    std::printf("%-22s %-36s %-5s %-22s %-40s %14.0f %6lld\n", e.kernel.c_str(), e.hardware_key.c_str(),
                std::string(DTypeName(e.dtype)).c_str(), e.bucket.c_str(), e.config.ToString().c_str(), e.median_ns,
                static_cast<long long>(e.sweep_id));
  }
  return 0;
}

}  // namespace

std::function<int()> RegisterLookupCommands(CLI::App& app, Common& common) {
  auto lookup = std::make_shared<LookupArgs>();
  auto* lookup_cmd =
      app.add_subcommand("lookup", "best config for a problem, from blocktuned (says where it came from)");
  AddCommon(lookup_cmd, common, true);
  lookup_cmd->add_option("kernel", lookup->kernel, "kernel name");
  lookup_cmd->add_option("--shape", lookup->shape, "problem dims, e.g. m=512,n=512,k=512");
  lookup_cmd->add_option("--dtype", lookup->dtype, "element type")->capture_default_str();
  lookup_cmd->add_option("--threads", lookup->threads, "threads the kernel will run with")->capture_default_str();
  lookup_cmd->add_option("--hardware", lookup->hardware, "hardware key (default: the server's host)");
  lookup_cmd->add_option("--config", lookup->config, "your own config, validated and echoed (source explicit)");
  lookup_cmd->add_option("--batch", lookup->batch, "JSON file {\"queries\": [...]}: one request for many lookups");

  auto* kernels_cmd = app.add_subcommand("kernels", "list kernels, or describe one, or have the server reload them");
  AddCommon(kernels_cmd, common, true);
  auto kernel_name = std::make_shared<std::string>();
  auto reload = std::make_shared<bool>(false);
  kernels_cmd->add_option("name", *kernel_name, "kernel to describe");
  kernels_cmd->add_flag("--reload", *reload,
                        "have the server read its --kernel-dir folders and tuned rows again (after `blocktune import` "
                        "into its database, or an edited spec); POST /v1/kernels/reload, needs the token");

  auto* hardware_cmd = app.add_subcommand("hardware", "hardware profiles known to the database and this host's");
  AddCommon(hardware_cmd, common, true);
  auto host_only = std::make_shared<bool>(false);
  auto host_threads = std::make_shared<int>(1);
  hardware_cmd->add_flag("--host", *host_only, "only the server host's profile");
  hardware_cmd->add_option("--threads", *host_threads, "thread count for --host's key")->capture_default_str();

  auto tuned = std::make_shared<std::array<std::string, 3>>();
  auto* tuned_cmd = app.add_subcommand("tuned", "tuned entries the server's lookups use");
  AddCommon(tuned_cmd, common, true);
  tuned_cmd->add_option("--kernel", (*tuned)[0], "only this kernel");
  tuned_cmd->add_option("--hardware", (*tuned)[1], "only keys under this prefix");
  tuned_cmd->add_option("--dtype", (*tuned)[2], "only this dtype");

  auto misses = std::make_shared<MissesArgs>();
  auto* misses_cmd = app.add_subcommand(
      "misses", "buckets lookups asked for that no row tuned for their hardware key answered, most asked first");
  AddCommon(misses_cmd, common, true);
  misses_cmd->add_option("--kernel", misses->kernel, "only this kernel");
  misses_cmd->add_option("--hardware", misses->hardware, "only keys equal to this or under it");
  misses_cmd->add_option("--top", misses->top, "this many, most missed first")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));

  return [=, &common]() -> int {
    if (lookup_cmd->parsed()) return RunLookup(common, *lookup);
    if (kernels_cmd->parsed()) {
      if (*reload) {
        if (!kernel_name->empty()) return Fail(kExitUsage, "kernels --reload takes no kernel name");
        return Show(common, To(Op::kReloadKernels));
      }
      return Show(common, kernel_name->empty() ? To(Op::kListKernels) : To(Op::kGetKernel, {*kernel_name}));
    }
    if (hardware_cmd->parsed()) {
      return Show(common, *host_only ? To(Op::kGetHostHardware, {}, {{"threads", std::to_string(*host_threads)}})
                                     : To(Op::kListHardware));
    }
    if (tuned_cmd->parsed()) return RunTuned(common, (*tuned)[0], (*tuned)[1], (*tuned)[2]);
    if (misses_cmd->parsed()) return RunMisses(common, *misses);
    return -1;
  };
}

}  // namespace blocktune::client
