// Wire format of the dashboard's aggregates; see dashboard.h and server/dashboard.h.
#include "server/wire/dashboard.h"

#include "server/wire/internal.h"
#include "server/wire/schema.h"

namespace blocktune::server::wire {

namespace internal {

void AddDashboardSchemas(Json& s) {
  using namespace schema;
  s["BucketTask"] = Object(
      {{"bucket", Str()}, {"status", Ref("SweepStatus")}, {"planned", Int("measurements the bucket will record")}});
  s["Verdict"] = Object(
      {{"config", Ref("Config")},
       {"against", Enum(std::array{"default", "incumbent", "served"}, "the reference it was judged against")},
       {"reference", Ref("Config")},
       {"config_ns", Num("median of the config's repetitions over the paired cycles")},
       {"reference_ns", Num("median of the reference's repetitions over the same cycles")},
       {"gain", Num("1 - the median of the per-cycle ratios config / reference (negative: slower)")},
       {"noise_band", Num("the pair's band: max(the smallest band, 2 standard errors of that median)")},
       {"beats", Bool("gain > noise_band")},
       {"cycles", Int("paired repetitions the verdict rests on")},
       {"dropped", Int("cycles left out as disturbed: a repetition well above its config's fastest one (interference "
                       "only adds time)")},
       {"rounds",
        Int("interleaved rounds they came from: the decision round and the extra rounds of a close verdict")}},
      "the paired verdict that decided a bucket's row (two configs timed in the same interleaved rounds): for a new "
      "row the closest of the verdicts it had to win, for a kept row the best challenger's lost verdict (or the kept "
      "row's claim over the default); null for an only candidate and for rounds recorded before verdicts were");
  s["Decision"] =
      Object({{"chosen", Ref("Config")},
              {"incumbent", Nullable(Ref("Config")), true},
              {"noise_band", Num("the band of the verdict that decided; 0 when none did (an only candidate)")},
              {"decision", Str("new, replaced incumbent ..., kept incumbent ..., kept default ..., kept served row "
                               "..., with the figures of each verdict")},
              {"verdict", Nullable(Ref("Verdict")), true},
              {"rounds", Int("interleaved rounds the decision took: 1 + the extra rounds of close verdicts")},
              {"candidates", Array(Object({{"config", Ref("Config")},
                                           {"outcome", Ref("Outcome")},
                                           {"median_ns", Nullable(Num("null unless the outcome is ok"))},
                                           {"cv", Num()},
                                           {"iterations", Int("iterations per repetition")}}),
                                   "the configs re-timed interleaved, in the order timed")}},
             "a bucket's decision round: the best configs of the search and the incumbent timed again");
  s["Landscape"] =
      Object({{"sweep_id", Int()},
              {"kernel", Str()},
              {"status", Ref("SweepStatus")},
              {"bucket", Str("the bucket shown")},
              {"buckets", Array(Ref("BucketTask"), "every bucket of the sweep, in request order")},
              {"params", Array(Str(), "the kernel's parameters, in order: the keys of columns")},
              {"default_config", Ref("Config")},
              {"points", Object({{"id", Array(Int(), "measurement ids, oldest first")},
                                 {"t_s", Array(Num(), "seconds after the bucket's first measurement")},
                                 {"columns", Map(Array(Nullable(Int())), "one array per parameter, aligned with id")},
                                 {"median_ns", Array(Nullable(Num()), "null unless the outcome is ok")},
                                 {"cv", Array(Num())},
                                 {"outcome", Array(Ref("Outcome"))}},
                                "every measurement of the bucket, one array per field")},
              {"failed",
               Array(Object({{"id", Int()}, {"config", Ref("Config")}, {"outcome", Ref("Outcome")}, {"detail", Str()}}),
                     "measurements whose outcome is not ok, with the reason")},
              {"decision", Nullable(Ref("Decision"))}},
             "one bucket of a sweep for plotting: every measurement, column-wise");
  s["BucketBest"] =
      Object({{"bucket", Str()},
              {"status", Ref("SweepStatus")},
              {"planned", Int()},
              {"measured", Int()},
              {"ok", Int("measurements that passed")},
              {"best_config", Nullable(Ref("Config")), true},
              {"best_median_ns", Nullable(Num("fastest passing measurement"))},
              {"best_measurement_id", Nullable(Int())},
              {"default_median_ns", Nullable(Num("the kernel's default config, if measured and passing"))},
              {"chosen", Nullable(Ref("Config")), true}});
  s["SweepBest"] = Object({{"sweep_id", Int()},
                           {"kernel", Str()},
                           {"dtype", Ref("DType")},
                           {"hardware", Str()},
                           {"status", Ref("SweepStatus")},
                           {"buckets", Array(Ref("BucketBest"))}},
                          "a sweep's fastest passing config per bucket");
  s["Winner"] =
      Extend(s["TunedEntry"],
             {{"from_database", Bool("false: the checked-in table's row, measured in another database")},
              {"default_median_ns", Nullable(Num("the default config in the same sweep and bucket, if measured"))},
              {"speedup", Nullable(Num("default_median_ns / median_ns"))},
              {"age_seconds", Nullable(Num("since measured_at"))},
              {"stale", Bool()},
              {"stale_reason", Str("empty unless stale")},
              {"override", Nullable(Ref("Override")), true}},
             "a tuned row with what the winners matrix shows about it");
  s["WinnerList"] = Object({{"entries", Array(Ref("Winner"))}});
  s["RankedConfig"] =
      Object({{"measurement_id", Int()},
              {"rank", Int("1 = fastest passing config of the bucket")},
              {"config", Ref("Config")},
              {"median_ns", Num()},
              {"cv", Num()},
              {"samples_ns", Array(Num(), "per-iteration time of each repetition")},
              {"noise_band", Num("relative band inside which this config and the tuned one are not told "
                                 "apart (tuner::NoiseBand of their samples)")},
              {"within_noise", Bool("median within noise_band of the tuned config's")},
              {"is_default", Bool()},
              {"is_winner", Bool()}});
  s["Explain"] = Object({{"winner", Ref("Winner")},
                         {"sweep", Nullable(Ref("Sweep")), true},
                         {"decision", Nullable(Ref("Decision")), true},
                         {"noise_band", Nullable(Num())},
                         {"default_config", Ref("Config")},
                         {"measured", Int("measurements of the bucket in the row's sweep")},
                         {"ok", Int()},
                         {"ranked", Array(Ref("RankedConfig"), "the fastest passing configs and the default config")}},
                        "why a tuned row holds its config");
}

}  // namespace internal

namespace {

Json NullableNum(bool present, double v) { return present ? Json(v) : Json(nullptr); }

Json EncodeDecision(const std::optional<tuner::FinalRound>& r) {
  if (!r) return nullptr;
  Json cands = Json::array();
  for (const auto& m : r->candidates) {
    cands.push_back({{"config", EncodeConfig(m.config)},
                     {"outcome", tuner::OutcomeName(m.outcome)},
                     {"median_ns", NullableNum(m.outcome == tuner::Outcome::kOk, m.median_ns)},
                     {"cv", m.cv},
                     {"iterations", m.iterations}});
  }
  Json verdict = nullptr;
  if (const auto& v = r->verdict) {
    verdict = Json{{"config", EncodeConfig(v->config)},
                   {"against", v->against},
                   {"reference", EncodeConfig(v->reference)},
                   {"config_ns", v->config_ns},
                   {"reference_ns", v->reference_ns},
                   {"gain", v->gain},
                   {"noise_band", v->noise_band},
                   {"beats", v->beats},
                   {"cycles", v->cycles},
                   {"dropped", v->dropped},
                   {"rounds", v->rounds}};
  }
  return Json{{"chosen", EncodeConfig(r->chosen)},
              {"incumbent", r->incumbent ? EncodeConfig(*r->incumbent) : Json(nullptr)},
              {"noise_band", r->noise_band},
              {"decision", r->decision},
              {"verdict", verdict},
              {"rounds", r->rounds},
              {"candidates", cands}};
}

Json EncodeWinner(const server::WinnerView& w) {
  Json j = EncodeTunedEntry(w.entry);
  j["from_database"] = w.from_database;
  j["default_median_ns"] = w.default_median_ns ? Json(*w.default_median_ns) : Json(nullptr);
  j["speedup"] =
      w.default_median_ns && w.entry.median_ns > 0 ? Json(*w.default_median_ns / w.entry.median_ns) : Json(nullptr);
  j["age_seconds"] = w.age_seconds ? Json(*w.age_seconds) : Json(nullptr);
  j["stale"] = w.stale;
  j["stale_reason"] = w.stale_reason;
  j["override"] = w.override_record ? EncodeOverride(*w.override_record) : Json(nullptr);
  return j;
}

}  // namespace

Json EncodeLandscape(const server::LandscapeView& v) {
  Json buckets = Json::array();
  for (const auto& t : v.tasks) {
    buckets.push_back({{"bucket", t.bucket}, {"status", store::SweepStatusName(t.status)}, {"planned", t.planned}});
  }
  Json ids = Json::array(), t_s = Json::array(), median = Json::array(), cv = Json::array(), outcome = Json::array();
  Json columns = Json::object();
  for (const auto& p : v.params) columns[p] = Json::array();
  Json failed = Json::array();
  for (size_t i = 0; i < v.measurements.size(); ++i) {
    const tuner::Measurement& m = v.measurements[i];
    const bool ok = m.outcome == tuner::Outcome::kOk;
    ids.push_back(m.id);
    t_s.push_back(v.t_seconds[i]);
    for (const auto& p : v.params) {
      const auto value = m.config.Get(p);
      columns[p].push_back(value ? Json(*value) : Json(nullptr));
    }
    median.push_back(NullableNum(ok, m.median_ns));
    cv.push_back(m.cv);
    outcome.push_back(tuner::OutcomeName(m.outcome));
    if (!ok) {
      failed.push_back({{"id", m.id},
                        {"config", EncodeConfig(m.config)},
                        {"outcome", tuner::OutcomeName(m.outcome)},
                        {"detail", m.detail}});
    }
  }
  return Json{
      {"sweep_id", v.sweep.id},
      {"kernel", v.sweep.request.kernel},
      {"status", store::SweepStatusName(v.sweep.status)},
      {"bucket", v.bucket},
      {"buckets", buckets},
      {"params", v.params},
      {"default_config", EncodeConfig(v.default_config)},
      {"points",
       {{"id", ids}, {"t_s", t_s}, {"columns", columns}, {"median_ns", median}, {"cv", cv}, {"outcome", outcome}}},
      {"failed", failed},
      {"decision", EncodeDecision(v.decision)}};
}

Json EncodeSweepBest(const server::SweepBestView& v) {
  Json buckets = Json::array();
  for (const auto& b : v.buckets) {
    buckets.push_back({{"bucket", b.task.bucket},
                       {"status", store::SweepStatusName(b.task.status)},
                       {"planned", b.task.planned},
                       {"measured", b.measured},
                       {"ok", b.ok},
                       {"best_config", b.best ? EncodeConfig(b.best->config) : Json(nullptr)},
                       {"best_median_ns", b.best ? Json(b.best->median_ns) : Json(nullptr)},
                       {"best_measurement_id", b.best ? Json(b.best->id) : Json(nullptr)},
                       {"default_median_ns", b.default_median_ns ? Json(*b.default_median_ns) : Json(nullptr)},
                       {"chosen", b.chosen ? EncodeConfig(*b.chosen) : Json(nullptr)}});
  }
  return Json{{"sweep_id", v.sweep.id},
              {"kernel", v.sweep.request.kernel},
              {"dtype", DTypeName(v.sweep.request.dtype)},
              {"hardware", v.sweep.hardware_key},
              {"status", store::SweepStatusName(v.sweep.status)},
              {"buckets", buckets}};
}

Json EncodeWinners(const std::vector<server::WinnerView>& rows) {
  Json list = Json::array();
  for (const auto& w : rows) list.push_back(EncodeWinner(w));
  return Json{{"entries", list}};
}

Json EncodeExplain(const server::ExplainView& v) {
  Json ranked = Json::array();
  for (const auto& r : v.ranked) {
    ranked.push_back({{"measurement_id", r.m.id},
                      {"rank", r.rank},
                      {"config", EncodeConfig(r.m.config)},
                      {"median_ns", r.m.median_ns},
                      {"cv", r.m.cv},
                      {"samples_ns", r.m.samples_ns},
                      {"noise_band", r.noise_band},
                      {"within_noise", r.within_noise},
                      {"is_default", r.m.config.values() == v.default_config.values()},
                      {"is_winner", r.m.id == v.winner.entry.measurement_id}});
  }
  return Json{{"winner", EncodeWinner(v.winner)},
              {"sweep", v.sweep ? EncodeSweep(*v.sweep) : Json(nullptr)},
              {"decision", EncodeDecision(v.decision)},
              {"noise_band", v.noise_band ? Json(*v.noise_band) : Json(nullptr)},
              {"default_config", EncodeConfig(v.default_config)},
              {"measured", v.measured},
              {"ok", v.ok},
              {"ranked", ranked}};
}

}  // namespace blocktune::server::wire
