#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

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

ThreadPool::ThreadPool(unsigned threads, unsigned spinUs, bool loadAware)
    : spinUs_(spinUs), loadAware_(loadAware), polling_(spinUs > 0) {
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

void ThreadPool::drain(Job& job) {
  while (!job.cancelled.load(std::memory_order_relaxed)) {
    uint64_t begin = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (begin >= job.total) return;
    uint64_t end = std::min(job.total, begin + job.chunk);
    if (!(*job.fn)(begin, end)) job.cancelled.store(true, std::memory_order_relaxed);
  }
}

void ThreadPool::workerMain() {
  uint64_t seen = 0;
  auto ready = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
  while (true) {
    if (!pollFor(polling_.load(std::memory_order_relaxed) ? spinUs_ : 0, ready)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, ready);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    // Counted before reading job_ (both sequentially consistent, as the
    // caller's retiring store and its read of active_): a job the caller has
    // retired is never touched.
    active_.fetch_add(1, std::memory_order_seq_cst);
    if (Job* job = job_.load(std::memory_order_seq_cst)) drain(*job);
    if (active_.fetch_sub(1, std::memory_order_seq_cst) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);  // the caller checks active_ under it before sleeping
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
  if (auto now = std::chrono::steady_clock::now(); spinUs_ && loadAware_ && now - loadChecked_ > std::chrono::milliseconds(50)) {
    // Polling pays on cores this process has to itself; where other
    // processes want them too, it takes them from those processes. Our own
    // threads count in the load: below cores + 1/2 leaves room for them.
    loadChecked_ = now;
    double load = 0;
    static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    polling_.store(getloadavg(&load, 1) == 1 && load < double(cores) + 0.5, std::memory_order_relaxed);
  }
  const unsigned spin = polling_.load(std::memory_order_relaxed) ? spinUs_ : 0;
  Job job{&fn, n, chunk};
  job_.store(&job, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lock(mutex_);  // a worker about to sleep sees it, or is woken
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  drain(job);  // every chunk is taken when this returns (or the job stopped)
  job_.store(nullptr, std::memory_order_seq_cst);
  // The workers inside the job finish their chunks.
  auto finished = [&] { return active_.load(std::memory_order_seq_cst) == 0; };
  if (!pollFor(spin, finished)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, finished);
  }
}

}  // namespace eph::runtime
