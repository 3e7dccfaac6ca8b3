#include "ir/Printer.h"

#include <cctype>
#include <set>
#include <unordered_map>

#include "ir/OpTable.h"

namespace eph::ir {
namespace {

bool isNumber(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool isValidName(const std::string& s) {
  if (s.empty() || isNumber(s)) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return true;
}

class FunctionPrinter {
 public:
  FunctionPrinter(const Function& f, const PrintOptions& opts, std::string& out)
      : f_(f), opts_(opts), out_(out) {}

  void print() {
    nameValues();
    out_ += functionKindName(f_.kind());
    out_ += " @" + nameText(f_.name()) + "(";
    for (unsigned i = 0; i < f_.body().numArgs(); ++i) {
      if (i) out_ += ", ";
      out_ += ref(f_.body().arg(i)) + ": " + f_.body().arg(i)->type()->str();
    }
    out_ += ")";
    auto results = f_.resultTypes();
    if (results.size() == 1) out_ += " -> " + results[0]->str();
    if (results.size() > 1) {
      out_ += " -> (";
      for (size_t i = 0; i < results.size(); ++i) out_ += (i ? ", " : "") + results[i]->str();
      out_ += ")";
    }
    if (f_.isKernel()) {
      auto& w = f_.workgroupSize;
      out_ += " workgroup(" + std::to_string(w[0]) + ", " + std::to_string(w[1]) + ", " +
              std::to_string(w[2]) + ")";
    }
    if (!f_.attrs.empty()) out_ += " attributes " + attrDict(f_.attrs);
    if (opts_.locations && f_.loc().known()) out_ += " " + locStr(f_.loc());
    out_ += " {\n";
    printOps(f_.body(), 1);
    out_ += "}\n";
  }

 private:
  // Names: a value's own hint when valid and unused so far, else the next number.
  void nameValues() {
    std::set<std::string> used;
    unsigned next = 0;
    auto assign = [&](const Value* v) {
      std::string n = v->name();
      if (isValidName(n)) {
        std::string base = n;
        for (unsigned k = 1; used.count(n); ++k) n = base + "_" + std::to_string(k);
      } else {
        n = std::to_string(next++);
      }
      used.insert(n);
      names_[v] = n;
    };
    std::function<void(const Region&)> visit = [&](const Region& r) {
      for (unsigned i = 0; i < r.numArgs(); ++i) assign(r.arg(i));
      for (auto& op : r.ops()) {
        for (unsigned i = 0; i < op->numResults(); ++i) assign(op->result(i));
        for (unsigned i = 0; i < op->numRegions(); ++i) visit(op->region(i));
      }
    };
    visit(f_.body());
  }

  std::string ref(const Value* v) {
    auto it = names_.find(v);
    return it == names_.end() ? "%<unknown>" : "%" + it->second;
  }

  // `unsignedValue`: print an integer `value` attribute as unsigned (the
  // constant of a u64 above INT64_MAX reads as itself, not as a negative).
  static std::string attrDict(const std::map<std::string, Attr>& attrs, bool unsignedValue = false) {
    std::string s = "{";
    bool first = true;
    for (auto& [k, v] : attrs) {
      bool keyBare = isBareName(k) && !std::isdigit(static_cast<unsigned char>(k[0])) && k[0] != '.';
      s += (first ? "" : ", ") + (keyBare ? k : quoteString(k)) + " = ";
      if (unsignedValue && k == "value" && v.kind == Attr::Kind::Int)
        s += std::to_string(static_cast<uint64_t>(v.i));
      else
        s += v.str();
      first = false;
    }
    return s + "}";
  }

  static std::string locStr(const Loc& l) {
    return "loc(" + quoteString(l.file ? *l.file : "") + ":" + std::to_string(l.line) + ":" +
           std::to_string(l.col) + ")";
  }

  void indent(int depth) { out_.append(2 * depth, ' '); }

  void printOps(const Region& r, int depth) {
    for (auto& op : r.ops()) printOp(*op, depth);
  }

  void printOp(const Op& op, int depth) {
    indent(depth);
    for (unsigned i = 0; i < op.numResults(); ++i) out_ += (i ? ", " : "") + ref(op.result(i));
    if (op.numResults()) out_ += " = ";
    out_ += op.name();
    for (unsigned i = 0; i < op.numOperands(); ++i) out_ += (i ? ", " : " ") + ref(op.operand(i));
    bool unsignedValue = op.numResults() == 1 && op.result(0)->type()->isInt() &&
                         !op.result(0)->type()->isSigned();
    if (!op.attrs().empty()) out_ += " " + attrDict(op.attrs(), unsignedValue);
    for (unsigned i = 0; i < op.numResults(); ++i)
      out_ += (i ? ", " : " : ") + op.result(i)->type()->str();
    for (unsigned i = 0; i < op.numRegions(); ++i) {
      const Region& r = op.region(i);
      out_ += " {";
      if (r.numArgs()) {
        out_ += " |";
        for (unsigned a = 0; a < r.numArgs(); ++a)
          out_ += (a ? ", " : "") + ref(r.arg(a)) + ": " + r.arg(a)->type()->str();
        out_ += "|";
      }
      out_ += "\n";
      printOps(r, depth + 1);
      indent(depth);
      out_ += "}";
    }
    if (opts_.locations && op.loc().known()) out_ += " " + locStr(op.loc());
    out_ += "\n";
  }

  const Function& f_;
  const PrintOptions& opts_;
  std::string& out_;
  std::unordered_map<const Value*, std::string> names_;
};

}  // namespace

std::string print(const Function& f, const PrintOptions& opts) {
  std::string out;
  FunctionPrinter(f, opts, out).print();
  return out;
}

std::string print(const Module& m, const PrintOptions& opts) {
  std::string out;
  for (size_t i = 0; i < m.functions().size(); ++i) {
    if (i) out += "\n";
    out += print(*m.functions()[i], opts);
  }
  return out;
}

}  // namespace eph::ir
