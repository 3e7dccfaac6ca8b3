#include "runtime/cpu/ThreadPool.h"

#include <chrono>
#include <cstdlib>
#include <string>

namespace eph::runtime {
namespace {

unsigned envUnsigned(const char* name, unsigned fallback, long lo, long hi) {
  if (const char* env = std::getenv(name)) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*env && !*end && n >= lo && n <= hi) return unsigned(n);
  }
  return fallback;
}

// Polls `ready` for up to `us` microseconds; whether it became true. After
// the first few polls it yields between them, so that a pool with more
// threads than free cores (tests run side by side) lends its cores to the
// threads that have work.
template <class F>
bool pollFor(unsigned us, F&& ready) {
  if (us == 0) return ready();
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  for (unsigned i = 0;; ++i) {
    if (ready()) return true;
    if (i < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      continue;
    }
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::yield();
  }
}

}  // namespace

unsigned ThreadPool::defaultThreads() {
  unsigned hw = std::thread::hardware_concurrency();
  return envUnsigned("EPH_THREADS", hw ? hw : 1, 1, 4096);
}

unsigned ThreadPool::defaultSpinUs() { return envUnsigned("EPH_THREADS_SPIN_US", 100, 0, 1'000'000); }

ThreadPool::ThreadPool(unsigned threads, unsigned spinUs) : spinUs_(spinUs) {
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { workerMain(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
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
  auto ready = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
  while (true) {
    if (!pollFor(spinUs_, ready)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, ready);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    drain();
    if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);  // the caller checks busy_ under it before sleeping
      done_.notify_one();
    }
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
  // Every worker has counted the last job down (busy_ is 0): none reads
  // these fields until the generation below changes.
  job_ = &fn;
  total_ = n;
  chunk_ = chunk;
  next_.store(0, std::memory_order_relaxed);
  cancelled_.store(false, std::memory_order_relaxed);
  busy_.store(unsigned(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);  // a worker about to sleep sees it, or is woken
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  drain();
  auto finished = [&] { return busy_.load(std::memory_order_acquire) == 0; };
  if (!pollFor(spinUs_, finished)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, finished);
  }
  job_ = nullptr;
}

}  // namespace eph::runtime
