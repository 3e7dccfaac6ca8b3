// Builds IR from C++: an insertion point (a region, and optionally an op to
// insert before) plus helpers that create ops by name. Frontends and tests use
// it; the result is the same as parsing the equivalent text.
//
//   Builder b(ctx, fn->body());
//   Value* two = b.constInt(ctx.i32(), 2);
//   Value* sum = b.op("add", {fn->param(0), two}, {ctx.i32()});
//   b.op("return", {sum});
#pragma once

#include "ir/OpTable.h"

namespace eph::ir {

class Builder {
 public:
  Builder(Context& ctx, Region& region, Op* before = nullptr)
      : ctx_(ctx), region_(&region), before_(before) {}

  Context& context() const { return ctx_; }
  // Subsequent ops go at the end of `region` (or before `before`).
  void setInsertionPoint(Region& region, Op* before = nullptr) {
    region_ = &region;
    before_ = before;
  }
  // Location given to subsequent ops.
  void setLoc(Loc loc) { loc_ = loc; }

  // Creates an op by name; regions are added empty (fill them with a Builder).
  Op* create(std::string_view name, std::vector<Value*> operands = {},
             std::vector<const Type*> resultTypes = {}, std::map<std::string, Attr> attrs = {},
             unsigned numRegions = 0) {
    return region_->insertBefore(before_, Op::create(OpTable::get()[name], std::move(operands),
                                                     std::move(resultTypes), std::move(attrs),
                                                     numRegions, loc_));
  }
  // Like create, for ops with exactly one result: returns that result.
  Value* op(std::string_view name, std::vector<Value*> operands, const Type* resultType,
            std::map<std::string, Attr> attrs = {}) {
    return create(name, std::move(operands), {resultType}, std::move(attrs))->result(0);
  }

  Value* constInt(const Type* t, int64_t v) { return op("const", {}, t, {{"value", Attr::integer(v)}}); }
  Value* constFloat(const Type* t, double v) { return op("const", {}, t, {{"value", Attr::floating(v)}}); }
  Value* constBool(bool v) { return op("const", {}, ctx_.boolType(), {{"value", Attr::boolean(v)}}); }

 private:
  Context& ctx_;
  Region* region_;
  Op* before_;
  Loc loc_;
};

}  // namespace eph::ir
