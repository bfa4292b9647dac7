// The baseline for deploy/bench-lookup.sh: a bare cpp-httplib server that answers GET
// /v1/lookup with a fixed JSON body of the same size and shape as blocktuned's answer, built
// with the same socket options and thread pool as blocktuned (TCP_NODELAY, keep-alive, 64
// workers), so the comparison measures what blocktuned does per request and nothing else.
#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  std::string port_file;
  int threads = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--port-file") {
      port_file = argv[i + 1];
    } else if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: bare_server [--port-file FILE] [--threads N]\n");
      return 2;
    }
  }
  static const std::string kBody =
      R"({"kernel":"matmul","config":{"block_m":288,"block_n":2048,"block_k":384},"source":"tuned",)"
      R"("hardware":"x86_64.avx512.intel.fam6_mod167.t1","bucket":"m1024_n1024_k1024",)"
      R"("matched_bucket":"m1024_n1024_k1024","median_ns":10234567.0,"samples":5,"sweep_id":1,)"
      R"("measurement_id":812,"measured_at":"2026-11-22T03:01:12.345Z"})";
  httplib::Server s;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.set_tcp_nodelay(true);
  s.set_keep_alive_max_count(100000);
  s.set_keep_alive_timeout(5);
  s.Get("/v1/lookup",
        [](const httplib::Request&, httplib::Response& res) { res.set_content(kBody, "application/json"); });
  const int port = s.bind_to_any_port("127.0.0.1");
  if (port <= 0) return 5;
  if (!port_file.empty()) std::ofstream(port_file) << port << "\n";
  std::printf("bare_server on 127.0.0.1:%d\n", port);
  std::fflush(stdout);
  s.listen_after_bind();
  return 0;
}
