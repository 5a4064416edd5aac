// The server's worker threads, lent to the analysis core (source::TaskRunner) for work that
// splits over cores (parsing a large file's chunks). One pool per process, started once;
// the calling thread always takes part, so runAll makes progress even when every worker is
// busy or none could be started.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "analysis/source/task_runner.h"

namespace sightline::server {

class WorkerPool final : public source::TaskRunner {
 public:
  // `workers` threads besides the callers (default: one fewer than the cores).
  explicit WorkerPool(unsigned workers = defaultWorkers());
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void runAll(size_t count, const std::function<void(size_t)>& task) override;
  size_t workerCount() const { return threads_.size(); }

  static unsigned defaultWorkers();
  // The process's pool, started on first use.
  static WorkerPool& shared();

 private:
  void workerLoop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sightline::server
