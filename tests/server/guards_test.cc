// Request guards: JSON scanning stops deep nesting, long strings and long arrays before
// nlohmann parses anything; the head guard refuses foreign Host names, chunked and compressed
// bodies and oversized declared lengths.
#include "server/guards/guards.h"

#include <gtest/gtest.h>

#include <string>

namespace blocktune::server::guards {
namespace {

TEST(Guards, ScanJsonRefusesDeepNestingWithoutRecursing) {
  const Limits limits;
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Limits big = limits;
  big.max_body_bytes = 1 << 22;
  const Verdict v = ScanJson(deep, big);
  EXPECT_EQ(v.status, 400);
  EXPECT_NE(v.message.find("nesting"), std::string::npos) << v.message;
  // Nesting inside strings does not count.
  EXPECT_TRUE(ScanJson(R"({"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})", limits).ok());
  EXPECT_TRUE(ScanJson(R"({"a": [{"b": [1, 2, {"c": "\"[{"}]}]})", limits).ok());
}

TEST(Guards, ScanJsonLimitsStringsAndArrays) {
  Limits limits;
  limits.max_string_bytes = 8;
  limits.max_array_items = 3;
  EXPECT_TRUE(ScanJson(R"(["12345678", [1,2,3], {"x": []}])", limits).ok());
  EXPECT_EQ(ScanJson(R"(["123456789"])", limits).status, 400);
  EXPECT_EQ(ScanJson(R"([1,2,3,4])", limits).status, 400);
  EXPECT_EQ(ScanJson(R"({"a": [[], [], [], []]})", limits).status, 400);
  EXPECT_TRUE(ScanJson(R"([ 1 , 2 , 3 ])", limits).ok());
  limits.max_body_bytes = 4;
  EXPECT_EQ(ScanJson("[1,2]", limits).status, 413);
}

TEST(Guards, HostNamesAreParsedStrictly) {
  EXPECT_EQ(HostName("LocalHost:8787"), "localhost");
  EXPECT_EQ(HostName("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(HostName("[::1]:80"), "::1");
  EXPECT_EQ(HostName("a b"), "");
  EXPECT_EQ(HostName("host:port"), "");
  EXPECT_EQ(HostName("[::1"), "");
  EXPECT_EQ(HostName(""), "");
}

TEST(Guards, HeadRefusesForeignHostsFramingAndLength) {
  const std::vector<std::string> hosts = {"127.0.0.1", "localhost"};
  const Limits limits;
  Head ok;
  ok.method = "GET";
  ok.host = "localhost:8787";
  EXPECT_TRUE(CheckHead(ok, hosts, limits).ok());
  Head evil = ok;
  evil.host = "evil.example";
  EXPECT_EQ(CheckHead(evil, hosts, limits).status, 421);
  EXPECT_TRUE(CheckHead(evil, {"*"}, limits).ok());
  Head chunked = ok;
  chunked.method = "POST";
  chunked.transfer_encoding = "chunked";
  EXPECT_EQ(CheckHead(chunked, hosts, limits).status, 411);
  Head gzip = ok;
  gzip.method = "POST";
  gzip.has_content_length = true;
  gzip.content_length = "10";
  gzip.content_encoding = "gzip";
  EXPECT_EQ(CheckHead(gzip, hosts, limits).status, 415);
  Head big = gzip;
  big.content_encoding = "";
  big.content_length = "99999999999";
  EXPECT_EQ(CheckHead(big, hosts, limits).status, 413);
  big.content_length = "12x";
  EXPECT_EQ(CheckHead(big, hosts, limits).status, 400);
  Head no_length = ok;
  no_length.method = "POST";
  EXPECT_EQ(CheckHead(no_length, hosts, limits).status, 411);
}

TEST(Guards, ClipKeepsUtf8Whole) {
  const std::string s = "aaaa\xc3\xa9\xc3\xa9";  // "aaaaéé"
  EXPECT_EQ(Clip(s, 5), "aaaa...");
  EXPECT_EQ(Clip(s, 6), "aaaa\xc3\xa9...");
  EXPECT_EQ(Clip("short", 64), "short");
}

}  // namespace
}  // namespace blocktune::server::guards

#include "server/wire/wire.h"

namespace blocktune::server::wire {
namespace {

TEST(Codec, FastLookupTextIsTheSameDocument) {
  tuner::LookupAnswer a;
  a.kernel = "matmul";
  a.config = NamedInts({{"block_m", 96}, {"block_n", 512}, {"block_k", 256}});
  a.hardware = "x86_64.\"odd\\key\x01\xff";
  a.bucket = "m64_n64_k64";
  a.matched_bucket = "m128_n64_k64";
  a.source = tables::Source::kNearest;
  a.median_ns = 40391.22113502935;
  a.samples = 5;
  a.sweep_id = 3;
  a.measurement_id = 77;
  a.measured_at = "2026-11-22T03:01:12.345Z";
  for (auto source : {tables::Source::kNearest, tables::Source::kOverride, tables::Source::kDefault}) {
    a.source = source;
    a.override_id = 9;
    a.reason = "pinned \"because\"";
    a.expires_at = source == tables::Source::kOverride ? "" : "2030-01-01T00:00:00.000Z";
    if (source == tables::Source::kDefault) a.median_ns = 0;
    const std::string fast = EncodeLookupText(a);
    const Json parsed = Json::parse(fast, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << fast;
    EXPECT_EQ(parsed, Json::parse(Dump(EncodeLookup(a)))) << fast;
  }
}

}  // namespace
}  // namespace blocktune::server::wire
