#include "host_func_pool.h"

#include <thread>
#include <utility>

namespace mlusim::driver {

void HostFuncPool::run(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_) return;
  tasks_.push_back(std::move(task));
  if (idle_ >= tasks_.size()) {
    cv_.notify_one();
    return;
  }
  lock.unlock();
  std::thread([this] { worker(); }).detach();
}

void HostFuncPool::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  tasks_.clear();
  cv_.notify_all();
}

void HostFuncPool::worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stop_) return;
    if (tasks_.empty()) {
      ++idle_;
      cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
      --idle_;
      continue;
    }
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace mlusim::driver
