// A fixed pool of worker threads for running a dispatch's workgroups. The
// calling thread takes part, so a pool of n threads has n - 1 workers. Work is
// a range [0, n) handed out in chunks through an atomic counter. After a job
// the workers poll for the next one for a while (spinUs) before they sleep,
// as OpenMP runtimes do: a model's kernels follow each other within
// microseconds, and waking sleeping threads costs tens of them per dispatch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace eph::runtime {

class ThreadPool {
 public:
  // threads >= 1 (the caller counts as one).
  explicit ThreadPool(unsigned threads, unsigned spinUs = defaultSpinUs());
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
  // EPH_THREADS_SPIN_US, else 100.
  static unsigned defaultSpinUs();

 private:
  void workerMain();
  void drain();

  std::vector<std::thread> workers_;
  const unsigned spinUs_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  // A job is published by bumping generation_ (after its fields are set);
  // each worker takes part in every generation and then counts busy_ down.
  std::atomic<uint64_t> generation_{0};
  std::atomic<unsigned> busy_{0};
  std::atomic<bool> stop_{false};
  // The current job.
  const std::function<bool(uint64_t, uint64_t)>* job_ = nullptr;
  uint64_t total_ = 0, chunk_ = 1;
  std::atomic<uint64_t> next_{0};
  std::atomic<bool> cancelled_{false};
};

}  // namespace eph::runtime
