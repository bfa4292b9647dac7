// The sweep's time breakdown, handed to the sink in parts as the sweep runs; see sweep_run.h.
#include <spdlog/spdlog.h>

#include "tuner/sweep_run.h"

namespace blocktune::tuner {

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

BreakdownReport::BreakdownReport(SweepSink& sink, const Evaluator& evaluator, double flush_seconds)
    : sink_(sink),
      evaluator_(evaluator),
      flush_seconds_(flush_seconds),
      start_(Clock::now()),
      last_flush_(start_),
      costs_at_start_(evaluator.costs()) {}

void BreakdownReport::MaybeFlush() {
  if (SecondsSince(last_flush_) >= flush_seconds_) Flush();
}

void BreakdownReport::Flush() {
  SweepBreakdown now = breakdown;
  now.wall_s = SecondsSince(start_);
  now.eval = evaluator_.costs() - costs_at_start_;
  last_flush_ = Clock::now();
  if (auto s = sink_.RecordBreakdown(now - flushed_); !s) {
    spdlog::warn("recording the sweep's time breakdown failed error=\"{}\"", s.error().ToString());
    return;  // the next part carries this one's time too
  }
  flushed_ = now;
}

}  // namespace blocktune::tuner
