// The verdicts of a decision round; see decision.h.
#include "tuner/decision.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "tuner/timing/paired.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner {
namespace {

// A config a candidate must beat: the default, or the incumbent or served row while it holds
// its claim (beats the default).
struct Ref {
  std::string name;  // "default", "incumbent", "served"
  size_t at = 0;
};

// The round's repetitions and the extra rounds' (one map per interleaved call: config index ->
// its repetitions in that call, aligned by cycle), and the verdicts drawn from them.
class Rounds {
 public:
  Rounds(const RoundRoles& roles, const std::vector<Measurement>& first, const RetimeFn& retime, double min_band,
         int extra_rounds, int extra_rounds_per_config)
      : roles_(roles),
        timed_(first),
        retime_(retime),
        min_band_(min_band),
        extra_left_(std::max(extra_rounds, 0)),
        per_config_(std::max(extra_rounds_per_config, 0)) {
    std::map<size_t, std::vector<double>> call;
    for (size_t i = 0; i < first.size(); ++i) {
      if (first[i].outcome == Outcome::kOk) call[i] = first[i].samples_ns;
    }
    calls_.push_back(std::move(call));
  }

  bool Ok(size_t i) const { return i < timed_.size() && timed_[i].outcome == Outcome::kOk; }
  int64_t rounds() const { return static_cast<int64_t>(calls_.size()); }
  std::vector<Measurement> TakeTimed() { return std::move(timed_); }

  // `i` against `ref`, from every call that timed both.
  Verdict Judge(size_t i, const Ref& ref) const {
    std::vector<std::vector<double>> a, b;
    for (const auto& call : calls_) {
      const auto x = call.find(i), y = call.find(ref.at);
      if (x == call.end() || y == call.end()) continue;
      a.push_back(x->second);
      b.push_back(y->second);
    }
    const timing::PairedComparison c = timing::ComparePaired(a, b, min_band_);
    Verdict v;
    v.config = roles_.configs[i];
    v.against = ref.name;
    v.reference = roles_.configs[ref.at];
    v.config_ns = c.a_ns;
    v.reference_ns = c.b_ns;
    v.gain = c.gain;
    v.noise_band = c.band;
    v.cycles = c.cycles;
    v.dropped = c.dropped;
    v.rounds = static_cast<int64_t>(a.size());
    v.beats = c.Beats();
    close_[{i, ref.at}] = c.Close();
    return v;
  }

  // A close win of `i` over `ref` that the rounds so far hold up (Verdict::held): enough paired
  // repetitions, from two rounds or more, and `i` faster in each of those rounds on its own.
  bool Held(size_t i, const Verdict& v, const Ref& ref) const {
    if (v.rounds < 2 || v.cycles < kHeldWinCycles) return false;
    for (const auto& call : calls_) {
      const auto x = call.find(i), y = call.find(ref.at);
      if (x == call.end() || y == call.end()) continue;
      if (!(timing::ComparePaired(x->second, y->second, min_band_).gain > 0)) return false;
    }
    return true;
  }

  // `i` against each of `refs`; while a verdict is close (and, with `give_up_on_clear_loss`, none
  // is clearly lost), the close pairs are timed again, as long as extra rounds are left (the
  // bucket's, and `i`'s own share of them). With `challenger`, a win still close when they run
  // out counts only when the rounds hold it up (Verdict::held), else not (Verdict::unsettled).
  std::vector<Verdict> Settle(size_t i, const std::vector<Ref>& refs, bool give_up_on_clear_loss,
                              bool challenger = false) {
    int own_left = per_config_;
    while (true) {
      std::vector<Verdict> vs;
      std::vector<bool> close;   // per verdict
      std::vector<Ref> against;  // per verdict
      std::vector<size_t> again;
      bool clear_loss = false;
      for (const Ref& ref : refs) {
        if (ref.at == i) continue;
        vs.push_back(Judge(i, ref));
        against.push_back(ref);
        close.push_back(close_.at({i, ref.at}));
        if (close.back()) {
          again.push_back(ref.at);
        } else if (!vs.back().beats) {
          clear_loss = true;
        }
      }
      if (again.empty() || (clear_loss && give_up_on_clear_loss)) return vs;
      if (extra_left_ == 0 || own_left == 0) {
        for (size_t k = 0; k < vs.size(); ++k) {
          if (challenger && vs[k].beats && close[k]) {
            vs[k].held = Held(i, vs[k], against[k]);
            vs[k].beats = vs[k].held;
            vs[k].unsettled = !vs[k].held;
          }
        }
        return vs;
      }
      again.insert(again.begin(), i);
      --own_left;
      Extend(again);
    }
  }

