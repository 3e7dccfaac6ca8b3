#include "frontends/tensor/Tensor.h"

namespace eph::tensor {}  // namespace eph::tensor
