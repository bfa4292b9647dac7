// `blocktune db merge OUT.db IN.db...` and `blocktune push --server URL DB`: other machines'
// results into one database, through store::ResultsReader (inputs opened read-only) and
// store::ResultsTable::Apply (idempotent, winners recomputed), locally or over POST /v1/results.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "client/cli.h"
#include "store/results_reader.h"
#include "store/store.h"

namespace blocktune::client {
namespace {

struct Totals {
  int64_t batches = 0;
  int64_t measurements = 0;  // sent or read
  int64_t inserted = 0;
  int64_t replayed = 0;  // batches applied before
  int64_t winners = 0;
  int64_t retries = 0;
};

Json TotalsJson(const Totals& t) {
  return Json{{"batches", t.batches},           {"measurements", t.measurements},  {"inserted", t.inserted},
              {"replayed_batches", t.replayed}, {"winners_recomputed", t.winners}, {"retries", t.retries}};
}

struct MergeArgs {
  std::string out;
  std::vector<std::string> inputs;
};

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec) && std::filesystem::equivalent(a, b, ec);
}

int RunMerge(const Common& c, const MergeArgs& a) {
  // Every input is opened (and its schema checked) before the output is touched: a newer or
  // foreign file among them leaves OUT exactly as it was.
  std::vector<std::unique_ptr<store::ResultsReader>> readers;
  for (const auto& in : a.inputs) {
    if (SameFile(in, a.out)) return Fail(kExitUsage, in + " is the output database; merge it into another file");
    auto r = store::ResultsReader::Open(in);
    if (!r) return Fail(kExitDatabase, "cannot read " + in + ": " + r.error().ToString());
    readers.push_back(std::move(*r));
  }
  // Every batch of every input is checked as Apply will check it (store::CheckBatch: the kernel
  // spec's rules a sweep follows) before OUT is opened: one bad record refuses the merge with
  // OUT exactly as it was, instead of leaving the batches before it merged.
  for (size_t i = 0; i < readers.size(); ++i) {
    auto s = readers[i]->ForEachBatch(static_cast<int64_t>(store::kMaxBatchMeasurements),
                                      [&](const store::ResultsBatch& b) -> Status {
                                        if (auto c = store::CheckBatch(b); !c)
                                          return std::unexpected(WithPathPrefix(c.error(), "batch " + b.batch_id));
                                        return {};
                                      });
    if (!s) {
      return Fail(kExitDatabase, "refusing to merge: " + a.inputs[i] + " holds a record a sweep could not have made; " +
                                     a.out + " was not changed: " + s.error().ToString());
    }
  }
  auto st = OpenLocalStore(a.out);
  if (!st) return st.error();
  Totals total;
  Json per_input = Json::array();
  for (size_t i = 0; i < readers.size(); ++i) {
    Totals t;
    auto s = readers[i]->ForEachBatch(static_cast<int64_t>(store::kMaxBatchMeasurements),
                                      [&](const store::ResultsBatch& b) -> Status {
                                        auto r = (*st)->results().Apply(b);
                                        if (!r) return std::unexpected(WithPathPrefix(r.error(), b.batch_id));
                                        ++t.batches;
                                        t.measurements += static_cast<int64_t>(b.measurements.size());
                                        t.inserted += r->replayed ? 0 : r->inserted;
                                        t.replayed += r->replayed ? 1 : 0;
                                        t.winners += r->winners;
                                        return {};
                                      });
    if (!s)
      return Fail(kExitDatabase, "merging " + a.inputs[i] +
                                     " failed (nothing of its current batch was written): " + s.error().ToString());
    if (!c.json) {
      std::printf(
          "%s: %lld measurements in %lld batches, %lld new, %lld batches merged before, %lld winners recomputed\n",
          a.inputs[i].c_str(), static_cast<long long>(t.measurements), static_cast<long long>(t.batches),
          static_cast<long long>(t.inserted), static_cast<long long>(t.replayed), static_cast<long long>(t.winners));
    }
    Json j = TotalsJson(t);
    j["input"] = a.inputs[i];
    per_input.push_back(j);
    total.batches += t.batches;
    total.measurements += t.measurements;
    total.inserted += t.inserted;
    total.replayed += t.replayed;
    total.winners += t.winners;
  }
  if (c.json) {
    Json j = TotalsJson(total);
    j["output"] = a.out;
    j["inputs"] = per_input;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s: %lld new measurements from %zu inputs\n", a.out.c_str(), static_cast<long long>(total.inserted),
                a.inputs.size());
  }
  return 0;
}

struct PushArgs {
  std::string db;
  int64_t batch = 250;
  int retries = 8;
  int timeout_seconds = 60;
  std::string cacert;
};

