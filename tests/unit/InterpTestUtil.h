// Helpers for the interpreter tests: parse a module from .eir text, verify
// it, run one of its functions with arguments given as text, and get the
// results (or the error) back as text.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "ir/interp/Interp.h"

namespace eph::test {

class InterpTest : public ::testing::Test {
 protected:
  // Parses and verifies `text` (named test.eir); the module lives as long as the test.
  ir::Module* load(std::string_view text) {
    auto m = ir::parseModule(ctx_, text, "test.eir");
    if (!m) {
      ADD_FAILURE() << "parse error: " << m.error().str() << "\n" << text;
      return nullptr;
    }
    Status s = ir::verify(**m);
    if (!s) ADD_FAILURE() << "verify error: " << s.error().str() << "\n" << text;
    modules_.push_back(std::move(*m));
    interps_.push_back(std::make_unique<interp::Interpreter>(*modules_.back()));
    return modules_.back().get();
  }

  interp::Interpreter& interp() { return *interps_.back(); }

  // Runs @fn of the last loaded module with arguments parsed from text.
  // Returns the results formatted and joined by ", ", or "error: <Error::str()>".
  std::string run(std::string_view fn, std::vector<std::string> args = {}) {
    const ir::Function* f = modules_.back()->lookup(fn);
    if (!f) return "no function @" + std::string(fn);
    std::vector<interp::RtValue> vals;
    for (size_t i = 0; i < args.size(); ++i) {
      auto v = interp::parseValue(args[i], f->paramTypes()[i], interp().memory());
      if (!v) return "bad argument: " + v.error().message;
      vals.push_back(*v);
    }
    auto r = interp().call(*f, std::move(vals));
    if (!r) return "error: " + r.error().str();
    std::string out;
    for (size_t i = 0; i < r->size(); ++i) out += (i ? ", " : "") + interp::format((*r)[i], &interp().memory());
    return out;
  }

  // Loads `text` and runs @main.
  std::string runMain(std::string_view text, std::vector<std::string> args = {}) {
    if (!load(text)) return "load failed";
    return run("main", std::move(args));
  }

  // `%r = <op> %a, %b : <resultType>` on operands of type `type`.
  std::string binary(const std::string& op, const std::string& type, const std::string& a,
                     const std::string& b, std::string resultType = "") {
    if (resultType.empty()) resultType = type;
    return runMain("host @main(%a: " + type + ", %b: " + type + ") -> " + resultType +
                       " {\n  %r = " + op + " %a, %b : " + resultType + "\n  return %r\n}\n",
                   {a, b});
  }
  std::string compare(const std::string& op, const std::string& type, const std::string& a,
                      const std::string& b) {
    return binary(op, type, a, b, "bool");
  }
  // `%r = <op> %a : <resultType>`.
  std::string unary(const std::string& op, const std::string& type, const std::string& a,
                    std::string resultType = "") {
    if (resultType.empty()) resultType = type;
    return runMain("host @main(%a: " + type + ") -> " + resultType + " {\n  %r = " + op +
                       " %a : " + resultType + "\n  return %r\n}\n",
                   {a});
  }

  ir::Context ctx_;

 private:
  std::vector<std::unique_ptr<ir::Module>> modules_;
  std::vector<std::unique_ptr<interp::Interpreter>> interps_;
};

}  // namespace eph::test
