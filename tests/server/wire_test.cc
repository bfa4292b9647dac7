// The wire codec and the service: request decoding names the offending field; guards reject oversized and
// deeply nested bodies before nlohmann parses them; encodings keep parameter order.
#include "server/wire/wire.h"

#include <gtest/gtest.h>

#include "codegen/codegen.h"
#include "external/spec.h"
#include "server/api/routes.h"
#include "server/dashboard.h"
#include "server/http.h"
#include "server/openapi.h"
#include "server/service.h"
#include "server/wire/dashboard.h"
#include "tests/common/scratch_dir.h"

#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>

namespace blocktune::server::wire {
namespace {

Result<tuner::SweepRequest> Decode(std::string_view text) {
  auto j = ParseBody(text, Limits{});
  if (!j) return std::unexpected(j.error());
  return DecodeSweepRequest(*j, Limits{});
}

TEST(Codec, DecodesAFullSweepRequest) {
  auto r = Decode(R"({"kernel":"matmul","dtype":"f32","shapes":[{"m":128,"n":256,"k":64}],
                      "threads":2,"strategy":"random","budget":9,"seed":5})");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->kernel, "matmul");
  EXPECT_EQ(r->threads, 2);
  EXPECT_EQ(r->strategy, tuner::Strategy::kRandom);
  EXPECT_EQ(r->budget, 9);
  EXPECT_EQ(r->seed, 5u);
  ASSERT_EQ(r->shapes.size(), 1u);
  EXPECT_EQ(r->shapes[0].ToString(), "m=128,n=256,k=64");
  // Round trip through the encoder.
  auto again = DecodeSweepRequest(EncodeSweepRequest(*r), Limits{});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->shapes, r->shapes);
}

TEST(Codec, IsaIsOptional) {
  auto none = Decode(R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}]})");
  ASSERT_TRUE(none) << none.error().ToString();
  EXPECT_EQ(none->isa, "");
  EXPECT_FALSE(EncodeSweepRequest(*none).contains("isa"));  // the daemon's own level
  auto avx2 = Decode(R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}],"isa":"avx2"})");
  ASSERT_TRUE(avx2) << avx2.error().ToString();
  EXPECT_EQ(DecodeSweepRequest(EncodeSweepRequest(*avx2), Limits{})->isa, "avx2");
}

// A request without a strategy: exhaustive for a built-in kernel (~180 configs a bucket), auto
// for an external one (docs/search.md).
TEST(Codec, DefaultStrategyIsAutoForExternalKernels) {
  auto builtin = Decode(R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}]})");
  ASSERT_TRUE(builtin) << builtin.error().ToString();
  EXPECT_EQ(builtin->strategy, tuner::Strategy::kExhaustive);
  auto spec = external::ParseKernelSpec(R"({"name": "codec_default_strategy", "description": "test kernel",
      "parameters": [{"name": "bx", "values": [1, 2, 4]}],
      "dims": [{"name": "n", "rounding": "pow2_ceil", "max": 4096}], "dtypes": ["f32"],
      "runner": {"command": ["/bin/true"]}})",
                                        "codec_default_strategy.json", "/");
  ASSERT_TRUE(spec) << spec.error().ToString();
  ASSERT_TRUE(RegisterKernel(std::move(*spec)));
  auto ext = Decode(R"({"kernel":"codec_default_strategy","shapes":[{"n":64}]})");
  ASSERT_TRUE(ext) << ext.error().ToString();
  EXPECT_EQ(ext->strategy, tuner::Strategy::kAuto);
  auto chosen = Decode(R"({"kernel":"codec_default_strategy","shapes":[{"n":64}],"strategy":"random"})");
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->strategy, tuner::Strategy::kRandom);
}

struct BadCase {
  const char* body;
  const char* path;
};

class CodecRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(CodecRejects, WithThePathOfTheField) {
  auto r = Decode(GetParam().body);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().path, GetParam().path) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, CodecRejects,
    ::testing::Values(BadCase{"not json", "body"}, BadCase{"[1,2]", "body"}, BadCase{"{}", "kernel"},
                      BadCase{R"({"kernel":"nope","shapes":[{"m":1}]})", "kernel"},
                      BadCase{R"({"kernel":"matmul"})", "shapes"},
                      BadCase{R"({"kernel":"matmul","shapes":[]})", "shapes"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2}]})", "shapes[0].k"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":"3"}]})", "shapes[0].k"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3,"z":1}]})", "shapes[0].z"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}],"threads":0})", "threads"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}],"strategy":"x"})", "strategy"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}],"budget":-1})", "budget"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}],"dtype":"f8"})", "dtype"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}],"extra":1})", "extra"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}],"isa":"sse9"})", "isa"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}],"isa":2})", "isa"},
                      BadCase{R"({"kernel":"matmul","shapes":[{"m":1,"n":2,"k":3}],"isa":"portable"})", "isa"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string name = "path_";
      for (char c : std::string(info.param.path)) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name + "_" + std::to_string(info.index);
    });

TEST(Codec, RejectsDeepNestingBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = ParseBody(deep, Limits{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().path, "body");
  // Brackets inside strings do not count.
  auto ok = ParseBody(R"({"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})", Limits{});
  EXPECT_TRUE(ok);
}

// nlohmann stops at a NUL byte; found by the contract test (a corpus body with a trailing NUL
// was accepted although no JSON parser the document's readers use would take it).
TEST(Codec, RejectsANulByteAnywhereInTheBody) {
  auto r = ParseBody(std::string(R"({"kernel":"matmul"})") + '\0' + "junk", Limits{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().path, "body");
}

TEST(Codec, RejectsOversizedBodies) {
  Limits small;
  small.max_body_bytes = 10;
  EXPECT_FALSE(ParseBody(R"({"kernel":"matmul"})", small));
}

TEST(Codec, ErrorBodiesAndStatuses) {
  const Json e = EncodeError(Error{ErrorCode::kInvalidArgument, "bad", "shapes[0].m"});
  EXPECT_EQ(e.dump(), R"({"error":{"code":"invalid_argument","message":"bad","path":"shapes[0].m"}})");
  EXPECT_EQ(HttpStatus(ErrorCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatus(ErrorCode::kNotFound), 404);
  EXPECT_EQ(HttpStatus(ErrorCode::kInternal), 500);
}

TEST(Codec, LookupEncodingKeepsParameterOrderAndRoundTrips) {
  tuner::LookupAnswer a;
  a.kernel = "matmul";
  a.config = NamedInts({{"block_m", 96}, {"block_n", 512}, {"block_k", 256}});
  a.source = tables::Source::kTunedFallback;
  a.hardware = "x86_64.avx512.intel.fam6_mod167.t1";
  a.queried_hardware = "x86_64.avx512.intel.fam6_mod167.t4";
  a.fallback_levels = 1;
  a.bucket = "m1024_n1024_k1024";
  a.median_ns = 5e6;
  const std::string text = EncodeLookup(a).dump();
  EXPECT_EQ(Json::parse(EncodeLookupText(a)), Json::parse(text));
  EXPECT_NE(text.find(R"("config":{"block_m":96,"block_n":512,"block_k":256})"), std::string::npos) << text;
  auto back = DecodeLookup(Json::parse(text));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->config, a.config);
  EXPECT_EQ(back->source, a.source);
  EXPECT_EQ(back->bucket, a.bucket);
  EXPECT_EQ(back->queried_hardware, a.queried_hardware);
  EXPECT_EQ(back->fallback_levels, 1);
  // Unknown fingerprint: null and not stale; a stale row's answer says so in both encoders.
  EXPECT_NE(text.find(R"("fingerprint":null,"stale":false)"), std::string::npos) << text;
  a.fingerprint = "00000000deadbeef";
  a.stale = true;
  const std::string stale = EncodeLookupText(a);
  EXPECT_EQ(Json::parse(stale), EncodeLookup(a));
  EXPECT_NE(stale.find(R"("fingerprint":"00000000deadbeef","stale":true)"), std::string::npos) << stale;
  auto back_stale = DecodeLookup(Json::parse(stale));
  ASSERT_TRUE(back_stale);
  EXPECT_TRUE(back_stale->stale);
  EXPECT_EQ(back_stale->fingerprint, a.fingerprint);
}

TEST(Codec, MeasurementsCarryTheirFingerprint) {
  // GET /v1/sweeps/{id}/measurements: the build that measured each row, null when unknown.
  tuner::Measurement known;
  known.id = 7;
  known.bucket = "m64_n32_k16";
  known.problem.dims = NamedInts({{"m", 64}, {"n", 32}, {"k", 16}});
  known.config = NamedInts({{"block_m", 32}, {"block_n", 32}, {"block_k", 16}});
  known.outcome = tuner::Outcome::kOk;
  known.samples_ns = {10, 11, 12};
  known.median_ns = 11;
  known.created_at = "2026-11-25T12:00:00.000Z";
  known.fingerprint = "00112233aabbccdd";
  tuner::Measurement unknown = known;
  unknown.id = 8;
  unknown.fingerprint.clear();
  const Json page = EncodeMeasurementPage({known, unknown}, 0);
  EXPECT_EQ(page["measurements"][0]["fingerprint"], "00112233aabbccdd");
  EXPECT_TRUE(page["measurements"][1]["fingerprint"].is_null());
  int64_t next = -1;
  auto back = DecodeMeasurementPage(page, &next);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].fingerprint, "00112233aabbccdd");
  EXPECT_EQ((*back)[1].fingerprint, "");

  // POST /v1/results: a pushed measurement keeps it; null or absent (an older sender) is
  // unknown; anything but a string or null is refused, naming the field.
  store::ResultsBatch b;
  b.batch_id = "batch-1";
  b.sweep.uid = "aaaaaaaa01";
  b.sweep.host = "h";
  b.sweep.request.kernel = "matmul";
  b.sweep.request.shapes = {NamedInts({{"m", 64}, {"n", 32}, {"k", 16}})};
  b.sweep.bucket_version = 1;
  b.hardware = HardwareProfile::Detect(1);
  b.sweep.hardware_key = b.hardware.Key();
  b.measurements = {known, unknown};
  Json wire = EncodeResultsBatch(b);
  EXPECT_EQ(wire["measurements"][0]["fingerprint"], "00112233aabbccdd");
  EXPECT_TRUE(wire["measurements"][1]["fingerprint"].is_null());
  wire["measurements"][1].erase("fingerprint");
  auto decoded = DecodeResultsBatch(wire, Limits{});
  ASSERT_TRUE(decoded) << decoded.error().ToString();
  EXPECT_EQ(decoded->measurements[0].fingerprint, "00112233aabbccdd");
  EXPECT_EQ(decoded->measurements[1].fingerprint, "");
  wire["measurements"][1]["fingerprint"] = 12;
  auto bad = DecodeResultsBatch(wire, Limits{});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().path, "measurements[1].fingerprint");
}

