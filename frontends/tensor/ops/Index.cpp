// Index ops (see Ops.h): filled by the index family.
#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor {

void addIndexOps(std::vector<OpDef>&) {}

}  // namespace eph::tensor
