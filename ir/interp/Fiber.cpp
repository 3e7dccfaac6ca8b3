#include "ir/interp/Fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cassert>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

#if defined(__SANITIZE_ADDRESS__)
#define EPH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EPH_ASAN 1
#endif
#endif

#ifdef EPH_ASAN
#include <sanitizer/common_interface_defs.h>
#define EPH_START_SWITCH(save, bottom, size) __sanitizer_start_switch_fiber(save, bottom, size)
#define EPH_FINISH_SWITCH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define EPH_START_SWITCH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define EPH_FINISH_SWITCH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif

namespace eph::interp {
namespace {
// Lowest usable address of the stack the current code runs on (null: unknown).
thread_local const char* tlsStackLow = nullptr;
}  // namespace

size_t stackHeadroom() {
  if (!tlsStackLow) return std::numeric_limits<size_t>::max();
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  return here > tlsStackLow ? static_cast<size_t>(here - tlsStackLow) : 0;
}

Fiber::Fiber(size_t stackBytes) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  stackBytes_ = (stackBytes + page - 1) / page * page;
  mappingBytes_ = stackBytes_ + page;
  void* m = mmap(nullptr, mappingBytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    std::fprintf(stderr, "internal error: cannot map a %zu-byte interpreter stack\n", mappingBytes_);
    std::abort();
  }
  mapping_ = static_cast<char*>(m);
  mprotect(mapping_, page, PROT_NONE);  // guard page: overflow faults instead of corrupting
  stackLow_ = mapping_ + page;
}

Fiber::~Fiber() {
  assert((!started_ || finished_) && "destroying a suspended fiber would skip its destructors");
  munmap(mapping_, mappingBytes_);
}

void Fiber::start(void (*fn)(void*), void* arg) {
  assert(!started_ || finished_);
  fn_ = fn;
  arg_ = arg;
  started_ = false;
  finished_ = false;
  getcontext(&ctx_);
  ctx_.uc_stack.ss_sp = stackLow_;
  ctx_.uc_stack.ss_size = stackBytes_;
  ctx_.uc_link = nullptr;
  auto p = reinterpret_cast<uintptr_t>(this);
  makecontext(&ctx_, reinterpret_cast<void (*)()>(&Fiber::entry), 2,
              static_cast<unsigned>(p & 0xffffffffu), static_cast<unsigned>(p >> 32));
}

void Fiber::entry(unsigned lo, unsigned hi) {
  Fiber* f = reinterpret_cast<Fiber*>((uintptr_t(hi) << 32) | lo);
  f->switchIn();
  f->fn_(f->arg_);
  f->finished_ = true;
  // Leave for good: no fake stack to keep.
  EPH_START_SWITCH(nullptr, f->callerBottom_, f->callerSize_);
  setcontext(&f->caller_);
}

void Fiber::switchIn() {
  EPH_FINISH_SWITCH(fakeStack_, &callerBottom_, &callerSize_);
}

void Fiber::resume() {
  assert(!finished_);
  started_ = true;
  savedStackLow_ = tlsStackLow;
  // Keep headroom for the switch itself and the fiber entry.
  tlsStackLow = stackLow_;
  void* callerFake = nullptr;
  EPH_START_SWITCH(&callerFake, stackLow_, stackBytes_);
  swapcontext(&caller_, &ctx_);
  EPH_FINISH_SWITCH(callerFake, nullptr, nullptr);
  tlsStackLow = savedStackLow_;
}

void Fiber::suspend() {
  tlsStackLow = savedStackLow_;
  EPH_START_SWITCH(&fakeStack_, callerBottom_, callerSize_);
  swapcontext(&ctx_, &caller_);
  switchIn();
  tlsStackLow = stackLow_;
}

}  // namespace eph::interp