int RunPush(const Common& c, const PushArgs& a) {
  // The token is needed for every batch: a missing file is reported before anything is read or sent.
  if (auto token = ResolveToken(c); !token) return Fail(kExitUsage, token.error().message);
  auto reader = store::ResultsReader::Open(a.db);
  if (!reader) return Fail(kExitDatabase, "cannot read " + a.db + ": " + reader.error().ToString());
  Totals t;
  int failure = 0;
  auto s = (*reader)->ForEachBatch(a.batch, [&](const store::ResultsBatch& b) -> Status {
    CallOptions o;
    o.body = server::wire::Dump(server::wire::EncodeResultsBatch(b));
    o.read_timeout_seconds = a.timeout_seconds;
    o.quiet = true;
    o.ca_cert_file = a.cacert;
    // A timeout or a dead server is retried with the same batch id: if the first attempt was
    // applied after all, the server answers from its record and adds nothing.
    for (int attempt = 0;; ++attempt) {
      auto got = Call(c, To(server::api::Op::kIngestResults), o);
      if (got) {
        auto r = server::wire::DecodeIngestResult(got->body);
        if (!r) {
          failure = Fail(kExitServerError, "malformed answer to batch " + b.batch_id + ": " + r.error().ToString());
          return MakeError(ErrorCode::kInternal, "");
        }
        ++t.batches;
        t.measurements += static_cast<int64_t>(b.measurements.size());
        t.inserted += r->replayed ? 0 : r->inserted;
        t.replayed += r->replayed ? 1 : 0;
        t.winners += r->winners;
        return {};
      }
      const bool transient = got.error() == kExitUnreachable || got.error() == kExitServerError;
      if (!transient || attempt >= a.retries) {
        if (transient)
          Fail(got.error(), "batch " + b.batch_id + " not accepted after " + std::to_string(attempt + 1) + " attempts");
        failure = got.error();
        return MakeError(ErrorCode::kUnavailable, "");
      }
      ++t.retries;
      const double wait = std::min(30.0, 0.25 * static_cast<double>(1 << std::min(attempt, 7)));
      std::fprintf(stderr, "blocktune: batch %s: %s; retry %d in %.1f s\n", b.batch_id.c_str(),
                   got.error() == kExitUnreachable ? "server unreachable or timed out" : "server error", attempt + 1,
                   wait);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
  });
  if (!s) {
    if (failure != 0) return failure;
    return Fail(kExitDatabase, "reading " + a.db + " failed: " + s.error().ToString());
  }
  if (c.json) {
    Json j = TotalsJson(t);
    j["db"] = a.db;
    j["server"] = c.server;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf(
        "pushed %s to %s: %lld measurements in %lld batches, %lld new there, %lld batches already there, %lld "
        "retries\n",
        a.db.c_str(), c.server.c_str(), static_cast<long long>(t.measurements), static_cast<long long>(t.batches),
        static_cast<long long>(t.inserted), static_cast<long long>(t.replayed), static_cast<long long>(t.retries));
  }
  return 0;
}

}  // namespace

std::function<int()> RegisterResultsCommands(CLI::App& app, Common& common) {
  auto merge = std::make_shared<MergeArgs>();
  auto* db_cmd = app.add_subcommand("db", "local database operations");
  db_cmd->require_subcommand(1);
  auto* merge_cmd = db_cmd->add_subcommand(
      "merge",
      "add the sweeps, measurements and samples of IN.db... to OUT.db (created if missing), then recompute the "
      "winners of every bucket that gained measurements; inputs are opened read-only, merging again adds nothing "
      "(docs/scale.md)");
  AddCommon(merge_cmd, common, false);
  merge_cmd->add_option("out", merge->out, "output database")->required();
  merge_cmd->add_option("inputs", merge->inputs, "input databases (e.g. the shards of a sweep)")->required();

  auto push = std::make_shared<PushArgs>();
  auto* push_cmd = app.add_subcommand(
      "push",
      "send a local database's results to blocktuned (POST /v1/results) in bounded batches; safe to run again after "
      "a timeout or a kill of either side: nothing is lost or stored twice");
  AddCommon(push_cmd, common, true);
  push_cmd->add_option("db", push->db, "database to send (opened read-only)")->required();
  push_cmd->add_option("--batch", push->batch, "measurements per request")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  push_cmd->add_option("--retries", push->retries, "retries of a batch after a timeout, a refused connection or a 5xx")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  push_cmd->add_option("--timeout", push->timeout_seconds, "seconds to wait for the answer to one batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  push_cmd
      ->add_option("--cacert", push->cacert,
                   "with an https:// --server (nginx in front, deploy/nginx/blocktune.conf): trust this PEM "
                   "certificate or CA instead of the system's")
      ->check(CLI::ExistingFile);

  return [&common, merge, push, merge_cmd, push_cmd]() -> int {
    if (merge_cmd->parsed()) return RunMerge(common, *merge);
    if (push_cmd->parsed()) return RunPush(common, *push);
    return -1;
  };
}

}  // namespace blocktune::client
