// The C++ API of the index ops (included by Tensor.h; docs/tensor.md,
// "Indexing, shaping and creation"). Attribute names and defaults are ONNX's.
#pragma once

#include <source_location>
#include <string>
#include <vector>

#include "frontends/tensor/Tensor.h"

namespace eph::tensor {

// Joins tensors of one dtype along an existing axis (shapes agree elsewhere).
Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0, EPH_TENSOR_LOC);
// Joins tensors of one shape along a new axis (unsqueeze + concat).
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0, EPH_TENSOR_LOC);
// Views of consecutive pieces along `axis` of the given sizes (which must add up to its extent).
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis = 0, EPH_TENSOR_LOC);
// `chunks` pieces of ceil(extent / chunks) along `axis`, the last smaller (ONNX Split's num_outputs).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis = 0, EPH_TENSOR_LOC);

// x repeated repeats[d] times along each axis d.
Tensor tile(const Tensor& x, std::vector<int64_t> repeats, EPH_TENSOR_LOC);
// pads = [begin_0..begin_k, end_0..end_k] (negative crops); mode "constant" (value),
// "reflect", "edge" or "wrap".
Tensor pad(const Tensor& x, std::vector<int64_t> pads, const std::string& mode = "constant", double value = 0,
           EPH_TENSOR_LOC);

// Index tensors are i32 or i64; negative indices count from the end. An index
// out of range reads 0 (gathers) or writes nothing (scatters).
Tensor gather(const Tensor& data, const Tensor& indices, int64_t axis = 0, EPH_TENSOR_LOC);
Tensor gather_elements(const Tensor& data, const Tensor& indices, int64_t axis = 0, EPH_TENSOR_LOC);
Tensor gather_nd(const Tensor& data, const Tensor& indices, int64_t batch_dims = 0, EPH_TENSOR_LOC);
// reduction: "none" (the last of duplicate indices wins), "add", "mul", "max", "min".
Tensor scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates, int64_t axis = 0,
                        const std::string& reduction = "none", EPH_TENSOR_LOC);
Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates, const std::string& reduction = "none",
                  EPH_TENSOR_LOC);
// x's slices along `axis` at the (1-D) indices: gather.
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& indices, EPH_TENSOR_LOC);
// The rows of `table` [V, D] at `ids` (any shape): [..ids.shape, D].
Tensor embedding(const Tensor& table, const Tensor& ids, EPH_TENSOR_LOC);

// on_value where the index (counted from the end when negative) equals the
// position along the new axis, off_value elsewhere.
Tensor one_hot(const Tensor& indices, int64_t depth, int64_t axis = -1, double on_value = 1, double off_value = 0,
               DType dtype = DType::F32, EPH_TENSOR_LOC);
// The upper (column - row >= k) or lower (column - row <= k) triangle of the last two axes; 0 elsewhere.
Tensor trilu(const Tensor& x, bool upper = true, int64_t k = 0, EPH_TENSOR_LOC);
Tensor tril(const Tensor& x, int64_t k = 0, EPH_TENSOR_LOC);
Tensor triu(const Tensor& x, int64_t k = 0, EPH_TENSOR_LOC);

// ONNX Resize to the output shape `sizes` (attributes in docs/tensor.md).
struct ResizeOptions {
  std::string mode = "nearest";  // "nearest", "linear", "cubic"
  std::string coordinate_transformation_mode = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  std::vector<double> scales;  // when given: the scales of the coordinate transform (one per axis)
  std::vector<double> roi;     // tf_crop_and_resize: [starts..., ends...] (normalised)
  double extrapolation_value = 0;
};
Tensor resize(const Tensor& x, Shape sizes, const ResizeOptions& options = {}, EPH_TENSOR_LOC);

// [start, start + delta, ...) up to limit (ONNX Range), computed on the device.
Tensor range(Program& p, double start, double limit, double delta = 1, DType dtype = DType::F32, EPH_TENSOR_LOC);
// Random tensors from a counter-based generator: the same bits on every target.
Tensor random_uniform(Program& p, Shape shape, DType dtype = DType::F32, double low = 0, double high = 1, int64_t seed = 0,
                      EPH_TENSOR_LOC);
Tensor random_normal(Program& p, Shape shape, DType dtype = DType::F32, double mean = 0, double scale = 1,
                     int64_t seed = 0, EPH_TENSOR_LOC);
// 1 with probability probs[i], else 0 (probs' dtype).
Tensor bernoulli(const Tensor& probs, int64_t seed = 0, EPH_TENSOR_LOC);

}  // namespace eph::tensor
