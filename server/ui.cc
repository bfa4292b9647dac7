// Serving the embedded dashboard; see ui.h.
#include "server/ui.h"

#include <httplib.h>

#include <string>

namespace blocktune::server {
namespace {

const UiAsset* Find(std::string_view name) {
  size_t n = 0;
  const UiAsset* assets = UiAssets(&n);
  for (size_t i = 0; i < n; ++i) {
    if (assets[i].name == name) return &assets[i];
  }
  return nullptr;
}

// The page may load only its own scripts and styles, talk only to this daemon and submit forms
// (/ui/compare's) only to it: a CDN URL or any other origin slipped into the UI is blocked and
// reported as a console error, which the browser test fails on. ECharts sets element styles,
// hence 'unsafe-inline' for styles.
constexpr const char* kCsp =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

void Send(httplib::Response& res, const UiAsset& a, bool immutable) {
  res.status = 200;
  res.set_header("Content-Security-Policy", kCsp);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  // Assets change only with the binary; pages always revalidate so a new daemon's UI shows.
  res.set_header("Cache-Control", immutable ? "public, max-age=3600" : "no-cache");
  res.set_content(std::string(a.body), std::string(a.content_type));
}

}  // namespace

void InstallUi(httplib::Server& server) {
  const UiAsset* index = Find("index.html");
  server.Get("/ui", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/ui/", 301); });
  server.Get(R"(/ui/assets/([A-Za-z0-9_.\-]{1,64}))", [](const httplib::Request& req, httplib::Response& res) {
    const UiAsset* a = Find(std::string(req.matches[1]));
    if (a == nullptr || a->name == "index.html") {
      res.status = 404;  // the error handler writes the JSON body
      return;
    }
    Send(res, *a, true);
  });
  // Any other path under /ui/ is a page: the script reads the URL and draws it.
  server.Get(R"(/ui/(.{0,512}))",
             [index](const httplib::Request&, httplib::Response& res) { Send(res, *index, false); });
}

}  // namespace blocktune::server
