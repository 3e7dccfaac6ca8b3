#include "runtime/cpu/ThreadPool.h"

#include <cstdlib>
#include <string>

namespace eph::runtime {

unsigned ThreadPool::defaultThreads() {
  if (const char* env = std::getenv("EPH_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*env && !*end && n >= 1 && n <= 4096) return unsigned(n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? hw : 1;
}

ThreadPool::ThreadPool(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { workerMain(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::drain() {
  while (!cancelled_.load(std::memory_order_relaxed)) {
    uint64_t begin = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (begin >= total_) return;
    uint64_t end = std::min(total_, begin + chunk_);
    if (!(*job_)(begin, end)) cancelled_.store(true, std::memory_order_relaxed);
  }
}

void ThreadPool::workerMain() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    lock.unlock();
    drain();
    lock.lock();
    if (--busy_ == 0) done_.notify_one();
  }
}

void ThreadPool::parallelFor(uint64_t n, uint64_t chunk, const std::function<bool(uint64_t, uint64_t)>& fn) {
  if (n == 0) return;
  chunk = std::max<uint64_t>(chunk, 1);
  if (workers_.empty() || n <= chunk) {
    for (uint64_t b = 0; b < n; b += chunk)
      if (!fn(b, std::min(n, b + chunk))) return;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    total_ = n;
    chunk_ = chunk;
    next_.store(0);
    cancelled_.store(false);
    busy_ = unsigned(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0; });
  job_ = nullptr;
}

}  // namespace eph::runtime
