// Reduce ops (see Ops.h): filled by the reduce family.
#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor {

void addReduceOps(std::vector<OpDef>&) {}

}  // namespace eph::tensor
