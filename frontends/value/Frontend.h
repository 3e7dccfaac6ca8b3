// The Value-graph frontend (frontends/Frontend.h): `.vg` files. compile()
// parses, groups the residuals by signature and lowers them to a module whose
// host @main returns the residuals; formatRun() prints what `ephc run` got
// in FORMAT.md's JSON (or text) form.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "frontends/Frontend.h"
#include "frontends/value/Graph.h"
#include "frontends/value/Lower.h"
#include "ir/IR.h"

namespace eph::value {

// Parse + group + lower + verify; null after appending rendered errors to `diagnostics`.
std::unique_ptr<ir::Module> compileText(ir::Context& ctx, std::string_view text, const std::string& file,
                                        const LowerOptions& opts, std::string& diagnostics);
inline std::unique_ptr<ir::Module> compileText(ir::Context& ctx, std::string_view text, const std::string& file,
                                               bool f32, std::string& diagnostics) {
  LowerOptions opts;
  opts.f32 = f32;
  return compileText(ctx, text, file, opts, diagnostics);
}

// FORMAT.md's `ephc run` report for `g`, with the residuals computed by a
// target, the gradient of Σr by trainable leaf (the device gradient kernels'
// result, docs/value.md) and the number of signatures compiled. `json`: one
// JSON object, else text.
std::string runReport(const Graph& g, const std::vector<double>& residuals, const std::vector<double>& gradient,
                      size_t kernels, bool json);

frontends::Frontend frontend();

}  // namespace eph::value
