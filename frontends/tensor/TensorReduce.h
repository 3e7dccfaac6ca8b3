// The C++ API of the reduce ops (included by Tensor.h).
#pragma once

#include "frontends/tensor/Program.h"

namespace eph::tensor {}  // namespace eph::tensor
