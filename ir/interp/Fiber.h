// Fibers (ucontext stacks) for the interpreter. A kernel that contains a
// barrier runs each invocation of a workgroup on its own fiber, so an
// invocation can stop at the barrier and let the others catch up. Host code
// runs on one large fiber stack so deep (bounded) recursion in interpreted
// code never overflows the caller's C++ stack.
//
// Nothing unwinds across a switch: code on a fiber reports errors by returning
// false up its own call chain, then the fiber function returns.
#pragma once

#include <cstddef>
#include <ucontext.h>

namespace eph::interp {

class Fiber {
 public:
  // Reserves a stack of `stackBytes` (plus a guard page); memory is committed
  // only as the stack grows.
  explicit Fiber(size_t stackBytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Prepares the fiber to run fn(arg) from the top of its stack on the next
  // resume(). The previous run must have finished (or never started).
  void start(void (*fn)(void*), void* arg);
  // Switches to the fiber; returns when it calls suspend() or fn returns.
  void resume();
  // Called on the fiber: switches back to whoever resumed it.
  void suspend();
  bool finished() const { return finished_; }
  bool started() const { return started_; }

 private:
  static void entry(unsigned lo, unsigned hi);
  void switchIn();

  char* mapping_ = nullptr;
  size_t mappingBytes_ = 0;
  char* stackLow_ = nullptr;  // lowest usable byte, above the guard page
  size_t stackBytes_ = 0;
  ucontext_t ctx_{}, caller_{};
  void (*fn_)(void*) = nullptr;
  void* arg_ = nullptr;
  bool started_ = false, finished_ = false;
  // Sanitizer bookkeeping for stack switches.
  void* fakeStack_ = nullptr;
  const void* callerBottom_ = nullptr;
  size_t callerSize_ = 0;
  const char* savedStackLow_ = nullptr;
};

// Bytes left on the current fiber's stack below this call, or a huge number
// when not running on a fiber (the size of a thread stack is not known).
size_t stackHeadroom();

}  // namespace eph::interp
