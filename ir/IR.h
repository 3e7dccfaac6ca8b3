// The SSA IR: values, ops with nested regions, functions and modules.
//
// Control flow is structured: `if`, `for`, `while` and `match` are ops whose
// regions end in a terminator (`yield`, `condition`, `return`). A region is a
// single block with arguments. Every value has a use-list, so
// replaceAllUsesWith is one call. What an op *is* (its name, typing rule,
// effects, interpreter semantics) lives in its OpInfo entry (ir/OpTable.h).
#pragma once

#include <array>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/Attr.h"
#include "ir/Diagnostics.h"
#include "ir/OpId.h"
#include "ir/Types.h"

namespace eph::ir {

struct OpInfo;
class Op;
class Region;
class Function;
class Module;

struct Use {
  Op* user;
  unsigned index;  // operand index in user
};

// An SSA value: an op result or a region argument.
class Value {
 public:
  const Type* type() const { return type_; }
  void setType(const Type* t) { type_ = t; }
  // The defining op, or null for a region argument.
  Op* definingOp() const { return def_; }
  // For a region argument: its region. For a result: the region holding its op.
  Region* parentRegion() const;
  // Result number or argument number.
  unsigned index() const { return index_; }
  bool isArgument() const { return def_ == nullptr; }

  const std::vector<Use>& uses() const { return uses_; }  // in no particular order
  bool hasUses() const { return !uses_.empty(); }
  void replaceAllUsesWith(Value* other);

  // A name hint for printing (from the text form or a frontend); may be empty.
  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

 private:
  friend class Op;
  friend class Region;
  Value(const Type* t, Op* def, Region* region, unsigned index)
      : type_(t), def_(def), region_(region), index_(index) {}
  const Type* type_;
  Op* def_;
  Region* region_;
  unsigned index_;
  std::string name_;
  std::vector<Use> uses_;
};

using OpList = std::list<std::unique_ptr<Op>>;

// One operation. Create with Op::create, then insert into a region.
class Op {
 public:
  static std::unique_ptr<Op> create(const OpInfo& info, std::vector<Value*> operands,
                                    std::vector<const Type*> resultTypes,
                                    std::map<std::string, Attr> attrs = {},
                                    unsigned numRegions = 0, Loc loc = {});
  ~Op();
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  const OpInfo& info() const { return *info_; }
  std::string_view name() const;
  // The typed handle of a built-in op (OpId::Custom for a plugin's op).
  OpId id() const;
  bool is(OpId id) const { return this->id() == id; }
  const Loc& loc() const { return loc_; }
  void setLoc(Loc l) { loc_ = l; }

  // Operands.
  unsigned numOperands() const { return static_cast<unsigned>(operands_.size()); }
  Value* operand(unsigned i) const { return operands_[i]; }
  const std::vector<Value*>& operands() const { return operands_; }
  void setOperand(unsigned i, Value* v);
  void addOperand(Value* v);
  void dropAllOperands();

  // Results.
  unsigned numResults() const { return static_cast<unsigned>(results_.size()); }
  Value* result(unsigned i = 0) const { return results_[i].get(); }
  std::vector<Value*> results() const;

  // Attributes.
  const std::map<std::string, Attr>& attrs() const { return attrs_; }
  const Attr* attr(const std::string& name) const;
  void setAttr(const std::string& name, Attr a) { attrs_[name] = std::move(a); }
  void removeAttr(const std::string& name) { attrs_.erase(name); }
  // Convenience accessors; assert the attribute exists with the right kind.
  int64_t intAttr(const std::string& name) const;
  const std::string& symbolAttr(const std::string& name) const;

  // Nested regions.
  unsigned numRegions() const { return static_cast<unsigned>(regions_.size()); }
  Region& region(unsigned i) const { return *regions_[i]; }
  Region& addRegion();

  // Position.
  Region* parentRegion() const { return parent_; }
  Op* parentOp() const;            // the op whose region holds this one, or null
  Function* parentFunction() const;
  // Unlinks and destroys this op. Its results must have no uses.
  void erase();
  // Unlinks this op and returns ownership.
  std::unique_ptr<Op> unlink();
  Op* nextOp() const;
  Op* prevOp() const;

  // Deep copy. Operands found in `map` are remapped (the map is extended with
  // the clone's results and region arguments); others are kept as they are.
  std::unique_ptr<Op> clone(std::map<const Value*, Value*>& map) const;

  // Walk this op and every op nested in it, parents before children.
  template <class F> void walk(F&& f);

