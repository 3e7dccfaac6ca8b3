#include "tools/ephc/Driver.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "frontends/Frontend.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

namespace eph::ephc {

// ---- source texts and carets ------------------------------------------------

void SourceCache::add(const std::string& name, std::string text) { texts_[name] = std::move(text); }

std::string_view SourceCache::text(const std::string& file) {
  auto it = texts_.find(file);
  if (it == texts_.end()) {
    std::error_code ec;
    std::string text;
    if (std::filesystem::is_regular_file(file, ec)) {
      std::ifstream in(file, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    it = texts_.emplace(file, std::move(text)).first;
  }
  return it->second;
}

std::string renderError(const Error& e, SourceCache& sources) {
  if (!e.loc.known()) return "ephc: " + e.message + "\n";
  return renderDiag(e, "", e.loc.file ? sources.text(*e.loc.file) : std::string_view());
}

// ---- session ----------------------------------------------------------------

int Session::report(const Error& e) {
  io.err << renderError(e, sources);
  return 1;
}

int Session::fail(const std::string& message) {
  io.err << "ephc: " << message << "\n";
  return 1;
}

bool Session::readInput(const std::string& path, std::string& text) {
  const std::string shown = path == "-" ? "<stdin>" : path;
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      fail("cannot read '" + path + "': it is a directory");
      return false;
    }
    file.open(path, std::ios::binary);
    if (!file) {
      fail("cannot open '" + path + "': " + std::strerror(errno));
      return false;
    }
    in = &file;
  }
  text.clear();
  std::vector<char> chunk(size_t(1) << 16);
  while (*in) {
    in->read(chunk.data(), std::streamsize(chunk.size()));
    text.append(chunk.data(), size_t(in->gcount()));
    if (text.size() > maxInputBytes) {
      text.clear();
      fail("cannot read '" + shown + "': it is longer than " + std::to_string(maxInputBytes) +
           " bytes, the most ephc reads of one input");
      return false;
    }
  }
  if (in->bad()) {
    fail("cannot read '" + shown + "': " + std::strerror(errno));
    return false;
  }
  return true;
}

std::unique_ptr<ir::Module> Session::loadModule(ir::Context& ctx, const std::string& path) {
  std::string text;
  if (!readInput(path, text)) return nullptr;
  std::string name = path == "-" ? "<stdin>" : path;
  sources.add(name, text);
  if (const frontends::Frontend* f = frontends::forFile(name)) {
    std::string diagnostics;
    auto lowered = f->compile(ctx, text, name, frontendOptions, pipeline, diagnostics);
    io.err << diagnostics;
    return lowered;
  }
  auto m = ir::parseModule(ctx, text, name);
  if (!m) {
    report(m.error());
    return nullptr;
  }
  if (Status st = ir::verify(**m); !st) {
    report(st.error());
    return nullptr;
  }
  return std::move(*m);
}

std::vector<OptionSpec> frontendOptionSpecs(bool check) {
  std::vector<OptionSpec> specs;
  for (const frontends::Frontend& f : frontends::all())
    for (const frontends::Option& o : f.options) {
      bool known = false;
      for (const OptionSpec& s : specs) known |= s.name == o.flag;
      if (!known && (o.forCheck || !check)) specs.push_back({o.flag, o.valueName, o.help});
    }
  return specs;
}

bool applyFrontendOptions(Session& s, const ParsedArgs& args, std::string_view cmd) {
  s.frontendOptions.clear();
  for (const OptionSpec& o : frontendOptionSpecs())
    if (args.has(o.name)) s.frontendOptions[std::string(o.name)] = o.valueName.empty() ? "" : args.get(o.name);
  for (const frontends::Frontend& f : frontends::all())
    if (std::string why = f.checkOptions ? f.checkOptions(s.frontendOptions) : ""; !why.empty()) {
      s.fail(std::string(cmd) + ": " + why);
      return false;
    }
  return true;
}

// ---- pass pipelines -----------------------------------------------------------

std::vector<OptionSpec> pipelineOptions() {
  return {
      {"--passes", "LIST", "run these passes in order, e.g. canonicalize,cse,dce, or a named pipeline: default, none, optimize (see 'ephc passes')"},
      {"--print-after", "NAME|all", "print the IR to stderr after pass NAME (or after every pass)", true},
      {"--time-passes", "", "report the time each pass took, on stderr"},
      {"--load-pass-plugin", "LIB.so", "load passes from a plugin shared library", true},
  };
}

const ir::Function* findEntry(Session& s, const ir::Module& m, std::string name,
                              const std::string& file, std::string_view cmd) {
  std::string c(cmd);
  if (!name.empty() && name[0] == '@') name.erase(0, 1);
  const ir::Function* f = m.lookup(name);
  if (!f) {
    std::string hosts;
    for (auto& fn : m.functions())
      if (fn->isHost()) hosts += (hosts.empty() ? "" : ", ") + ("@" + fn->name());
    s.fail(c + ": no function '@" + name + "' in '" + file + "'" +
           (hosts.empty() ? " (it has no host functions)" : " (host functions: " + hosts + ")"));
    return nullptr;
  }
  if (f->isKernel()) {
    s.fail(c + ": '@" + name +
           "' is a kernel; the entry must be a host function (kernels run through 'dispatch')");
    return nullptr;
  }
  return f;
}

std::optional<int> deviceIndexArg(Session& s, const ParsedArgs& args, std::string_view cmd) {
  if (!args.has("--device")) return -1;
  const std::string text = args.get("--device");
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || n < 0 || n > INT_MAX || errno) {
    s.fail(std::string(cmd) + ": --device wants a device number, got '" + text + "'");
    return std::nullopt;
  }
  return int(n);
}

