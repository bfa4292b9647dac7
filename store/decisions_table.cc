// DecisionsTable and its SQL; see decisions_table.h.
#include "store/decisions_table.h"

namespace blocktune::store {
namespace {

constexpr char kDeleteFinalRoundSql[] = "DELETE FROM final_rounds WHERE sweep_id = ? AND bucket = ?";
constexpr char kInsertFinalRoundSql[] =
    "INSERT INTO final_rounds (sweep_id, bucket, config, position, is_incumbent, chosen, outcome, iterations, "
    "repetitions, median_ns, cv, noise_band, decision, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))";
constexpr char kSelectFinalRoundSql[] =
    "SELECT config, is_incumbent, chosen, outcome, iterations, COALESCE(median_ns, 0), COALESCE(cv, 0), noise_band, "
    "decision FROM final_rounds WHERE sweep_id = ? AND bucket = ? ORDER BY position";

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
    round.candidates.push_back(std::move(m));
    any = true;
  }
  if (!any) return NotFound("no final round for sweep " + std::to_string(sweep_id) + " bucket " + bucket, "bucket");
  return round;
}

}  // namespace blocktune::store
