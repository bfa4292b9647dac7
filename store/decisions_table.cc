// DecisionsTable and its SQL; see decisions_table.h.
#include "store/decisions_table.h"

namespace blocktune::store {
namespace {

constexpr char kDeleteFinalRoundSql[] = "DELETE FROM final_rounds WHERE sweep_id = ? AND bucket = ?";
constexpr char kInsertFinalRoundSql[] =
    "INSERT INTO final_rounds (sweep_id, bucket, config, position, is_incumbent, chosen, outcome, iterations, "
    "repetitions, median_ns, cv, noise_band, decision, verdict_config, verdict_against, verdict_reference, "
    "verdict_config_ns, verdict_reference_ns, verdict_gain, verdict_beats, verdict_cycles, verdict_dropped, "
    "verdict_rounds, rounds, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
    "strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))";
constexpr char kSelectFinalRoundSql[] =
    "SELECT config, is_incumbent, chosen, outcome, iterations, COALESCE(median_ns, 0), COALESCE(cv, 0), noise_band, "
    "decision, verdict_config, verdict_against, verdict_reference, verdict_config_ns, verdict_reference_ns, "
    "verdict_gain, verdict_beats, verdict_cycles, verdict_dropped, verdict_rounds, rounds "
    "FROM final_rounds WHERE sweep_id = ? AND bucket = ? ORDER BY position";

}  // namespace

Status DecisionsTable::Record(const tuner::FinalRound& round) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  return db_.InTransaction([&]() -> Status {
    auto del = conn.Prepare(kDeleteFinalRoundSql);
    if (!del) return std::unexpected(del.error());
    del->Bind(1, round.sweep_id).Bind(2, round.bucket);
    if (auto s = del->Run(); !s) return s;
    auto ins = conn.Prepare(kInsertFinalRoundSql);
    if (!ins) return std::unexpected(ins.error());
    for (size_t i = 0; i < round.candidates.size(); ++i) {
      const tuner::Measurement& m = round.candidates[i];
      ins->Reset();
      ins->Bind(1, round.sweep_id).Bind(2, round.bucket).Bind(3, m.config.ToString()).Bind(4, static_cast<int64_t>(i));
      ins->Bind(5, static_cast<int64_t>(round.incumbent && *round.incumbent == m.config));
      ins->Bind(6, static_cast<int64_t>(round.chosen == m.config)).Bind(7, tuner::OutcomeName(m.outcome));
      ins->Bind(8, m.iterations).Bind(9, static_cast<int64_t>(m.samples_ns.size()));
      if (m.outcome == tuner::Outcome::kOk) {
        ins->Bind(10, m.median_ns).Bind(11, m.cv);
      } else {
        ins->BindNull(10).BindNull(11);
      }
      ins->Bind(12, round.noise_band).Bind(13, round.decision);
      if (const auto& v = round.verdict) {
        ins->Bind(14, v->config.ToString()).Bind(15, v->against).Bind(16, v->reference.ToString());
        ins->Bind(17, v->config_ns).Bind(18, v->reference_ns).Bind(19, v->gain);
        ins->Bind(20, static_cast<int64_t>(v->beats)).Bind(21, v->cycles).Bind(22, v->dropped).Bind(23, v->rounds);
      } else {
        for (int col = 14; col <= 23; ++col) ins->BindNull(col);
      }
      ins->Bind(24, round.rounds);
      if (auto s = ins->Run(); !s) return s;
    }
    return Status{};
  });
}

Result<tuner::FinalRound> DecisionsTable::Get(int64_t sweep_id, const std::string& bucket) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kSelectFinalRoundSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, sweep_id).Bind(2, bucket);
  tuner::FinalRound round;
  round.sweep_id = sweep_id;
  round.bucket = bucket;
  bool any = false;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto config = NamedInts::Parse(st->Text(0));
    auto outcome = tuner::ParseOutcome(st->Text(3));
    if (!config || !outcome) return MakeError(ErrorCode::kDataLoss, "final round of " + bucket + " is malformed");
    tuner::Measurement m;
    m.sweep_id = sweep_id;
    m.bucket = bucket;
    m.config = *config;
    m.outcome = *outcome;
    m.iterations = st->Int(4);
    m.median_ns = st->Double(5);
    m.cv = st->Double(6);
    if (st->Int(1) != 0) round.incumbent = *config;
    if (st->Int(2) != 0) round.chosen = *config;
    round.noise_band = st->Double(7);
    round.decision = st->Text(8);
    if (!st->IsNull(9)) {
      auto vc = NamedInts::Parse(st->Text(9));
      auto vr = NamedInts::Parse(st->Text(11));
      if (!vc || !vr) return MakeError(ErrorCode::kDataLoss, "final round of " + bucket + " has a malformed verdict");
      tuner::Verdict v;
      v.config = *vc;
      v.against = st->Text(10);
      v.reference = *vr;
      v.config_ns = st->Double(12);
      v.reference_ns = st->Double(13);
      v.gain = st->Double(14);
      v.noise_band = round.noise_band;
      v.beats = st->Int(15) != 0;
      v.cycles = st->Int(16);
      v.dropped = st->Int(17);
      v.rounds = st->Int(18);
      round.verdict = std::move(v);
    }
    round.rounds = st->Int(19);
    round.candidates.push_back(std::move(m));
    any = true;
  }
  if (!any) return NotFound("no final round for sweep " + std::to_string(sweep_id) + " bucket " + bucket, "bucket");
  return round;
}

}  // namespace blocktune::store