// The decision record says what decided (issue 39): the verdict's figures, in the explain and
// landscape JSON, with exactly the keys the OpenAPI schema declares.
TEST(Codec, ADecisionCarriesTheVerdictThatDecided) {
  server::ExplainView v;
  v.winner.entry.kernel = "matmul";
  tuner::FinalRound round;
  round.chosen = NamedInts({{"block_m", 48}});
  round.noise_band = 0.02;
  round.decision = "new; beats the default by 8.0%";
  round.rounds = 2;
  tuner::Verdict verdict;
  verdict.config = round.chosen;
  verdict.against = "default";
  verdict.reference = NamedInts({{"block_m", 96}});
  verdict.config_ns = 920;
  verdict.reference_ns = 1000;
  verdict.gain = 0.08;
  verdict.noise_band = 0.02;
  verdict.beats = true;
  verdict.cycles = 8;
  verdict.dropped = 2;
  verdict.rounds = 2;
  round.verdict = verdict;
  v.decision = round;
  const Json d = EncodeExplain(v)["decision"];
  EXPECT_EQ(d["rounds"], 2);
  EXPECT_EQ(d["verdict"]["against"], "default");
  EXPECT_EQ(d["verdict"]["config_ns"], 920);
  EXPECT_EQ(d["verdict"]["reference_ns"], 1000);
  EXPECT_EQ(d["verdict"]["cycles"], 8);
  EXPECT_EQ(d["verdict"]["dropped"], 2);
  const Json schemas = server::OpenApiDocument()["components"]["schemas"];
  for (const auto& [name, encoded] : {std::pair{"Decision", d}, std::pair{"Verdict", d["verdict"]}}) {
    std::set<std::string> declared, sent;
    for (const auto& [key, _] : schemas[name]["properties"].items()) declared.insert(key);
    for (const auto& [key, _] : encoded.items()) sent.insert(key);
    EXPECT_EQ(sent, declared) << name;
  }
  round.verdict.reset();
  v.decision = round;
  EXPECT_TRUE(EncodeExplain(v)["decision"]["verdict"].is_null());
}

