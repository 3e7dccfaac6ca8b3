// The pass registry, pipeline parsing, the pass runner (verify / print / time
// after each pass) and plugin loading. See passes/PassManager.h.
#include "passes/PassManager.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "ir/Printer.h"
#include "ir/Verifier.h"

namespace eph::passes {

// ---- registry --------------------------------------------------------------

PassRegistry& PassRegistry::get() {
  static PassRegistry* registry = [] {
    auto* r = new PassRegistry();
    r->add(autodiffPass());
    r->add(canonicalizePass());
    r->add(csePass());
    r->add(dcePass());
    r->add(inlinePass());
    r->add(linearityPass());
    r->add(memoryPlanPass());
    r->add(fusePass());
    r->add(monomorphizePass());
    r->add(vectorizePass());
    return r;
  }();
  return *registry;
}

bool PassRegistry::add(Pass pass) {
  if (pass.name.empty() || lookup(pass.name)) return false;
  passes_.push_back(std::move(pass));
  return true;
}

const Pass* PassRegistry::lookup(std::string_view name) const {
  for (const Pass& p : passes_)
    if (p.name == name) return &p;
  return nullptr;
}

// ---- plugins ---------------------------------------------------------------

// Errors say why, without repeating the path (callers name the plugin):
// "no such file", the loader's reason, or the missing registration function.
Status loadPassPlugin(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return makeError({}, "no such file");
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char* why = dlerror();
    return makeError({}, why ? why : "dlopen failed");
  }
  using RegisterFn = void (*)(PassRegistry&);
  dlerror();
  auto fn = reinterpret_cast<RegisterFn>(dlsym(handle, "ephRegisterPasses"));
  if (!fn) {
    dlclose(handle);
    return makeError({}, "it does not export 'ephRegisterPasses' (define it as extern \"C\" "
                         "void ephRegisterPasses(eph::passes::PassRegistry&))");
  }
  fn(PassRegistry::get());
  return Status::ok();
}

// ---- pipelines -------------------------------------------------------------

namespace {

std::string_view trim(std::string_view s) {
  auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
  return s;
}

Error unknownPass(std::string_view name) {
  return makeError({}, "unknown pass '" + std::string(name) + "' (see 'ephc passes')");
}

}  // namespace

Expected<PassManager> PassManager::parse(std::string_view pipeline) {
  PassManager pm;
  if (trim(pipeline).empty()) return pm;  // an empty pipeline runs nothing
  size_t start = 0;
  while (true) {
    size_t comma = pipeline.find(',', start);
    std::string_view name =
        trim(pipeline.substr(start, comma == std::string_view::npos ? std::string_view::npos
                                                                    : comma - start));
    if (const NamedPipeline* named = name.empty() ? nullptr : lookupPipeline(name)) {
      auto inner = parse(named->passes);
      if (!inner) return inner.error();
      for (const Pass* p : inner->passes()) pm.add(p);
    } else {
      const Pass* pass = name.empty() ? nullptr : PassRegistry::get().lookup(name);
      if (!pass) return unknownPass(name);
      pm.add(pass);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return pm;
}

// ---- running ---------------------------------------------------------------

namespace {

void printTimings(std::ostream& os, const std::vector<std::pair<std::string, double>>& times) {
  double total = 0;
  for (auto& [name, ms] : times) total += ms;
  size_t width = 5;
  for (auto& [name, ms] : times) width = std::max(width, name.size());
  os << "===-------------------------------------------------------------------------===\n";
  os << "                             Pass execution timing\n";
  os << "===-------------------------------------------------------------------------===\n";
  os << std::left << std::setw(static_cast<int>(width)) << "pass" << std::right << std::setw(12)
     << "ms" << std::setw(10) << "%" << "\n";
  auto row = [&](const std::string& name, double ms) {
    double pct = total > 0 ? 100.0 * ms / total : 0.0;
    os << std::left << std::setw(static_cast<int>(width)) << name << std::right << std::fixed
       << std::setprecision(3) << std::setw(12) << ms << std::setprecision(1) << std::setw(9)
       << pct << "%\n";
  };
  for (auto& [name, ms] : times) row(name, ms);
  row("total", total);
  os.unsetf(std::ios::floatfield);
}

// Runs `passes` in order; `changed` tells whether any of them changed the module.
bool runPipeline(const std::vector<const Pass*>& passes, ir::Module& m,
                 const PipelineOptions& opts, std::vector<Error>& errors, bool& changed) {
  std::ostream& out = opts.out ? *opts.out : std::cerr;
  bool printAll = opts.printAfter.count("all") != 0;
  std::vector<std::pair<std::string, double>> times;
  bool ok = true;
  for (const Pass* pass : passes) {
    Diagnostics diag;
    auto t0 = std::chrono::steady_clock::now();
    changed |= pass->run(m, diag);
    auto t1 = std::chrono::steady_clock::now();
    times.emplace_back(pass->name, std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (diag.failed()) {
      errors.insert(errors.end(), diag.errors.begin(), diag.errors.end());
      ok = false;
      break;
    }
    if (opts.verifyEach) {
      if (Status s = ir::verify(m); !s) {
        Error e = s.error();
        e.message = "after pass '" + pass->name + "': " + e.message;
        errors.push_back(std::move(e));
        ok = false;
        break;
      }
    }
    if (printAll || opts.printAfter.count(pass->name)) {
      out << "// -----// IR after " << pass->name << " //----- //\n" << ir::print(m);
    }
  }
  if (opts.timePasses) printTimings(out, times);
  return ok;
}

}  // namespace

bool PassManager::run(ir::Module& m, const PipelineOptions& opts,
                      std::vector<Error>& errors) const {
  bool changed = false;
  return runPipeline(passes_, m, opts, errors, changed);
}

Expected<bool> PassManager::run(ir::Module& m, const PipelineOptions& opts) const {
  std::vector<Error> errors;
  bool changed = false;
  if (!runPipeline(passes_, m, opts, errors, changed)) return errors.front();
  return changed;
}

}  // namespace eph::passes
