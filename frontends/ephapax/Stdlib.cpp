// The standard library modules compiled into ephc (see Stdlib.h). The
// sources come from StdlibSources.inc, which frontends/ephapax/CMakeLists.txt
// generates from stdlib/*.eph: one `{"name", R"...(source)..."}` entry each.
#include "frontends/ephapax/Stdlib.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "frontends/ephapax/Parser.h"

namespace eph::ephapax {

namespace {

const std::vector<StdlibModule> kBuiltIn = {
#include "StdlibSources.inc"
};

// kBuiltIn, with the modules EPH_STDLIB_DIR overrides read from there.
std::vector<StdlibModule> loadModules() {
  std::vector<StdlibModule> modules = kBuiltIn;
  const char* dir = std::getenv("EPH_STDLIB_DIR");
  if (!dir || !*dir) return modules;
  static std::vector<std::string> texts;  // owns the overriding sources
  texts.reserve(modules.size());
  for (StdlibModule& m : modules) {
    std::ifstream in(std::string(dir) + "/" + std::string(m.name) + ".eph", std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    texts.push_back(ss.str());
    m.source = texts.back();
  }
  return modules;
}

}  // namespace

const std::vector<StdlibModule>& stdlibModules() {
  static const std::vector<StdlibModule> modules = loadModules();
  return modules;
}

namespace {

const StdlibModule* findIn(const std::vector<StdlibModule>& modules, std::string_view name) {
  for (const StdlibModule& m : modules)
    if (m.name == name) return &m;
  return nullptr;
}

// The names `p` declares: functions, types, constants and constructors.
std::set<std::string> declaredNames(const Program& p) {
  std::set<std::string> names;
  for (const auto& f : p.fns) names.insert(f->name);
  for (const auto& t : p.types) {
    names.insert(t->name);
    for (const CtorDecl& c : t->ctors) names.insert(c.name);
  }
  for (const auto& c : p.consts) names.insert(c->name);
  return names;
}

// Appends the declarations of `lib` that `p` does not declare yet.
void appendNew(Program& p, Program& lib) {
  std::set<std::string> have = declaredNames(p);
  for (auto& f : lib.fns)
    if (!have.count(f->name)) p.fns.push_back(std::move(f));
  for (auto& t : lib.types) {
    bool clash = have.count(t->name) > 0;
    for (const CtorDecl& c : t->ctors) clash = clash || have.count(c.name) > 0;
    if (!clash) p.types.push_back(std::move(t));
  }
  for (auto& c : lib.consts)
    if (!have.count(c->name)) p.consts.push_back(std::move(c));
}

}  // namespace

const StdlibModule* findStdlibModule(std::string_view name) { return findIn(stdlibModules(), name); }

bool mergeStdlibImports(Program& p, DiagSink& diags) { return mergeStdlibImports(p, diags, stdlibModules()); }

bool mergeStdlibImports(Program& p, DiagSink& diags, const std::vector<StdlibModule>& modules) {
  std::set<std::string> merged;
  bool ok = true;
  // p.imports grows as modules import others; index, do not iterate.
  for (size_t i = 0; i < p.imports.size(); ++i) {
    std::string name = p.imports[i];
    const StdlibModule* m = findIn(modules, name);
    if (!m || merged.count(name) || name == p.moduleName) continue;
    merged.insert(name);
    // The module's spans carry its DiagSink source id, so diagnostics in it
    // (here and in the checker) render as NAME.eph:LINE:COL.
    size_t before = diags.size();
    Program lib = parseProgram(m->source, diags, diags.addSource(name + ".eph", m->source));
    if (diags.size() != before) {
      for (size_t i = before; i < diags.size(); ++i)
        diags.amend(i, "in standard library module `" + name + "`: ", " (a bug in the library)");
      ok = false;
      continue;
    }
    for (const std::string& dep : lib.imports)
      if (findIn(modules, dep) && std::find(p.imports.begin(), p.imports.end(), dep) == p.imports.end())
        p.imports.push_back(dep);
    appendNew(p, lib);
  }
  return ok;
}

}  // namespace eph::ephapax
