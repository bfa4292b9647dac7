// Service's device check (docs/accelerators.md#the-device-of-a-sweep): an external kernel's
// runner may announce the device it measures on, and the sweep is filed under that device's key
// instead of the host CPU's. Before a task measures anything its runner is asked once, with one
// repetition of the kernel's default config at the task's bucket (or of the first valid config
// when the default is not valid there): the answer is discarded, the device line kept. The
// first task of a sweep moves the sweep to the device's key (nothing is stored under the host's
// key yet); every later task, a resumed one included, must find the same device, and TaskSink
// refuses any measurement from another one. Built-in kernels are not asked.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "external/device.h"
#include "server/service.h"
#include "tuner/evaluator.h"

namespace blocktune::server {
namespace {

// Configs asked for the device: the default and one more, for a default that crashes before its
// runner says anything. More would turn a runner that always dies into minutes of timeouts.
constexpr size_t kDeviceProbes = 2;

Error DeviceError(const std::string& message) { return Error{ErrorCode::kFailedPrecondition, message, "device"}; }

}  // namespace

Result<std::string> Service::SettleDevice(const store::SweepRecord& sweep, const KernelSpec& spec,
                                          const tuner::SweepRequest& request, HardwareProfile& hw) {
  const std::string filed = sweep.hardware_key;
  if (tables::IsDeviceKey(filed)) hw.device_key = filed;
  if (spec.runner() == nullptr || spec.runner()->command.empty()) return hw.Key();
  auto plans = tuner::PlanSweep(request, spec, hw);
  if (!plans || plans->empty() || plans->front().valid.empty()) return hw.Key();  // RunSweep says why
  const tuner::BucketPlan& plan = plans->front();
  std::vector<Config> probes;
  const Config fallback = spec.DefaultConfig();
  if (std::find(plan.valid.begin(), plan.valid.end(), fallback) != plan.valid.end()) probes.push_back(fallback);
  for (const Config& c : plan.valid) {
    if (probes.size() >= kDeviceProbes) break;
    if (c != fallback) probes.push_back(c);
  }
  tuner::timing::TimingOptions timing = options_.sweep.timing;
  timing.repetitions = 1;
  timing.max_retries = 0;
  timing.min_repetition_ns = 1e6;  // 1 ms: the time is thrown away
  std::optional<tuner::InProcessEvaluator> own;
  tuner::Evaluator* evaluator = options_.sweep.evaluator;
  if (evaluator == nullptr) evaluator = &own.emplace();
  tuner::Measurement m;
  for (const Config& c : probes) {
    m = tuner::Measurement();
    evaluator->Measure(tuner::EvalRequest{&spec, plan.problem, request.threads, request.seed, timing, hw.cpu.isa}, c,
                       m);
    if (!m.device_error.empty()) {
      return std::unexpected(DeviceError("sweep " + std::to_string(sweep.id) + ": " + m.device_error +
                                         "; nothing was stored under its key"));
    }
    if (!m.device_key.empty()) break;
  }
  if (m.device_key.empty()) {
    // The runner answered neither probe: the sweep keeps its key, and TaskSink still refuses a
    // measurement from another device.
    spdlog::warn("the runner of sweep {} answered no device probe; it stays filed under {} detail=\"{}\"", sweep.id,
                 hw.Key(), m.detail.substr(0, 300));
    return hw.Key();
  }
  const std::string& key = m.device_key;
  if (key != filed && (!sweep.device.empty() || tables::IsDeviceKey(filed))) {
    return std::unexpected(DeviceError(
        "sweep " + std::to_string(sweep.id) + " is filed under " + filed +
        (sweep.device.empty() ? std::string() : " (" + sweep.device + ")") + ", but its runner now measures on " + key +
        (m.device.empty() ? std::string(" (no device line)") : " (" + m.device + ")") +
        ": the device changed within the sweep (a runner restarted on another device?); nothing was stored under " +
        key + " and the sweep fails"));
  }
  if (key != filed || (sweep.device.empty() && !m.device.empty())) {
    HardwareProfile device = host_;
    device.threads = request.threads;
    if (tables::IsDeviceKey(key)) {
      device.device_key = key;
      if (auto id = external::ParseDeviceIdentity(m.device)) device.model_name = id->model;
    } else if (key != hw.Key()) {
      return std::unexpected(DeviceError("sweep " + std::to_string(sweep.id) + " is filed under " + filed +
                                         ", but its runner measures on " + key + "; the sweep fails"));
    }
    auto hardware_id = store_->hardware().Upsert(device);
    if (!hardware_id) return std::unexpected(hardware_id.error());
    if (auto s = store_->devices().Set(sweep.id, *hardware_id, m.device); !s) {
      return std::unexpected(DeviceError("sweep " + std::to_string(sweep.id) + " cannot move to " + key + ": " +
                                         s.error().message + "; the sweep fails"));
    }
    spdlog::info("sweep {} filed under the device its runner announced key={} device={}", sweep.id, key, m.device);
  }
  if (tables::IsDeviceKey(key)) hw.device_key = key;
  return key;
}

}  // namespace blocktune::server
