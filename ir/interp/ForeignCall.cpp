#include "ir/interp/ForeignCall.h"

namespace eph::interp {
namespace {
thread_local ForeignCall* innermost = nullptr;
}

ForeignCallScope::ForeignCallScope(ForeignCall& call) : outer_(innermost) { innermost = &call; }
ForeignCallScope::~ForeignCallScope() { innermost = outer_; }
ForeignCall* ForeignCallScope::current() { return innermost; }

}  // namespace eph::interp