TEST(Http, TokenComparisonIsExact) {
  EXPECT_TRUE(server::TokenEquals("abcdef0123456789", "abcdef0123456789"));
  EXPECT_FALSE(server::TokenEquals("abcdef0123456789", "abcdef012345678"));
  EXPECT_FALSE(server::TokenEquals("abcdef0123456789", "abcdef0123456780"));
  EXPECT_FALSE(server::TokenEquals("", "x"));
}

TEST(Http, EveryMutatingRouteIsMarked) {
  for (const auto& r : server::api::Routes()) {
    // Batch lookup is a POST only because a list of queries does not fit a URL; it changes nothing.
    const bool batch_lookup = r.op == server::api::Op::kBatchLookup;
    EXPECT_EQ(r.auth == server::api::Auth::kBearer, r.method != "GET" && !batch_lookup) << r.method << " " << r.path;
  }
}

// GET's query string and a POST batch entry go through the codec to the same request, kernel
// found once; the query string's own errors name the parameter.
TEST(Codec, GetAndPostLookupsDecodeToTheSameRequest) {
  const QueryParams get = {{"kernel", "matmul"},
                           {"dtype", "bf16"},
                           {"m", "96"},
                           {"n", "80"},
                           {"k", "64"},
                           {"threads", "2"},
                           {"hardware", "x86_64.avx2.amd.fam25_mod1.t2"},
                           {"config", "block_m=32"}};
  auto g = DecodeLookupQuery(get);
  ASSERT_TRUE(g) << g.error().ToString();
  auto body = ParseBody(R"({"queries":[{"kernel":"matmul","dtype":"bf16","dims":{"m":96,"n":80,"k":64},"threads":2,
                          "hardware":"x86_64.avx2.amd.fam25_mod1.t2","config":{"block_m":32}}]})",
                        Limits{});
  ASSERT_TRUE(body);
  auto p = DecodeBatchLookup(*body, Limits{});
  ASSERT_TRUE(p) << p.error().ToString();
  ASSERT_EQ(p->size(), 1u);
  const LookupRequest& q = p->front();
  EXPECT_EQ(g->spec, FindKernel("matmul"));
  EXPECT_EQ(q.spec, g->spec);
  EXPECT_EQ(g->kernel, q.kernel);
  EXPECT_EQ(g->threads, q.threads);
  EXPECT_EQ(g->query.dtype, q.query.dtype);
  EXPECT_EQ(g->query.dims.ToString(), q.query.dims.ToString());
  EXPECT_EQ(g->query.hardware_key, q.query.hardware_key);
  ASSERT_TRUE(g->query.explicit_config && q.query.explicit_config);
  EXPECT_EQ(g->query.explicit_config->ToString(), q.query.explicit_config->ToString());

  auto twice = DecodeLookupQuery({{"kernel", "matmul"}, {"m", "1"}, {"m", "2"}, {"n", "1"}, {"k", "1"}});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().path, "m");
  auto unknown = DecodeLookupQuery({{"kernel", "matmul"}, {"m", "1"}, {"n", "1"}, {"k", "1"}, {"q", "1"}});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().path, "q");
  auto bad_key = DecodeLookupQuery({{"kernel", "matmul"}, {"m", "1"}, {"n", "1"}, {"k", "1"}, {"hardware", "a/b"}});
  ASSERT_FALSE(bad_key);
  EXPECT_EQ(bad_key.error().path, "hardware");
}

