// Runtime-owned host threads that run cnrtInvokeHostFunc callbacks. A callback may block (even
// on this API), so each running callback has its own thread: an idle worker takes the task, or a
// new worker starts. Workers are detached and park on a condition variable between tasks, so a
// callback that never returns cannot block process exit.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace mlusim::driver {

class HostFuncPool {
 public:
  void run(std::function<void()> task);
  // Lets idle workers exit; tasks not yet started are dropped.
  void stop();
  // The pool's mutex, for fork handlers (held across fork so the child sees it unlocked).
  std::mutex& mutex() { return mu_; }

 private:
  void worker();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::size_t idle_ = 0;
  bool stop_ = false;
};

}  // namespace mlusim::driver
