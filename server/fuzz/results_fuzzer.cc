// libFuzzer target on the results codec (POST /v1/results, `blocktune push`): the body takes the
// server's own path (wire::ParseBody: size and nesting scanned before nlohmann parses it, then
// wire::DecodeResultsBatch), and every batch the decoder accepts is checked as
// store::ResultsTable::Apply checks it (tuner::CheckMeasurement against its kernel's spec); the
// same bytes also go through DecodeIngestResult, the answer `push` reads. Beyond "no crash, no
// sanitizer report" it checks the codec's promise: a decoded batch encodes (EncodeResultsBatch,
// what push sends) to a document that decodes again, and whose second encoding is the same
// text (a fixed point), so nothing the server accepts is changed by a round trip. Built with
// clang 19 by deploy/fuzz-results.sh (libstdc++ 12's <expected> needs clang >= 19; clang 14
// builds the request fuzzer, which links only the Result-free guards).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kernels/core/kernel_spec.h"
#include "server/wire/wire.h"
#include "tuner/check.h"

namespace {

[[noreturn]] void Broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "results codec promise broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace blocktune;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const server::wire::Limits limits;
  auto body = server::wire::ParseBody(input, limits);
  if (!body) return 0;
  (void)server::wire::DecodeIngestResult(*body);
  auto batch = server::wire::DecodeResultsBatch(*body, limits);
  if (!batch) {
    if (batch.error().message.empty()) Broken("a refusal without a message", batch.error().path);
    return 0;
  }
  if (const KernelSpec* spec = FindKernel(batch->sweep.request.kernel)) {
    for (const auto& m : batch->measurements) (void)tuner::CheckMeasurement(*spec, m, batch->hardware);
  }
  const std::string text = server::wire::Dump(server::wire::EncodeResultsBatch(*batch));
  const server::wire::Json parsed = server::wire::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) Broken("the encoding is not JSON", text);
  auto again = server::wire::DecodeResultsBatch(parsed, limits);
  if (!again) Broken("the encoding of an accepted batch is refused", again.error().ToString());
  const std::string text2 = server::wire::Dump(server::wire::EncodeResultsBatch(*again));
  if (text2 != text) Broken("the encoding is not a fixed point", text + "\n---\n" + text2);
  return 0;
}
