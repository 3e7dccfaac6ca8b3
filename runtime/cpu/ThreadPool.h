// A fixed pool of worker threads for running a dispatch's workgroups. The
// calling thread takes part, so a pool of n threads has n - 1 workers. Work is
// a range [0, n) handed out in chunks through an atomic counter. After a job
// the workers poll for the next one for a while (spinUs) before they sleep,
// as OpenMP runtimes do: a model's kernels follow each other within
// microseconds, and waking sleeping threads costs tens of them per dispatch.
// A job never waits for a worker that has not started on it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace eph::runtime {

class ThreadPool {
 public:
  // threads >= 1 (the caller counts as one). loadAware false: poll whatever
  // the load (tests of the polling path).
  explicit ThreadPool(unsigned threads, unsigned spinUs = defaultSpinUs(), bool loadAware = true);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return unsigned(workers_.size()) + 1; }
  // Calls fn(begin, end) for consecutive chunks of [0, n) of at most `chunk`
  // items, on every thread, and returns when all are done. fn returns false
  // to stop handing out further chunks.
  void parallelFor(uint64_t n, uint64_t chunk, const std::function<bool(uint64_t, uint64_t)>& fn);

  // The thread count from EPH_THREADS, else the hardware's.
  static unsigned defaultThreads();
  // How long workers poll for the next job before sleeping (microseconds):
  // EPH_THREADS_SPIN_US, else 100. They do not poll while the machine's
  // load average is above its cores (other processes would lose the cores
  // the polling takes).
  static unsigned defaultSpinUs();

 private:
  void workerMain();

  struct Job {
    const std::function<bool(uint64_t, uint64_t)>* fn;
    uint64_t total, chunk;
    std::atomic<uint64_t> next{0};
    std::atomic<bool> cancelled{false};
  };
  void drain(Job& job);

  std::vector<std::thread> workers_;
  const unsigned spinUs_;
  const bool loadAware_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  // A job is published in job_ and announced by bumping generation_. The
  // caller does not wait for workers that have not started (a busy machine
  // may not run them for a while): it takes the chunks that are left
  // itself, retires the job and waits only for the workers inside it
  // (active_ counts them; a worker counts itself before it reads job_).
  std::atomic<Job*> job_{nullptr};
  std::atomic<uint64_t> generation_{0};
  std::atomic<unsigned> active_{0};
  std::atomic<bool> stop_{false};
  // Whether to poll now: spinUs_ > 0 and the load average below the cores,
  // checked every 50 ms by parallelFor.
  std::atomic<bool> polling_{false};
  std::chrono::steady_clock::time_point loadChecked_{};
};

}  // namespace eph::runtime