// A query the lookup refuses is answered by an error whose path names the field in the batch's
// JSON: the lookup says "n" (GET's parameter), the batch holds it at queries[i].dims.n.
TEST(Codec, BatchLookupErrorsNameTheFieldOfTheirQuery) {
  auto body = ParseBody(R"({"queries":[{"kernel":"matmul","dims":{"m":8,"n":-1,"k":8}},)"
                        R"({"kernel":"matmul","dims":{"m":8,"n":8,"k":8},"config":{"block_zz":1}},)"
                        R"({"kernel":"matmul","dims":{"m":8,"n":8,"k":8}}]})",
                        Limits{});
  ASSERT_TRUE(body);
  auto p = DecodeBatchLookup(*body, Limits{});
  ASSERT_TRUE(p) << p.error().ToString();
  std::vector<Result<tuner::LookupAnswer>> answers;
  for (const LookupRequest& q : *p)
    answers.push_back(tuner::Lookup(*q.spec, std::vector<tuner::TunedEntry>{}, q.query));
  ASSERT_FALSE(answers[0]);
  EXPECT_EQ(answers[0].error().path, "n");
  const Json out = EncodeBatchLookup(*p, answers);
  ASSERT_EQ(out["results"].size(), 3u);
  EXPECT_EQ(out["results"][0]["error"]["path"], "queries[0].dims.n") << out.dump();
  EXPECT_EQ(out["results"][1]["error"]["path"], "queries[1].config.block_zz") << out.dump();
  EXPECT_EQ(out["results"][2]["source"], "default") << out.dump();
  EXPECT_EQ(BatchQueryError((*p)[2], 2, InvalidArgument("unsupported", "dtype").error()).path, "queries[2].dtype");
  EXPECT_EQ(BatchQueryError((*p)[2], 2, InvalidArgument("no path").error()).path, "queries[2]");
}

// A submission carries its kernel and the canonical text an Idempotency-Key replay is compared by.
TEST(Codec, SweepSubmissionCarriesItsKernelAndCanonicalText) {
  auto j = ParseBody(R"({"kernel":"matmul","shapes":[{"m":128,"n":256,"k":64}],"seed":5})", Limits{});
  ASSERT_TRUE(j);
  auto s = DecodeSweepSubmission(*j, Limits{});
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->spec, FindKernel("matmul"));
  EXPECT_EQ(s->canonical, Dump(EncodeSweepRequest(s->request)));
}

}  // namespace
}  // namespace blocktune::server::wire

namespace blocktune::server {
namespace {

// A daemon with an empty database serves the checked-in table; its own measurements win.
TEST(Service, ServesTheCheckedInTableUnderTheDatabase) {
  auto rows = codegen::ParseJsonl(codegen::CheckedInEntriesJsonl());
  ASSERT_TRUE(rows);
  ASSERT_FALSE(rows->empty()) << "the checked-in table is empty";
  const tuner::TunedEntry row = rows->front();
  const test::ScratchDir dir("service_test");
  const std::string path = dir.File("db");
  auto store = store::Store::Open(path);
  ASSERT_TRUE(store) << store.error().ToString();
  // A named ServiceOptions, not a temporary: for `ServiceOptions{}` GCC 12 reports the
  // temporary's sweep.tool_version string as maybe-uninitialized when it is destroyed, a
  // false positive of its -O2 flow analysis.
  const ServiceOptions options;
  Service service(std::move(*store), path, options);
  ASSERT_TRUE(service.Start());
  const KernelSpec* spec = FindKernel(row.kernel);
  ASSERT_NE(spec, nullptr);
  auto problem = spec->ProblemFromBucket(row.dtype, row.bucket);
  ASSERT_TRUE(problem);
  auto answer = service.Lookup(*spec, tuner::LookupQuery{row.dtype, problem->dims, row.hardware_key, std::nullopt}, 1);
  ASSERT_TRUE(answer) << answer.error().ToString();
  EXPECT_EQ(answer->source, tables::Source::kTuned);
  EXPECT_EQ(answer->config, row.config);
  EXPECT_EQ(answer->sweep_id, row.sweep_id);
  service.Stop();
}

}  // namespace
}  // namespace blocktune::server
