// ONNX ops of the ai.onnx.preview.training domain (Adagrad, Momentum and
// Nesterov, Adam): one optimizer step over n tensors, composed of tensor ops.
// Their entries are named with the domain (Import.cpp looks them up so).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "frontends/tensor/Ops.h"
#include "frontends/tensor/onnx/OnnxImpl.h"

namespace eph::tensor::onnx {

namespace {

// ---- ai.onnx.preview.training: one optimizer step over n tensors --------------------
// Inputs R (learning rate, a scalar), T (the step count, an i64 scalar), then
// n tensors each of X, G and the optimizer's state; outputs the new X and
// state, n each (the formulas of the ONNX operator specs).

// The n tensors of input group `g` (0: X, 1: G, 2...: state), or why the count does not fit.
std::string groups(NodeCtx& c, size_t count, size_t& n) {
  if (c.numInputs() < 2 + count || (c.numInputs() - 2) % count != 0)
    return "wants R, T and " + std::to_string(count) + " groups of n tensors, got " + std::to_string(c.numInputs()) +
           " inputs";
  n = (c.numInputs() - 2) / count;
  return "";
}

std::string mapAdagrad(NodeCtx& c) {
  size_t n;
  if (std::string why = groups(c, 3, n); !why.empty()) return why;
  std::vector<Tensor> xs, hs;
  for (size_t k = 0; k < n; ++k) {
    Tensor x = c.in(2 + k), g = c.in(2 + n + k), h = c.in(2 + 2 * n + k);
    DType t = x.dtype();
    Tensor steps = c.cast(c.in(1), t);
    Tensor r = c.op("div", {c.cast(c.in(0), t), c.op("add", {c.scalar(t, 1), c.op("mul", {steps, c.scalar(t, c.f("decay_factor", 0))})})});
    Tensor gr = c.op("add", {c.op("mul", {x, c.scalar(t, c.f("norm_coefficient", 0))}), g});
    Tensor hNew = c.op("add", {h, c.op("mul", {gr, gr})});
    Tensor adaptive = c.op("add", {c.op("sqrt", {hNew}), c.scalar(t, c.f("epsilon", 1e-6))});
    xs.push_back(c.op("sub", {x, c.op("div", {c.op("mul", {r, gr}), adaptive})}));
    hs.push_back(hNew);
  }
  c.outs = xs;
  c.outs.insert(c.outs.end(), hs.begin(), hs.end());
  return "";
}

std::string mapMomentum(NodeCtx& c) {
  size_t n;
  if (std::string why = groups(c, 3, n); !why.empty()) return why;
  std::string mode = c.s("mode", "standard");
  if (mode != "standard" && mode != "nesterov") return "mode '" + mode + "' is not 'standard' or 'nesterov'";
  std::vector<Tensor> xs, vs;
  for (size_t k = 0; k < n; ++k) {
    Tensor x = c.in(2 + k), g = c.in(2 + n + k), v = c.in(2 + 2 * n + k);
    DType t = x.dtype();
    Tensor lr = c.cast(c.in(0), t);
    double alpha = c.f("alpha", 0), beta = c.f("beta", 0);
    Tensor gr = c.op("add", {c.op("mul", {x, c.scalar(t, c.f("norm_coefficient", 0))}), g});
    // β on every step but the first (T = 0), where the velocity takes G whole.
    Tensor b = c.op("where", {c.op("gt", {c.in(1), c.scalar(c.dtype(1), 0)}), c.scalar(t, beta), c.scalar(t, 1)});
    Tensor vNew = c.op("add", {c.op("mul", {v, c.scalar(t, alpha)}), c.op("mul", {b, gr})});
    Tensor step = mode == "standard" ? vNew : c.op("add", {gr, c.op("mul", {vNew, c.scalar(t, alpha)})});
    xs.push_back(c.op("sub", {x, c.op("mul", {lr, step})}));
    vs.push_back(vNew);
  }
  c.outs = xs;
  c.outs.insert(c.outs.end(), vs.begin(), vs.end());
  return "";
}

// (node/test_adam_multiple fails: its expected outputs use epsilon 1e-2,
// which its node does not set; ONNX's test generator passes it only to its
// reference function. With 1e-2 our X1 is its 0.759136.)
std::string mapAdam(NodeCtx& c) {
  size_t n;
  if (std::string why = groups(c, 4, n); !why.empty()) return why;
  std::vector<Tensor> xs, vs, hs;
  for (size_t k = 0; k < n; ++k) {
    Tensor x = c.in(2 + k), g = c.in(2 + n + k), v = c.in(2 + 2 * n + k), h = c.in(2 + 3 * n + k);
    DType t = x.dtype();
    double alpha = c.f("alpha", 0.9), beta = c.f("beta", 0.999);
    Tensor lr = c.cast(c.in(0), t), steps = c.cast(c.in(1), t);
    Tensor gr = c.op("add", {c.op("mul", {x, c.scalar(t, c.f("norm_coefficient", 0))}), g});
    Tensor vNew = c.op("add", {c.op("mul", {v, c.scalar(t, alpha)}), c.op("mul", {gr, c.scalar(t, 1 - alpha)})});
    Tensor hNew = c.op("add", {c.op("mul", {h, c.scalar(t, beta)}), c.op("mul", {c.op("mul", {gr, gr}), c.scalar(t, 1 - beta)})});
    Tensor hSqrt = c.op("add", {c.op("sqrt", {hNew}), c.scalar(t, c.f("epsilon", 1e-6))});
    // Bias correction after the first step: R·sqrt(1 − β^T) / (1 − α^T).
    Tensor corrected = c.op("div", {c.op("mul", {lr, c.op("sqrt", {c.op("sub", {c.scalar(t, 1), c.op("pow", {c.scalar(t, beta), steps})})})}),
                                    c.op("sub", {c.scalar(t, 1), c.op("pow", {c.scalar(t, alpha), steps})})});
    Tensor r = c.op("where", {c.op("gt", {c.in(1), c.scalar(c.dtype(1), 0)}), corrected, lr});
    Tensor xNew = c.op("sub", {x, c.op("mul", {r, c.op("div", {vNew, hSqrt})})});
    xs.push_back(c.op("mul", {xNew, c.scalar(t, 1 - c.f("norm_coefficient_post", 0))}));
    vs.push_back(vNew);
    hs.push_back(hNew);
  }
  c.outs = xs;
  c.outs.insert(c.outs.end(), vs.begin(), vs.end());
  c.outs.insert(c.outs.end(), hs.begin(), hs.end());
  return "";
}

}  // namespace

std::vector<OpEntry> trainingEntries() {
  return {
    // Domain ai.onnx.preview.training: named with the domain, at its opsets (Import.cpp).
    {"ai.onnx.preview.training.Adagrad", 1, 99, "decay_factor,epsilon,norm_coefficient", mapAdagrad},
    {"ai.onnx.preview.training.Momentum", 1, 99, "alpha,beta,mode,norm_coefficient", mapMomentum},
    {"ai.onnx.preview.training.Adam", 1, 99, "alpha,beta,epsilon,norm_coefficient,norm_coefficient_post", mapAdam},
  };
}

}  // namespace eph::tensor::onnx
