// The persistent thread pool behind ParallelRun/ParallelFor.
//
// One atomic 64-bit word publishes a job: (generation << 16) | thread count. Workers spin on it
// briefly after each job (about 50 us, so back-to-back kernel calls in a timing loop skip the
// futex sleep/wake that costs ~5-10 us) and then sleep in std::atomic::wait (a futex on Linux).
// Reading the generation and thread count from one word means a worker decides whether it takes
// part in exactly the job it saw; the caller waits for every participant before returning, so
// the job pointer stays valid for them and is never read by a non-participant.
#include "kernels/core/parallel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/core/simd.h"  // <immintrin.h>
#endif

namespace blocktune::kernels {
namespace {

// More workers than this is a caller bug, not a machine; the count field has 16 bits.
constexpr int kMaxThreads = 1024;
// Spin this long before sleeping: longer than a typical gap between timed calls (a few us),
// short enough that an idle pool stops burning a core almost at once.
constexpr auto kSpinTime = std::chrono::microseconds(50);

thread_local bool t_in_pool = false;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");  // the spin-wait hint, as PAUSE on x86
#endif
}

// Waits until `word` no longer holds `old`: spins first, then sleeps on the futex.
template <typename T>
T SpinThenWait(const std::atomic<T>& word, T old) {
  T v = word.load(std::memory_order_acquire);
  if (v != old) return v;
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (int i = 1;; ++i) {
    CpuRelax();
    v = word.load(std::memory_order_acquire);
    if (v != old) return v;
    if ((i & 63) == 0 && std::chrono::steady_clock::now() > deadline) break;
  }
  while ((v = word.load(std::memory_order_acquire)) == old) word.wait(old, std::memory_order_acquire);
  return v;
}

class Pool {
 public:
  void Run(int threads, FunctionRef<void(int)> fn) {
    std::lock_guard<std::mutex> lock(call_mutex_);
    while (static_cast<int>(workers_.size()) < threads - 1) {
      const int index = static_cast<int>(workers_.size()) + 1;
      const uint64_t seen = job_word_.load(std::memory_order_relaxed);
      workers_.emplace_back([this, index, seen] { WorkerLoop(index, seen); });
      worker_count_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    }
    job_ = &fn;
    remaining_.store(threads - 1, std::memory_order_relaxed);
    const uint64_t generation = (job_word_.load(std::memory_order_relaxed) >> 16) + 1;
    job_word_.store((generation << 16) | static_cast<uint64_t>(threads), std::memory_order_release);
    job_word_.notify_all();

    t_in_pool = true;
    fn(0);
    t_in_pool = false;

    for (int left = remaining_.load(std::memory_order_acquire); left != 0;
         left = remaining_.load(std::memory_order_acquire)) {
      SpinThenWait(remaining_, left);
    }
  }

  int worker_count() const { return worker_count_.load(std::memory_order_relaxed); }

 private:
  void WorkerLoop(int index, uint64_t seen) {
    t_in_pool = true;
    while (true) {
      const uint64_t word = SpinThenWait(job_word_, seen);
      seen = word;
      const int threads = static_cast<int>(word & 0xffff);
      if (index >= threads) continue;
      (*job_)(index);
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_one();
    }
  }

  std::mutex call_mutex_;  // one job at a time
  std::vector<std::thread> workers_;
  std::atomic<int> worker_count_{0};
  std::atomic<uint64_t> job_word_{0};
  std::atomic<int> remaining_{0};
  FunctionRef<void(int)>* job_ = nullptr;
};

// The pool is never destroyed: its workers sleep forever and die with the process. After fork()
// only the forking thread exists in the child, so the child drops (leaks) the parent's pool,
// whose workers and possibly locked mutex are copies of nothing, and builds a new one lazily.
std::atomic<Pool*> g_pool{nullptr};

void ForgetPoolInChild() {
  g_pool.store(nullptr, std::memory_order_relaxed);
  t_in_pool = false;
}

Pool& GetPool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p != nullptr) return *p;
  static const bool registered = [] { return pthread_atfork(nullptr, nullptr, ForgetPoolInChild) == 0; }();
  (void)registered;
  Pool* fresh = new Pool();
  if (g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another caller won the race; `fresh` has no threads yet
  return *p;
}

}  // namespace

void ParallelRun(int threads, FunctionRef<void(int thread)> fn) {
  if (threads <= 1) {
    fn(0);
    return;
  }
  threads = std::min(threads, kMaxThreads);
  if (t_in_pool) {  // nested: the pool is busy with our own caller, so run the threads in turn
    for (int t = 0; t < threads; ++t) fn(t);
    return;
  }
  GetPool().Run(threads, fn);
}

void ParallelFor(int threads, int64_t num_tasks, FunctionRef<void(int64_t task, int thread)> fn) {
  if (num_tasks <= 0) return;
  const int used = static_cast<int>(std::min<int64_t>(std::max(threads, 1), num_tasks));
  if (used == 1) {
    for (int64_t t = 0; t < num_tasks; ++t) fn(t, 0);
    return;
  }
  ParallelRun(used, [&](int thread) {
    const int64_t begin = num_tasks * thread / used;
    const int64_t end = num_tasks * (thread + 1) / used;
    for (int64_t t = begin; t < end; ++t) fn(t, thread);
  });
}

int ParallelPoolWorkers() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  return p == nullptr ? 0 : p->worker_count();
}

}  // namespace blocktune::kernels