bool checkArgCount(Session& s, const ir::Function& entry, size_t given, std::string_view cmd) {
  auto params = entry.paramTypes();
  if (given == params.size()) return true;
  std::string types;
  for (const ir::Type* t : params) types += (types.empty() ? "" : ", ") + t->str();
  s.fail(std::string(cmd) + ": '@" + entry.name() + "' takes " + std::to_string(params.size()) +
         " argument" + (params.size() == 1 ? "" : "s") + (params.empty() ? "" : " (" + types + ")") +
         ", got " + std::to_string(given) + "; give each with --arg VALUE");
  return false;
}

std::optional<std::vector<interp::RtValue>> parseEntryArgs(Session& s, const ir::Function& entry,
                                                           const std::vector<std::string>& texts,
                                                           interp::Memory& mem, std::string_view cmd) {
  if (!checkArgCount(s, entry, texts.size(), cmd)) return std::nullopt;
  auto params = entry.paramTypes();
  std::vector<interp::RtValue> values;
  for (size_t i = 0; i < params.size(); ++i) {
    auto v = interp::parseValue(texts[i], params[i], mem);
    if (!v) {
      std::string pname = entry.param(i)->name();
      s.fail(std::string(cmd) + ": bad --arg '" + texts[i] + "' for parameter " + std::to_string(i) +
             (pname.empty() ? "" : " (%" + pname + ")") + " of type '" + params[i]->str() +
             "': " + v.error().message);
      return std::nullopt;
    }
    values.push_back(std::move(*v));
  }
  return values;
}

bool loadPlugins(Session& s, const ParsedArgs& args) {
  for (const std::string& lib : args.all("--load-pass-plugin")) {
    if (Status st = passes::loadPassPlugin(lib); !st) {
      const std::string& why = st.error().message;
      s.fail(why.find(lib) != std::string::npos ? why : "cannot load pass plugin '" + lib + "': " + why);
      return false;
    }
  }
  return true;
}

bool buildPipeline(Session& s, const ParsedArgs& args, passes::PassManager& pm,
                   passes::PipelineOptions& opts, std::string_view fallback) {
  auto parsed = passes::PassManager::parse(args.has("--passes") ? args.get("--passes") : std::string(fallback));
  if (!parsed) {
    s.fail(parsed.error().message);
    return false;
  }
  pm = std::move(*parsed);
  for (const std::string& list : args.all("--print-after")) {
    for (const std::string& name : splitList(list)) {
      if (name != "all" && !passes::PassRegistry::get().lookup(name)) {
        s.fail("--print-after: unknown pass '" + name + "' (see 'ephc passes')");
        return false;
      }
      opts.printAfter.insert(name);
    }
  }
  opts.timePasses = args.has("--time-passes");
  opts.out = &s.io.err;
  s.pipeline = opts;  // for the passes a frontend runs (loadModule)
  return true;
}

bool runPipeline(Session& s, ir::Module& m, const passes::PassManager& pm,
                 const passes::PipelineOptions& opts) {
  std::vector<Error> errors;
  if (pm.run(m, opts, errors)) return true;
  for (const Error& e : errors) s.report(e);
  if (errors.empty()) s.fail("the pass pipeline failed without saying why");
  return false;
}

}  // namespace eph::ephc
