// Wire format of the dashboard's aggregates (server/dashboard.h) and their component schemas.
#pragma once

#include "server/dashboard.h"
#include "server/wire/wire.h"

namespace blocktune::server::wire {

Json EncodeLandscape(const server::LandscapeView& v);
Json EncodeSweepBest(const server::SweepBestView& v);
Json EncodeWinners(const std::vector<server::WinnerView>& rows);
Json EncodeExplain(const server::ExplainView& v);

}  // namespace blocktune::server::wire
