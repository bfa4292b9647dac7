// blocktune override set|list|delete: pinned configs; see service_commands.h.
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
namespace {

using server::api::Op;

struct OverrideArgs {
  std::string kernel;
  std::string hardware = "*";
  std::string dtype = "f32";
  std::string bucket;
  std::string shape;
  std::string config;
  std::string reason;
  std::string expires_at;
  double ttl_hours = 0;
  int64_t id = 0;
};

int RunOverrideSet(const Common& c, const OverrideArgs& a) {
  const KernelSpec* spec = FindKernel(a.kernel);
  if (spec == nullptr) return Fail(kExitUsage, "unknown kernel '" + a.kernel + "'");
  store::OverrideRecord o;
  o.kernel = a.kernel;
  o.hardware_key = a.hardware;
  auto dtype = ParseDType(a.dtype);
  if (!dtype) return Fail(kExitUsage, "unknown dtype '" + a.dtype + "'");
  o.dtype = *dtype;
  if (!a.shape.empty()) {
    auto dims = ParseShape(a.shape);
    if (!dims) return Fail(kExitUsage, dims.error().ToString());
    o.bucket = spec->Bucket(Problem{*dtype, *dims}).first;
  } else {
    o.bucket = a.bucket;
  }
  if (o.bucket.empty()) return Fail(kExitUsage, "give --bucket or --shape");
  auto cfg = NamedInts::Parse(a.config);
  if (!cfg) return Fail(kExitUsage, "--config: " + cfg.error().ToString());
  o.config = *cfg;
  o.reason = a.reason;
  if (a.ttl_hours > 0) {
    const auto t = std::chrono::system_clock::now() + std::chrono::seconds(static_cast<int64_t>(a.ttl_hours * 3600));
    const std::time_t tt = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    o.expires_at = buf;
  } else {
    o.expires_at = a.expires_at;
  }
  CallOptions opt;
  opt.body = server::wire::Dump(server::wire::EncodeOverrideRequest(o));
  auto got = Call(c, To(Op::kCreateOverride), opt);
  if (!got) return got.error();
  return PrintReply(c, *got);
}

int RunOverrideList(const Common& c) {
  auto got = Call(c, To(Op::kListOverrides));
  if (!got) return got.error();
  if (c.json) {
    std::printf("%s\n", got->text.c_str());
    return 0;
  }
  auto rows = server::wire::DecodeOverrideList(got->body);
  if (!rows) return Fail(kExitServerError, rows.error().ToString());
  std::printf("%5s  %-18s %-28s %-5s %-20s %-36s %-24s %s\n", "id", "kernel", "hardware", "dtype", "bucket", "config",
              "expires", "reason");
  for (const auto& o : *rows) {
    std::printf("%5lld  %-18s %-28s %-5s %-20s %-36s %-24s %s\n", static_cast<long long>(o.id), o.kernel.c_str(),
                o.hardware_key.c_str(), std::string(DTypeName(o.dtype)).c_str(), o.bucket.c_str(),
                o.config.ToString().c_str(), o.expires_at.empty() ? "never" : o.expires_at.c_str(), o.reason.c_str());
  }
  return 0;
}

}  // namespace

std::function<int()> RegisterOverrideCommands(CLI::App& app, Common& common) {
  auto ov = std::make_shared<OverrideArgs>();
  auto* override_cmd = app.add_subcommand("override", "pin a config (served as source override), list or delete pins");
  override_cmd->require_subcommand(1);
  auto* set_cmd = override_cmd->add_subcommand("set", "pin a config for (kernel, hardware, dtype, bucket)");
  AddCommon(set_cmd, common, true);
  set_cmd->add_option("kernel", ov->kernel, "kernel name")->required();
  set_cmd->add_option("--config", ov->config, "block sizes, e.g. block_m=96,block_n=512 (unset names: default)")
      ->required();
  set_cmd->add_option("--reason", ov->reason, "why (shown with every answer it serves)")->required();
  set_cmd->add_option("--bucket", ov->bucket, "canonical bucket id, e.g. m1024_n1024_k1024");
  set_cmd->add_option("--shape", ov->shape, "or a problem whose bucket to pin");
  set_cmd->add_option("--hardware", ov->hardware, "hardware key or prefix; * for every machine")->capture_default_str();
  set_cmd->add_option("--dtype", ov->dtype, "element type")->capture_default_str();
  set_cmd->add_option("--expires-at", ov->expires_at, "UTC YYYY-MM-DDTHH:MM:SSZ (default: never)");
  set_cmd->add_option("--ttl-hours", ov->ttl_hours, "or expire this many hours from now");
  auto* olist_cmd = override_cmd->add_subcommand("list", "all pins");
  AddCommon(olist_cmd, common, true);
  auto* odel_cmd = override_cmd->add_subcommand("delete", "remove a pin");
  AddCommon(odel_cmd, common, true);
  odel_cmd->add_option("id", ov->id, "override id")->required();

  return [=, &common]() -> int {
    if (set_cmd->parsed()) return RunOverrideSet(common, *ov);
    if (olist_cmd->parsed()) return RunOverrideList(common);
    if (odel_cmd->parsed()) {
      auto got = Call(common, To(Op::kDeleteOverride, {std::to_string(ov->id)}));
      if (!got) return got.error();
      if (common.json) {
        std::printf("%s\n", got->text.c_str());
      } else {
        std::printf("override %lld deleted\n", static_cast<long long>(ov->id));
      }
      return 0;
    }
    return -1;
  };
}

}  // namespace blocktune::client
