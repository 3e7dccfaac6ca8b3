// ONNX RNN, GRU and LSTM, unrolled over the (static) sequence into tensor ops.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "frontends/tensor/Ops.h"
#include "frontends/tensor/onnx/OnnxImpl.h"

namespace eph::tensor::onnx {

namespace {

// RNN, GRU and LSTM, unrolled over the (static) sequence: one matmul of the
// whole input by W up front, then per step a matmul by R and the gates.
enum class Cell { Rnn, Gru, Lstm };

std::string activation(NodeCtx& c, const std::string& name, double alpha, double beta, Tensor x, Tensor& out) {
  DType t = x.dtype();
  if (name == "Sigmoid") out = c.op("sigmoid", {x});
  else if (name == "Tanh") out = c.op("tanh", {x});
  else if (name == "Relu") out = c.op("relu", {x});
  else if (name == "Affine") out = c.op("add", {c.op("mul", {x, c.scalar(t, alpha)}), c.scalar(t, beta)});
  else if (name == "LeakyRelu") out = c.op("where", {c.op("lt", {x, c.scalar(t, 0)}), c.op("mul", {x, c.scalar(t, alpha)}), x});
  else if (name == "ScaledTanh") out = c.op("mul", {c.op("tanh", {c.op("mul", {x, c.scalar(t, beta)})}), c.scalar(t, alpha)});
  else if (name == "HardSigmoid") out = hardSigmoid(c, x, alpha, beta);
  else if (name == "Softsign") out = c.op("softsign", {x});
  else if (name == "Softplus") out = c.op("softplus", {x});
  else return "activation '" + name + "' is not supported";
  return "";
}

std::string mapRecurrent(NodeCtx& c, Cell cell) {
  const int G = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  int64_t H = c.i("hidden_size", 0);
  std::string direction = c.s("direction", "forward");
  int dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return "direction '" + direction + "' is not supported";
  if (c.i("input_forget", 0)) return "input_forget=1 is not supported";
  Tensor X = c.in(0);
  if (X.rank() != 3) return "X must be 3-D, not " + shapeText(X.shape());
  if (c.rank(1) != 3 || c.rank(2) != 3)
    return "W and R must be 3-D, not " + shapeText(c.shape(1)) + " and " + shapeText(c.shape(2));
  bool batchFirst = c.i("layout", 0) == 1;
  if (batchFirst) X = c.op("transpose", {X}, {{"perm", Ints{1, 0, 2}}});
  int64_t S = X.shape()[0], B = X.shape()[1];
  if (H <= 0) H = c.shape(2)[2];
  if (c.present(4)) {
    Ints lens;
    std::string why;
    if (!c.ints(4, lens, why, "sequence_lens")) return why;
    for (int64_t l : lens)
      if (l != S) return "sequence_lens shorter than the sequence are not supported";
  }
  // Activations: f, g(, h) per direction.
  std::vector<std::string> acts;
  const auto* aa = c.attr("activations");
  if (aa)
    for (const auto& a : aa->strings()) acts.push_back(a);
  size_t perDir = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 2 : 3;
  if (acts.empty()) {
    for (int d = 0; d < dirs; ++d) {
      if (cell == Cell::Rnn) acts.push_back("Tanh");
      else if (cell == Cell::Gru) acts.insert(acts.end(), {"Sigmoid", "Tanh"});
      else acts.insert(acts.end(), {"Sigmoid", "Tanh", "Tanh"});
    }
  }
  if (acts.size() != perDir * size_t(dirs)) return "activations has " + std::to_string(acts.size()) + " entries";
  std::vector<double> alphas = c.floats("activation_alpha"), betas = c.floats("activation_beta");
  double clip = c.f("clip", 0);
  bool hasClip = c.has("clip");
  DType t = X.dtype();
  std::vector<Tensor> Ys, Hs, Cs;
  for (int d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    auto pick = [&](Tensor w) {  // w[d] without the direction axis
      return c.op("squeeze", {c.op("slice", {w}, {{"starts", Ints{d}}, {"ends", Ints{d + 1}}, {"axes", Ints{0}}})}, {{"axes", Ints{0}}});
    };
    Tensor W = pick(c.in(1)), R = pick(c.in(2));  // [G*H, I], [G*H, H]
    Tensor Wb, Rb;
    if (c.present(3)) {
      Tensor b = pick(c.in(3));
      Wb = c.op("slice", {b}, {{"starts", Ints{0}}, {"ends", Ints{G * H}}});
      Rb = c.op("slice", {b}, {{"starts", Ints{G * H}}, {"ends", Ints{2 * G * H}}});
    }
    Tensor h = c.present(5) ? pick(c.in(5)) : c.op("expand", {c.scalar(t, 0)}, {{"shape", Ints{B, H}}});
    Tensor cst = cell == Cell::Lstm ? (c.present(6) ? pick(c.in(6)) : c.op("expand", {c.scalar(t, 0)}, {{"shape", Ints{B, H}}})) : Tensor();
    Tensor P = cell == Cell::Lstm && c.present(7) ? pick(c.in(7)) : Tensor();
    Tensor XW = c.op("matmul", {X, c.op("transpose", {W})});  // [S, B, G*H]
    if (Wb) XW = c.op("add", {XW, Wb});
    Tensor RT = c.op("transpose", {R});  // [H, G*H]
    auto gate = [&](Tensor v, int k) { return c.op("slice", {v}, {{"starts", Ints{k * H}}, {"ends", Ints{(k + 1) * H}}, {"axes", Ints{-1}}}); };
    auto act = [&](size_t k, Tensor x, Tensor& out) {
      size_t i = size_t(d) * perDir + k;
      double al = i < alphas.size() ? alphas[i] : (acts[i] == "LeakyRelu" ? 0.01 : acts[i] == "HardSigmoid" ? 0.2 : 1.0);
      double be = i < betas.size() ? betas[i] : (acts[i] == "HardSigmoid" ? 0.5 : 0.0);
      if (hasClip) x = c.op("clip", {x, c.scalar(t, -clip), c.scalar(t, clip)});
      return activation(c, acts[i], al, be, x, out);
    };
    std::vector<Tensor> steps(static_cast<size_t>(S), Tensor());
    for (int64_t k = 0; k < S; ++k) {
      int64_t step = reverse ? S - 1 - k : k;
      Tensor xw = c.op("squeeze", {c.op("slice", {XW}, {{"starts", Ints{step}}, {"ends", Ints{step + 1}}, {"axes", Ints{0}}})}, {{"axes", Ints{0}}});
      std::string why;
      if (cell == Cell::Rnn) {
        Tensor v = c.op("add", {xw, c.op("matmul", {h, RT})});
        if (Rb) v = c.op("add", {v, Rb});
        if (!(why = act(0, v, h)).empty()) return why;
      } else if (cell == Cell::Gru) {
        Tensor hr = c.op("matmul", {h, RT});  // [B, 3H]
        if (Rb) hr = c.op("add", {hr, Rb});
        Tensor z, r, hh;
        if (!(why = act(0, c.op("add", {gate(xw, 0), gate(hr, 0)}), z)).empty()) return why;
        if (!(why = act(0, c.op("add", {gate(xw, 1), gate(hr, 1)}), r)).empty()) return why;
        Tensor hpart;
        if (c.i("linear_before_reset", 0)) {
          hpart = c.op("mul", {r, gate(hr, 2)});
        } else {
          Tensor Rh = c.op("slice", {RT}, {{"starts", Ints{2 * H}}, {"ends", Ints{3 * H}}, {"axes", Ints{1}}});
          hpart = c.op("matmul", {c.op("mul", {r, h}), Rh});
          if (Rb) hpart = c.op("add", {hpart, gate(Rb, 2)});
        }
        if (!(why = act(1, c.op("add", {gate(xw, 2), hpart}), hh)).empty()) return why;
        Tensor one1 = c.scalar(t, 1);
        h = c.op("add", {c.op("mul", {c.op("sub", {one1, z}), hh}), c.op("mul", {z, h})});
      } else {
        Tensor v = c.op("add", {xw, c.op("matmul", {h, RT})});
        if (Rb) v = c.op("add", {v, Rb});
        Tensor gi = gate(v, 0), go = gate(v, 1), gf = gate(v, 2), gc = gate(v, 3);
        if (P) {
          gi = c.op("add", {gi, c.op("mul", {gate(P, 0), cst})});
          gf = c.op("add", {gf, c.op("mul", {gate(P, 2), cst})});
        }
        Tensor i, f, cc, o, hc;
        if (!(why = act(0, gi, i)).empty() || !(why = act(0, gf, f)).empty() || !(why = act(1, gc, cc)).empty()) return why;
        cst = c.op("add", {c.op("mul", {f, cst}), c.op("mul", {i, cc})});
        if (P) go = c.op("add", {go, c.op("mul", {gate(P, 1), cst})});
        if (!(why = act(0, go, o)).empty() || !(why = act(2, cst, hc)).empty()) return why;
        h = c.op("mul", {o, hc});
      }
      steps[size_t(step)] = c.op("unsqueeze", {h}, {{"axes", Ints{0}}});
    }
    Ys.push_back(c.op("unsqueeze", {steps.size() == 1 ? steps[0] : c.op("concat", steps, {{"axis", int64_t(0)}})}, {{"axes", Ints{1}}}));
    Hs.push_back(c.op("unsqueeze", {h}, {{"axes", Ints{0}}}));
    if (cst) Cs.push_back(c.op("unsqueeze", {cst}, {{"axes", Ints{0}}}));
  }
  auto join = [&](std::vector<Tensor>& v, int64_t axis) { return v.size() == 1 ? v[0] : c.op("concat", v, {{"axis", axis}}); };
  Tensor Y = join(Ys, 1), Yh = join(Hs, 0);  // [S, dirs, B, H], [dirs, B, H]
  Tensor Yc = Cs.empty() ? Tensor() : join(Cs, 0);
  if (batchFirst) {
    Y = c.op("transpose", {Y}, {{"perm", Ints{2, 0, 1, 3}}});
    Yh = c.op("transpose", {Yh}, {{"perm", Ints{1, 0, 2}}});
    if (Yc) Yc = c.op("transpose", {Yc}, {{"perm", Ints{1, 0, 2}}});
  }
  c.outs = {Y, Yh};
  if (Yc) c.outs.push_back(Yc);
  return "";
}

}  // namespace

std::vector<OpEntry> recurrentEntries() {
  return {
    {"RNN", 7, 99, "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout", [](NodeCtx& c) { return mapRecurrent(c, Cell::Rnn); }},
    {"GRU", 7, 99, "activation_alpha,activation_beta,activations,clip,direction,hidden_size,layout,linear_before_reset", [](NodeCtx& c) { return mapRecurrent(c, Cell::Gru); }},
    {"LSTM", 7, 99, "activation_alpha,activation_beta,activations,clip,direction,hidden_size,input_forget,layout", [](NodeCtx& c) { return mapRecurrent(c, Cell::Lstm); }},
  };
}

}  // namespace eph::tensor::onnx