 private:
  void Extend(const std::vector<size_t>& which) {
    --extra_left_;
    const std::vector<Measurement> more = retime_(which);
    if (more.empty()) {  // declined: the verdicts stand as they are
      extra_left_ = 0;
      return;
    }
    std::map<size_t, std::vector<double>> call;
    for (size_t k = 0; k < which.size() && k < more.size(); ++k) {
      Measurement& m = timed_[which[k]];
      if (TakeForeignDevice(m, more[k])) {  // the round's record is refused with it: no more rounds
        extra_left_ = 0;
        continue;
      }
      if (more[k].outcome != Outcome::kOk) continue;  // a failure now leaves its earlier rounds standing
      call[which[k]] = more[k].samples_ns;
      m.samples_ns.insert(m.samples_ns.end(), more[k].samples_ns.begin(), more[k].samples_ns.end());
      m.median_ns = timing::Median(m.samples_ns);
      m.cv = timing::CoefficientOfVariation(m.samples_ns);
    }
    calls_.push_back(std::move(call));
  }

  const RoundRoles& roles_;
  std::vector<Measurement> timed_;
  const RetimeFn& retime_;
  double min_band_;
  int extra_left_;
  int per_config_;
  std::vector<std::map<size_t, std::vector<double>>> calls_;
  mutable std::map<std::pair<size_t, size_t>, bool> close_;
};

std::string Pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
  return buf;
}

// "(9.20 ms vs 10.0 ms, 10 paired repetitions in 2 rounds, 1 disturbed cycle left out)"
std::string Figures(const Verdict& v) {
  // Appended piece by piece: GCC 12's -Wrestrict misfires on a chain of std::string operator+.
  std::string out = "(";
  out += FormatNs(v.config_ns);
  out += " vs ";
  out += FormatNs(v.reference_ns);
  out += ", ";
  out += std::to_string(v.cycles);
  out += " paired repetitions";
  if (v.rounds > 1) {
    out += " in ";
    out += std::to_string(v.rounds);
    out += " rounds";
  }
  if (v.dropped > 0) {
    out += ", ";
    out += std::to_string(v.dropped);
    out += v.dropped == 1 ? " disturbed cycle left out" : " disturbed cycles left out";
  }
  out += ")";
  return out;
}

// ", held: close, faster in each of 3 rounds" after the band of a held win (Verdict::held).
std::string HeldNote(const Verdict& v) {
  return v.held ? ", held: close, faster in each of " + std::to_string(v.rounds) + " rounds" : "";
}

// "the default", "it" (the row the text is about), "the served row", "the incumbent"
std::string Whom(const Verdict& v, const std::string& subject) {
  if (v.against == subject) return "it";
  if (v.against == "served") return "the served row";
  return "the " + v.against;
}

// "4.8% faster than the default, inside noise band 30.3% (...)" / "beyond noise band 2.0%"
std::string Compared(const Verdict& v, const std::string& subject) {
  const char* band = v.beats       ? ", beyond noise band "
                     : v.unsettled ? ", unsettled: beyond noise band by less than a standard error, "
                                     "no extra round left, band "
                                   : ", inside noise band ";
  return Pct(std::fabs(v.gain)) + (v.gain >= 0 ? " faster" : " slower") + " than " + Whom(v, subject) + band +
         Pct(v.noise_band) + HeldNote(v) + " " + Figures(v);
}

}  // namespace

std::string FormatNs(double ns) {
  const char* unit = "ns";
  double x = ns;
  if (ns >= 1e9) {
    x = ns / 1e9;
    unit = "s";
  } else if (ns >= 1e6) {
    x = ns / 1e6;
    unit = "ms";
  } else if (ns >= 1e3) {
    x = ns / 1e3;
    unit = "us";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, x < 10 ? "%.2f %s" : x < 100 ? "%.1f %s" : "%.0f %s", x, unit);
  return buf;
}

