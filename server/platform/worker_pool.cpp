// A small fixed pool: runAll queues one helper job per worker that could help, and every
// participant (the caller too) takes task indices from one shared counter until none are left.
#include "server/platform/worker_pool.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <system_error>

namespace sightline::server {

unsigned WorkerPool::defaultWorkers() {
  unsigned cores = std::thread::hardware_concurrency();
  return cores > 1 ? cores - 1 : 0;
}

WorkerPool& WorkerPool::shared() {
  static WorkerPool pool;
  return pool;
}

WorkerPool::WorkerPool(unsigned workers) {
  for (unsigned i = 0; i < workers; ++i) {
    try {
      threads_.emplace_back([this] { workerLoop(); });
    } catch (const std::system_error&) {
      break;  // fewer threads: the callers do the rest
    }
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::workerLoop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

void WorkerPool::runAll(size_t count, const std::function<void(size_t)>& task) {
  if (count == 0) return;
  struct Batch {
    std::atomic<size_t> next{0};
    std::mutex mutex;
    std::condition_variable done;
    size_t finished = 0;  // tasks that returned
  };
  auto batch = std::make_shared<Batch>();
  size_t total = count;
  // Helpers hold the batch and the task by reference only while tasks are left: the caller
  // waits for every task to finish before returning.
  auto drain = [batch, &task, total] {
    for (size_t i = batch->next++; i < total; i = batch->next++) {
      task(i);
      std::lock_guard<std::mutex> lock(batch->mutex);
      if (++batch->finished == total) batch->done.notify_all();
    }
  };
  size_t helpers = std::min(threads_.size(), count - 1);
  if (helpers > 0) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (size_t i = 0; i < helpers; ++i) queue_.push_back(drain);
    }
    wake_.notify_all();
  }
  drain();
  std::unique_lock<std::mutex> lock(batch->mutex);
  batch->done.wait(lock, [&] { return batch->finished == total; });
}

}  // namespace sightline::server
