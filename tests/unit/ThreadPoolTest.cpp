// runtime/cpu/ThreadPool: every item of every job runs exactly once, on
// several threads, whether the workers are polling for the next job or
// asleep when it comes (and with more threads than this machine has cores:
// the caller takes the chunks of workers that do not get to run); a job
// that stops early stops handing out chunks and leaves the pool usable.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "runtime/cpu/ThreadPool.h"

namespace eph::test {
namespace {

using runtime::ThreadPool;

void runJobs(unsigned spinUs, bool pauses) {
  ThreadPool pool(4, spinUs, /*loadAware=*/false);  // poll even on a busy machine
  ASSERT_EQ(pool.size(), 4u);
  constexpr uint64_t kItems = 1000;
  constexpr int kJobs = 300;
  std::vector<std::atomic<int>> count(kItems);
  std::mutex m;
  std::set<std::thread::id> threads;
  for (int j = 0; j < kJobs; ++j) {
    pool.parallelFor(kItems, 7, [&](uint64_t b, uint64_t e) {
      EXPECT_LE(e, kItems);
      EXPECT_LE(e - b, 7u);
      for (uint64_t i = b; i < e; ++i) count[i].fetch_add(1, std::memory_order_relaxed);
      if (b % 70 == 0) {
        std::lock_guard<std::mutex> lock(m);
        threads.insert(std::this_thread::get_id());
      }
      return true;
    });
    // Past the polling time now and then: the workers are asleep when the next job comes.
    if (pauses && j % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (uint64_t i = 0; i < kItems; ++i) ASSERT_EQ(count[i].load(), kJobs) << "item " << i;
  EXPECT_GE(threads.size(), 1u);
}

TEST(ThreadPool, EveryItemOnceWhileTheWorkersPoll) { runJobs(20'000, false); }
TEST(ThreadPool, EveryItemOnceWhenTheWorkersSleep) { runJobs(0, true); }
TEST(ThreadPool, EveryItemOncePollingAndSleeping) { runJobs(200, true); }

TEST(ThreadPool, AStoppedJobHandsOutNoMoreChunks) {
  ThreadPool pool(3, 100, false);
  std::atomic<uint64_t> ran{0};
  pool.parallelFor(100'000, 1, [&](uint64_t b, uint64_t) {
    ran.fetch_add(1);
    return b < 10;  // stop after the first chunks
  });
  // Each thread finishes the chunk it holds: a handful more than 11, far from all.
  EXPECT_GE(ran.load(), 11u);
  EXPECT_LT(ran.load(), 1000u);
  std::atomic<uint64_t> sum{0};
  pool.parallelFor(100, 3, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) sum.fetch_add(i);
    return true;
  });
  EXPECT_EQ(sum.load(), 4950u);
}

}  // namespace
}  // namespace eph::test
