// Parallel: the one persistent thread pool every kernel runs its threads on. Workers are
// std::threads created on first use and kept asleep between calls, so a dispatch costs a
// futex wake (a few microseconds) instead of a thread creation (tens of microseconds), which
// matters because the tuner also times small problems.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace blocktune::kernels {

// A non-owning reference to a callable; cheap to pass by value, valid for the call only.
template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
      FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): implicit like std::function
      : object_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

// Runs fn(thread) for thread = 0 .. threads-1 concurrently and returns when all have finished.
// Thread 0 is the calling thread. threads <= 1 calls fn(0) inline with no synchronisation.
// Calls from different threads are serialised; a call made from inside a pool task (nested)
// runs its threads one after another on the calling thread instead of deadlocking. After
// fork() the child gets a fresh pool (the parent's workers do not exist there).
void ParallelRun(int threads, FunctionRef<void(int thread)> fn);

// Splits tasks 0 .. num_tasks-1 into `threads` contiguous ranges (sizes differ by at most one)
// and runs fn(task, thread) for each task; never starts more threads than tasks.
void ParallelFor(int threads, int64_t num_tasks, FunctionRef<void(int64_t task, int thread)> fn);

// Number of worker threads the pool has created so far (for tests).
int ParallelPoolWorkers();

}  // namespace blocktune::kernels