 private:
  friend class Region;
  friend class Value;  // replaceAllUsesWith moves its uses at once
  Op() = default;
  void addUse(unsigned i);     // operand i's use, at the end of its value's uses
  void removeUse(unsigned i);  // operand i's use, from its value's uses
  const OpInfo* info_ = nullptr;
  std::vector<Value*> operands_;
  std::vector<unsigned> useSlots_;  // where operand i's use is in operands_[i]->uses()
  std::vector<std::unique_ptr<Value>> results_;
  std::map<std::string, Attr> attrs_;
  std::vector<std::unique_ptr<Region>> regions_;
  Loc loc_;
  Region* parent_ = nullptr;
  OpList::iterator self_;
};

// A single block of ops with arguments, nested in an op or a function.
class Region {
 public:
  explicit Region(Op* parentOp = nullptr, Function* parentFn = nullptr)
      : parentOp_(parentOp), parentFn_(parentFn) {}
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region();

  Op* parentOp() const { return parentOp_; }
  Function* parentFunction() const;

  // Arguments.
  unsigned numArgs() const { return static_cast<unsigned>(args_.size()); }
  Value* arg(unsigned i) const { return args_[i].get(); }
  std::vector<Value*> args() const;
  Value* addArg(const Type* t, std::string name = {});

  // Ops, in order.
  OpList& ops() { return ops_; }
  const OpList& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  Op* front() const { return ops_.empty() ? nullptr : ops_.front().get(); }
  Op* back() const { return ops_.empty() ? nullptr : ops_.back().get(); }
  // The last op if it is a terminator, else null.
  Op* terminator() const;

  Op* append(std::unique_ptr<Op> op);
  Op* insertBefore(Op* before, std::unique_ptr<Op> op);  // before == null: append

  template <class F> void walk(F&& f) {
    for (auto it = ops_.begin(); it != ops_.end();) {
      Op* op = (it++)->get();  // f may erase op
      op->walk(f);
    }
  }

 private:
  friend class Op;
  friend class Function;
  Op* parentOp_;
  Function* parentFn_;
  std::vector<std::unique_ptr<Value>> args_;
  OpList ops_;
};

template <class F> void Op::walk(F&& f) {
  // Regions are visited after f(this); f must not erase this op's parent.
  std::vector<Region*> regs;
  for (auto& r : regions_) regs.push_back(r.get());
  f(this);
  for (Region* r : regs) r->walk(f);
}

enum class FunctionKind : uint8_t {
  Kernel,  // runs once per invocation on a device; has a workgroup size
  Device,  // callable from kernels and device functions; no recursion
  Host,    // a program of allocations, transfers and dispatches; may recurse
};
std::string_view functionKindName(FunctionKind k);

class Function {
 public:
  Function(Module* m, std::string name, FunctionKind kind, const Type* fnType, Loc loc);

  const std::string& name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }
  FunctionKind kind() const { return kind_; }
  bool isKernel() const { return kind_ == FunctionKind::Kernel; }
  bool isHost() const { return kind_ == FunctionKind::Host; }
  const Type* type() const { return type_; }
  std::span<const Type* const> paramTypes() const { return type_->members(); }
  std::span<const Type* const> resultTypes() const { return type_->results(); }
  void setType(const Type* t) { type_ = t; }
  Module* module() const { return module_; }
  const Loc& loc() const { return loc_; }

  // Parameters are the body's arguments.
  Region& body() { return body_; }
  const Region& body() const { return body_; }
  Value* param(unsigned i) const { return body_.arg(i); }

  // Kernels: invocations per workgroup in x, y, z.
  std::array<unsigned, 3> workgroupSize = {1, 1, 1};
  // Kernels: buffer parameter i is bound at binding bindingOf(i) in set 0; the
  // scalar parameters travel as push constants, in order.
  int bindingOf(unsigned paramIndex) const;

  // Free-form attributes a frontend or pass wants to keep (printed, parsed).
  std::map<std::string, Attr> attrs;

  template <class F> void walk(F&& f) { body_.walk(f); }

 private:
  Module* module_;
  std::string name_;
  FunctionKind kind_;
  const Type* type_;
  Loc loc_;
  Region body_;
};

class Module {
 public:
  explicit Module(Context& ctx) : ctx_(ctx) {}
  Context& context() const { return ctx_; }

  Function* addFunction(std::string name, FunctionKind kind, const Type* fnType, Loc loc = {});
  Function* lookup(std::string_view name) const;
  void eraseFunction(Function* f);
  const std::vector<std::unique_ptr<Function>>& functions() const { return functions_; }

  // Name of the source this module came from, for messages.
  std::string sourceName;

 private:
  Context& ctx_;
  std::vector<std::unique_ptr<Function>> functions_;
};

}  // namespace eph::ir