RoundDecision DecideRound(const RoundRoles& roles, const std::vector<Measurement>& round, const RetimeFn& retime,
                          double min_band, int max_extra_rounds, int max_extra_rounds_per_config) {
  Rounds r(roles, round, retime, min_band, max_extra_rounds, max_extra_rounds_per_config);
  RoundDecision d;
  const auto is_role = [&](size_t i) {
    return (roles.default_config && *roles.default_config == i) || (roles.incumbent && *roles.incumbent == i) ||
           (roles.served && *roles.served == i);
  };

  // The hurdles: the default, and the incumbent and served rows that beat it (their claim).
  std::optional<Ref> def;
  if (roles.default_config && r.Ok(*roles.default_config)) def = Ref{"default", *roles.default_config};
  std::vector<Ref> hurdles;
  if (def) hurdles.push_back(*def);
  struct Claim {
    Ref ref;
    bool held = true;
    std::optional<Verdict> over_default;
  };
  std::vector<Claim> claims;
  for (const auto& [name, at] : {std::pair{"incumbent", roles.incumbent}, std::pair{"served", roles.served}}) {
    if (!at || !r.Ok(*at) || (def && def->at == *at)) continue;
    Claim c{Ref{name, *at}, true, std::nullopt};
    if (def) {
      c.over_default = r.Settle(*at, {*def}, false).front();
      c.held = c.over_default->beats;
    }
    if (c.held) hurdles.push_back(c.ref);
    claims.push_back(std::move(c));
  }

  // The search's candidates, fastest first by the round's medians, each judged against every
  // hurdle. Of those that win all their verdicts, the one with the largest paired gain over the
  // default is the row (the round's medians rank them only when there is no default): a
  // median is one config's figure and moves with whatever hit its repetitions, a gain over the
  // default is the ratio the verdicts rest on.
  std::vector<size_t> order;
  for (size_t i = 0; i < roles.searched && i < round.size(); ++i) {
    if (r.Ok(i) && !is_role(i)) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return round[a].median_ns != round[b].median_ns ? round[a].median_ns < round[b].median_ns
                                                    : roles.configs[a].ToString() < roles.configs[b].ToString();
  });
  std::optional<size_t> winner;
  std::vector<Verdict> won;
  std::vector<Verdict> best_lost;  // the fastest challenger's verdicts, when it did not win
  const auto gain_over_default = [](const std::vector<Verdict>& vs) {
    for (const Verdict& v : vs) {
      if (v.against == "default") return v.gain;
    }
    return 0.0;
  };
  for (size_t i : order) {
    std::vector<Verdict> vs = r.Settle(i, hurdles, true, /*challenger=*/true);
    if (std::all_of(vs.begin(), vs.end(), [](const Verdict& v) { return v.beats; })) {
      if (!winner || gain_over_default(vs) > gain_over_default(won)) {
        winner = i;
        won = std::move(vs);
      }
      if (!def) break;  // nothing to rank the winners by but the medians: the fastest it is
    } else if (!winner && best_lost.empty()) {
      best_lost = std::move(vs);
    }
  }

  std::string dropped;  // claims that did not hold, for the record
  for (const Claim& c : claims) {
    if (c.held || !c.over_default) continue;
    dropped += "; dropped " + std::string(c.ref.name == "served" ? "served row" : "incumbent") + ": " +
               Compared(*c.over_default, "");
  }
  const auto find = [](const std::vector<Verdict>& vs, const std::string& against) -> const Verdict* {
    for (const Verdict& v : vs) {
      if (v.against == against) return &v;
    }
    return nullptr;
  };

  if (winner) {
    d.chosen = *winner;
    const Verdict* inc = find(won, "incumbent");
    const bool had_incumbent = roles.incumbent && r.Ok(*roles.incumbent) && !(def && def->at == *roles.incumbent);
    d.text = inc ? "replaced incumbent: " + Pct(inc->gain) + " faster, noise band " + Pct(inc->noise_band) +
                       HeldNote(*inc) + " " + Figures(*inc)
             : had_incumbent ? "replaced incumbent (it does not beat the default)"
                             : "new";
    if (const Verdict* v = find(won, "default")) {
      d.text += "; beats the default by " + Pct(v->gain) + ", noise band " + Pct(v->noise_band) + HeldNote(*v) + " " +
                Figures(*v);
    }
    if (const Verdict* v = find(won, "served")) {
      d.text += "; beats the served row by " + Pct(v->gain) + ", noise band " + Pct(v->noise_band) + HeldNote(*v) +
                " " + Figures(*v);
    }
    if (!won.empty()) {
      d.verdict = *std::min_element(won.begin(), won.end(), [](const Verdict& a, const Verdict& b) {
        return a.gain - a.noise_band < b.gain - b.noise_band;
      });
    }
  } else {
    // Nothing of the search won: a row that holds its claim stays (the incumbent first: the
    // table's own row does not churn), else the default, else whatever ran.
    const Claim* kept = nullptr;
    for (const char* name : {"incumbent", "served"}) {
      for (const Claim& c : claims) {
        if (kept == nullptr && c.held && c.ref.name == name) kept = &c;
      }
    }
    // "than it" where the text is about the kept row ("kept incumbent: it beats the default..."),
    // "than the default" where the default stands.
    const std::string subject = kept ? kept->ref.name : "";
    const std::string lost_to = kept ? kept->ref.name : "default";
    const Verdict* lost = find(best_lost, lost_to);
    if (lost == nullptr && !best_lost.empty()) {
      for (const Verdict& v : best_lost) {
        if (!v.beats && lost == nullptr) lost = &v;
      }
    }
    const std::string why = lost ? "best challenger " + Compared(*lost, subject) : "no other candidate ran";
    if (kept) {
      d.chosen = kept->ref.at;
      const std::string label = kept->ref.name == "served" ? "kept served row" : "kept incumbent";
      d.text = kept->over_default
                   ? label + ": it beats the default by " + Pct(kept->over_default->gain) + ", noise band " +
                         Pct(kept->over_default->noise_band) + " " + Figures(*kept->over_default) + "; " + why
                   : label + ": " + why;
      d.verdict = lost ? std::optional<Verdict>(*lost) : kept->over_default;
    } else if (def) {
      d.chosen = def->at;
      d.text = "kept default: " + why;
      if (lost) d.verdict = *lost;
    } else {
      d.chosen = order.empty() ? 0 : order.front();
      for (size_t i = 0; i < round.size() && order.empty(); ++i) {
        if (r.Ok(i)) {
          d.chosen = i;
          break;
        }
      }
      d.text = "new: only candidate";
    }
  }
  d.text += dropped;
  if (d.verdict) d.noise_band = d.verdict->noise_band;
  d.rounds = r.rounds();
  d.timed = r.TakeTimed();
  return d;
}

}  // namespace blocktune::tuner
