// Passes and the pass manager.
//
// A pass is a named function over a module that returns whether it changed
// anything, or fails with diagnostics. Passes are registered by name in the
// PassRegistry (built-ins at start-up, user passes from a plugin shared library
// via loadPassPlugin). A PassManager runs a pipeline parsed from a string such
// as "canonicalize,cse,dce", and gives every pass the same services: verify
// after each pass, print after selected passes, time each pass.
#pragma once

#include <functional>
#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace eph::passes {

// Where a pass reports problems. A pass that reports any error fails.
struct Diagnostics {
  std::vector<Error> errors;
  // `code` names the kind of error (docs/errors.md); a plugin's may be empty.
  void error(Loc loc, std::string message, std::string code = {}) {
    errors.push_back(Error{loc, std::move(message), std::move(code)});
  }
  bool failed() const { return !errors.empty(); }
};

struct Pass {
  std::string name;     // as written in pipelines: "cse"
  std::string summary;  // one line for `ephc passes`
  // Returns true when the module changed. Report errors through `diag`.
  std::function<bool(ir::Module& m, Diagnostics& diag)> run;
};

class PassRegistry {
 public:
  // The process-wide registry, with the built-in passes registered.
  static PassRegistry& get();
  // Fails (returns false) if the name is taken.
  bool add(Pass pass);
  const Pass* lookup(std::string_view name) const;
  const std::vector<Pass>& all() const { return passes_; }

 private:
  std::vector<Pass> passes_;
};

// A plugin is a shared library exporting
//   extern "C" void ephRegisterPasses(eph::passes::PassRegistry& registry);
// Loads it and calls that function.
Status loadPassPlugin(const std::string& path);

struct PipelineOptions {
  std::set<std::string> printAfter;  // pass names, or "all"
  bool timePasses = false;
  bool verifyEach = true;
  std::ostream* out = nullptr;  // where --print-after and --time-passes write (default std::cerr)
};

class PassManager {
 public:
  // Parses "canonicalize,cse,dce" (a name may be a named pipeline, which
  // stands for its passes); unknown names are an error naming the pass.
  static Expected<PassManager> parse(std::string_view pipeline);
  void add(const Pass* pass) { passes_.push_back(pass); }
  const std::vector<const Pass*>& passes() const { return passes_; }
  // Runs every pass in order. Stops at the first pass that fails or leaves the
  // module invalid; all of that pass's errors are returned.
  Expected<bool> run(ir::Module& m, const PipelineOptions& opts = {}) const;
  // Same, with every error of the failing pass in `errors`.
  bool run(ir::Module& m, const PipelineOptions& opts, std::vector<Error>& errors) const;

 private:
  std::vector<const Pass*> passes_;
};

// A pipeline known by name (passes/Pipelines.cpp): `--passes=default`, or a
// name inside a list (`--passes=optimize,linearity`).
struct NamedPipeline {
  std::string_view name;
  std::string_view passes;   // "canonicalize,cse,dce"; empty for none
  std::string_view summary;  // one line for `ephc passes`
};
const std::vector<NamedPipeline>& namedPipelines();
const NamedPipeline* lookupPipeline(std::string_view name);

// The built-in passes, one per file in passes/.
Pass autodiffPass();
Pass canonicalizePass();
Pass csePass();
Pass dcePass();
Pass fusePass();
Pass inlinePass();
Pass linearityPass();
Pass memoryPlanPass();
Pass monomorphizePass();
Pass vectorizePass();

}  // namespace eph::passes
