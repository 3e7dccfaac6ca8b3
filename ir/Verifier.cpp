#include "ir/Verifier.h"

#include "ir/OpTable.h"

namespace eph::ir {

// First version: per-op typing rules only. Dominance, terminators and function
// rules are added next (see Verifier.h).
Status verify(const Module& m) {
  for (auto& f : m.functions()) {
    std::optional<Error> err;
    f->walk([&](Op* op) {
      if (err || !op->info().verify) return;
      std::string msg = op->info().verify(*op);
      if (!msg.empty()) err = Error{op->loc(), "'" + std::string(op->name()) + "': " + msg};
    });
    if (err) return *err;
  }
  return Status::ok();
}

}  // namespace eph::ir
