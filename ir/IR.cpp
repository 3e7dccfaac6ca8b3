#include "ir/IR.h"

#include <algorithm>

#include "ir/OpTable.h"

namespace eph::ir {

// ---- Value -----------------------------------------------------------------

Region* Value::parentRegion() const { return def_ ? def_->parentRegion() : region_; }

void Value::replaceAllUsesWith(Value* other) {
  if (other == this) return;
  std::vector<Use> moved = std::move(uses_);  // every use moves at once
  uses_.clear();
  for (const Use& u : moved) {
    u.user->operands_[u.index] = other;
    u.user->addUse(u.index);
  }
}

// ---- Op --------------------------------------------------------------------

std::unique_ptr<Op> Op::create(const OpInfo& info, std::vector<Value*> operands,
                               std::vector<const Type*> resultTypes,
                               std::map<std::string, Attr> attrs, unsigned numRegions, Loc loc) {
  std::unique_ptr<Op> op(new Op());
  op->info_ = &info;
  op->loc_ = loc;
  op->attrs_ = std::move(attrs);
  for (Value* v : operands) op->addOperand(v);
  for (unsigned i = 0; i < resultTypes.size(); ++i)
    op->results_.push_back(std::unique_ptr<Value>(new Value(resultTypes[i], op.get(), nullptr, i)));
  for (unsigned i = 0; i < numRegions; ++i) op->addRegion();
  return op;
}

Op::~Op() {
  // Regions first: their ops may use this op's operands but never its results.
  regions_.clear();
  dropAllOperands();
}

std::string_view Op::name() const { return info_->name; }
OpId Op::id() const { return info_->id; }

// Uses are unordered: each op knows where its operand i's use sits in that
// value's uses (useSlots_), so that a use is removed in constant time by
// moving the value's last use into its slot. (Searching and erasing was
// quadratic for values used 10^5 times: a Value graph's sum of that many
// terms took 34 s to check.)
void Op::removeUse(unsigned i) {
  std::vector<Use>& uses = operands_[i]->uses_;
  const unsigned slot = useSlots_[i];
  assert(slot < uses.size() && uses[slot].user == this && uses[slot].index == i);
  const Use last = uses.back();
  uses[slot] = last;
  last.user->useSlots_[last.index] = slot;
  uses.pop_back();
}

void Op::addUse(unsigned i) {
  std::vector<Use>& uses = operands_[i]->uses_;
  useSlots_[i] = static_cast<unsigned>(uses.size());
  uses.push_back({this, i});
}

void Op::setOperand(unsigned i, Value* v) {
  assert(v && i < operands_.size());
  removeUse(i);
  operands_[i] = v;
  addUse(i);
}

void Op::addOperand(Value* v) {
  assert(v);
  operands_.push_back(v);
  useSlots_.push_back(0);
  addUse(static_cast<unsigned>(operands_.size() - 1));
}

void Op::dropAllOperands() {
  for (unsigned i = static_cast<unsigned>(operands_.size()); i-- > 0;) removeUse(i);
  operands_.clear();
  useSlots_.clear();
}

std::vector<Value*> Op::results() const {
  std::vector<Value*> out;
  for (auto& r : results_) out.push_back(r.get());
  return out;
}

const Attr* Op::attr(const std::string& name) const {
  auto it = attrs_.find(name);
  return it == attrs_.end() ? nullptr : &it->second;
}

int64_t Op::intAttr(const std::string& name) const {
  const Attr* a = attr(name);
  assert(a && a->kind == Attr::Kind::Int);
  return a->i;
}

const std::string& Op::symbolAttr(const std::string& name) const {
  const Attr* a = attr(name);
  assert(a && a->kind == Attr::Kind::Symbol);
  return a->s;
}

Region& Op::addRegion() {
  regions_.push_back(std::make_unique<Region>(this));
  return *regions_.back();
}

Op* Op::parentOp() const { return parent_ ? parent_->parentOp() : nullptr; }

Function* Op::parentFunction() const { return parent_ ? parent_->parentFunction() : nullptr; }

void Op::erase() {
  assert(std::none_of(results_.begin(), results_.end(),
                      [](auto& r) { return r->hasUses(); }) &&
         "erasing an op whose results are used");
  unlink();  // the returned unique_ptr destroys this op
}

std::unique_ptr<Op> Op::unlink() {
  assert(parent_);
  std::unique_ptr<Op> self = std::move(*self_);
  parent_->ops_.erase(self_);
  parent_ = nullptr;
  return self;
}

Op* Op::nextOp() const {
  auto it = std::next(self_);
  return it == parent_->ops_.end() ? nullptr : it->get();
}

Op* Op::prevOp() const {
  return self_ == parent_->ops_.begin() ? nullptr : std::prev(self_)->get();
}

std::unique_ptr<Op> Op::clone(std::map<const Value*, Value*>& map) const {
  std::vector<Value*> ops;
  for (Value* v : operands_) {
    auto it = map.find(v);
    ops.push_back(it == map.end() ? v : it->second);
  }
  std::vector<const Type*> types;
  for (auto& r : results_) types.push_back(r->type());
  auto op = create(*info_, ops, types, attrs_, 0, loc_);
  for (unsigned i = 0; i < results_.size(); ++i) {
    op->results_[i]->setName(results_[i]->name());
    map[results_[i].get()] = op->results_[i].get();
  }
  for (auto& r : regions_) {
    Region& nr = op->addRegion();
    for (unsigned i = 0; i < r->numArgs(); ++i)
      map[r->arg(i)] = nr.addArg(r->arg(i)->type(), r->arg(i)->name());
    for (auto& inner : r->ops()) nr.append(inner->clone(map));
  }
  return op;
}

// ---- Region ----------------------------------------------------------------

Region::~Region() {
  // Destroy in reverse so that uses are dropped before their definitions.
  while (!ops_.empty()) ops_.pop_back();
}

Function* Region::parentFunction() const {
  if (parentFn_) return parentFn_;
  return parentOp_ ? parentOp_->parentFunction() : nullptr;
}

std::vector<Value*> Region::args() const {
  std::vector<Value*> out;
  for (auto& a : args_) out.push_back(a.get());
  return out;
}

Value* Region::addArg(const Type* t, std::string name) {
  args_.push_back(std::unique_ptr<Value>(
      new Value(t, nullptr, this, static_cast<unsigned>(args_.size()))));
  args_.back()->setName(std::move(name));
  return args_.back().get();
}

Op* Region::terminator() const {
  Op* last = back();
  return last && last->info().has(kTerminator) ? last : nullptr;
}

Op* Region::append(std::unique_ptr<Op> op) { return insertBefore(nullptr, std::move(op)); }

Op* Region::insertBefore(Op* before, std::unique_ptr<Op> op) {
  assert(!op->parent_);
  Op* raw = op.get();
  auto pos = before ? before->self_ : ops_.end();
  assert(!before || before->parent_ == this);
  raw->self_ = ops_.insert(pos, std::move(op));
  raw->parent_ = this;
  return raw;
}

// ---- Function and Module -----------------------------------------------------

std::string_view functionKindName(FunctionKind k) {
  switch (k) {
    case FunctionKind::Kernel: return "kernel";
    case FunctionKind::Device: return "device";
    case FunctionKind::Host: return "host";
  }
  return "?";
}

Function::Function(Module* m, std::string name, FunctionKind kind, const Type* fnType, Loc loc)
    : module_(m), name_(std::move(name)), kind_(kind), type_(fnType), loc_(loc),
      body_(nullptr, this) {
  for (const Type* p : fnType->members()) body_.addArg(p);
}

int Function::bindingOf(unsigned paramIndex) const {
  if (!paramTypes()[paramIndex]->isBuffer()) return -1;
  int binding = 0;
  for (unsigned i = 0; i < paramIndex; ++i) binding += paramTypes()[i]->isBuffer();
  return binding;
}

Function* Module::addFunction(std::string name, FunctionKind kind, const Type* fnType, Loc loc) {
  functions_.push_back(std::make_unique<Function>(this, std::move(name), kind, fnType, loc));
  return functions_.back().get();
}

Function* Module::lookup(std::string_view name) const {
  for (auto& f : functions_)
    if (f->name() == name) return f.get();
  return nullptr;
}

void Module::eraseFunction(Function* f) {
  std::erase_if(functions_, [&](const std::unique_ptr<Function>& p) { return p.get() == f; });
}

}  // namespace eph::ir
