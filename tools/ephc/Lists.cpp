// `ephc passes` and `ephc ops`: what this build knows, one line per entry.
#include <algorithm>
#include <ostream>

#include "ir/OpTable.h"
#include "tools/ephc/Driver.h"

namespace eph::ephc {
namespace {

// "name   summary" lines with the summaries in one column.
void printTable(std::ostream& out, const std::vector<std::pair<std::string_view, std::string_view>>& rows) {
  size_t width = 0;
  for (auto& r : rows) width = std::max(width, r.first.size());
  for (auto& [name, summary] : rows)
    out << name << std::string(width - name.size() + 2, ' ') << summary << "\n";
}

}  // namespace

CommandSpec passesSpec() {
  return {
      .name = "passes",
      .summary = "List the registered passes: one line each, name and summary.",
      .description = "Passes from plugins given with --load-pass-plugin are listed too.",
      .options = {{"--load-pass-plugin", "LIB.so", "load passes from a plugin shared library", true}},
  };
}

int runPassesCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = passesSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;
  if (!loadPlugins(s, *args)) return 1;
  std::vector<std::pair<std::string_view, std::string_view>> rows;
  for (const passes::Pass& p : passes::PassRegistry::get().all()) rows.push_back({p.name, p.summary});
  printTable(s.io.out, rows);
  s.io.out << "\nNamed pipelines (--passes=NAME):\n";
  std::vector<std::string> lists;
  for (const passes::NamedPipeline& p : passes::namedPipelines()) lists.push_back(p.passes.empty() ? "(nothing)" : std::string(p.passes));
  rows.clear();
  for (size_t i = 0; i < lists.size(); ++i) rows.push_back({passes::namedPipelines()[i].name, lists[i]});
  printTable(s.io.out, rows);
  return 0;
}

CommandSpec opsSpec() {
  return {
      .name = "ops",
      .summary = "List the ops of the IR: one line each, name and summary.",
  };
}

int runOpsCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = opsSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;
  std::vector<std::pair<std::string_view, std::string_view>> rows;
  for (const ir::OpInfo* op : ir::OpTable::get().all()) rows.push_back({op->name, op->summary});
  printTable(s.io.out, rows);
  return 0;
}

}  // namespace eph::ephc
