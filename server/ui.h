// The dashboard: a read-only web UI under /ui/ (server/ui: index.html, app.css, the ES modules
// app.js (the router), common.js and one per page, and Apache ECharts from npm), every file
// embedded into blocktuned at build time, so it works with no network. Not part of the API
// route table: these are pages, not operations. Every path under /ui/ that is not an asset
// answers index.html, whose script draws the page the URL names from the read-only /v1 routes;
// nothing here needs the token or changes anything.
#pragma once

#include <string_view>

namespace httplib {
class Server;
}

namespace blocktune::server {

struct UiAsset {
  std::string_view name;  // served at /ui/assets/<name>; "index.html" is every page
  std::string_view content_type;
  std::string_view body;
};

// Every embedded file (generated at build time into ui_assets.cc by server/ui/embed.cmake).
const UiAsset* UiAssets(size_t* count);

// Installs GET /ui, /ui/ and /ui/* on `server`.
void InstallUi(httplib::Server& server);

}  // namespace blocktune::server
