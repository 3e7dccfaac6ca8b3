// Running kernels: a dispatch runs its grid of workgroups one after another.
// Within a workgroup, a kernel without barriers runs invocation by
// invocation; a kernel with a barrier (directly or in a device function it
// calls) runs each invocation on its own fiber, and a barrier suspends the
// invocation until the whole workgroup has arrived. Invocations that finish
// or stop at a different barrier while others wait are "barrier divergence",
// reported as an error. A subgroup collective is scheduled like a barrier;
// when the whole workgroup has reached it, each subgroup's results are
// computed (interp/Subgroup.h) and handed to its invocations.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "ir/interp/Exec.h"

namespace eph::interp {

class Fiber;

// Runs `kernel` over groups[0] x groups[1] x groups[2] workgroups.
Status runKernel(Memory& mem, const ir::Function& kernel, std::array<uint32_t, 3> groups,
                 std::vector<RtValue> args);

// Does f contain a barrier, directly or in a function it calls?
bool containsBarrier(const ir::Function& f);

// State shared by the workgroups of one dispatch.
struct DispatchState {
  Memory& mem;
  const ir::Function& kernel;
  std::array<uint32_t, 3> groups;
  std::vector<RtValue> args;
  bool useFibers = false;
  std::vector<std::unique_ptr<Fiber>> fibers;  // one per invocation, reused
  std::map<const ir::Op*, uint64_t> shared;     // workgroup.alloc op -> buffer
};

// One workgroup's run: its invocations, their schedule and its workgroup memory.
class Workgroup {
 public:
  Workgroup(DispatchState& d, std::array<uint32_t, 3> id);
  ~Workgroup();
  Status run();

  // Exec's hooks.
  bool barrier(Exec& ex, const ir::Op& op);
  bool collective(Exec& ex, const ir::Op& op, RtValue& out);
  uint64_t sharedBuffer(const ir::Op& allocOp);

 private:
  enum class State { Ready, AtBarrier, Done };
  struct Lane {
    Workgroup* wg = nullptr;
    Invocation inv;
    std::unique_ptr<Exec> ex;
    Fiber* fiber = nullptr;
    State state = State::Ready;
    const ir::Op* barrierOp = nullptr;
    std::vector<RtValue> collectiveIn;  // operands of the collective it waits at
    RtValue collectiveOut;
    bool ok = true;
  };
  static void laneMain(void* lane);
  bool runLane(Lane& l);
  Status runSequential();
  Status runFibers();
  void abortWaiting();
  // The results of the collective the whole workgroup waits at.
  Status runCollective(const ir::Op& op);
  std::string describe(const Lane& l) const;
  // The error of a failed invocation, saying which invocation it was.
  Error laneError(const Lane& l) const;

  DispatchState& d_;
  std::array<uint32_t, 3> id_;
  std::vector<Lane> lanes_;
  Lane* current_ = nullptr;
  bool aborting_ = false;
  std::set<const ir::Op*> fresh_;  // workgroup buffers already reset for this workgroup
};

}  // namespace eph::interp
