#include "tools/ephc/Args.h"

#include <algorithm>

namespace eph::ephc {

std::string ParsedArgs::get(std::string_view name, std::string fallback) const {
  auto it = values.find(std::string(name));
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

std::vector<std::string> ParsedArgs::all(std::string_view name) const {
  auto it = values.find(std::string(name));
  return it == values.end() ? std::vector<std::string>{} : it->second;
}

namespace {

Error argError(const CommandSpec& spec, std::string message) {
  return makeError({}, std::string(spec.name) + ": " + message + " (see 'ephc " +
                           std::string(spec.name) + " --help')");
}

const OptionSpec* findOption(const CommandSpec& spec, std::string_view name) {
  for (const OptionSpec& o : spec.options)
    if (o.name == name) return &o;
  return nullptr;
}

}  // namespace

Expected<ParsedArgs> parseArgs(const CommandSpec& spec, std::span<const std::string> args) {
  ParsedArgs out;
  bool optionsDone = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (optionsDone || a == "-" || a.empty() || a[0] != '-') {
      out.operands.push_back(a);
      continue;
    }
    if (a == "--") {
      optionsDone = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      out.help = true;
      continue;
    }
    size_t eq = a.find('=');
    std::string name = a.substr(0, eq);
    const OptionSpec* opt = findOption(spec, name);
    if (!opt) return argError(spec, "unknown option '" + name + "'");
    std::string value;
    if (opt->valueName.empty()) {
      if (eq != std::string::npos) return argError(spec, "option '" + name + "' takes no value");
    } else if (eq != std::string::npos) {
      value = a.substr(eq + 1);
      if (value.empty()) return argError(spec, "option '" + name + "' needs a value after '='");
    } else {
      if (i + 1 >= args.size())
        return argError(spec, "option '" + name + "' needs a value (" + std::string(opt->valueName) + ")");
      value = args[++i];
    }
    auto& slot = out.values[name];
    if (!slot.empty() && !opt->repeatable) return argError(spec, "option '" + name + "' is given twice");
    slot.push_back(value);
  }
  if (out.help) return out;
  if (out.operands.size() < spec.minOperands)
    return argError(spec, spec.minOperands == 1 ? "no input file" : "too few arguments");
  if (out.operands.size() > spec.maxOperands)
    return argError(spec, "unexpected argument '" + out.operands[spec.maxOperands] + "'");
  return out;
}

std::string helpText(const CommandSpec& spec) {
  std::string s = "usage: ephc " + std::string(spec.name);
  if (!spec.operands.empty()) s += " " + std::string(spec.operands);
  s += " [options]\n\n" + std::string(spec.summary) + "\n";
  if (!spec.description.empty()) s += "\n" + std::string(spec.description) + "\n";
  s += "\noptions:\n";
  std::vector<std::pair<std::string, std::string_view>> rows;
  for (const OptionSpec& o : spec.options) {
    std::string left(o.name);
    if (!o.valueName.empty()) left += (o.name.size() == 2 ? " " : "=") + std::string(o.valueName);
    rows.push_back({left, o.help});
  }
  rows.push_back({"-h, --help", "show this help"});
  size_t width = 0;
  for (auto& r : rows) width = std::max(width, r.first.size());
  for (auto& [left, help] : rows)
    s += "  " + left + std::string(width - left.size() + 2, ' ') + std::string(help) + "\n";
  return s;
}

std::vector<std::string> splitList(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace eph::ephc
