// Command-line flags for ephc's subcommands, declared as data: each subcommand
// is a CommandSpec (its options, how many files it takes, its help text), and
// parseArgs turns argv into ParsedArgs or one clear error. Help text is built
// from the same spec, so `--help` never drifts from what is accepted.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Diagnostics.h"

namespace eph::ephc {

struct OptionSpec {
  std::string_view name;       // "--passes" or "-o"
  std::string_view valueName;  // "LIST"; empty for a flag that takes no value
  std::string_view help;
  bool repeatable = false;     // may be given more than once (values accumulate)
};

struct CommandSpec {
  std::string_view name;        // "opt"
  std::string_view operands;    // "FILE", shown in the usage line
  std::string_view summary;     // one line for `ephc --help`
  std::string_view description; // paragraph(s) for `ephc CMD --help`
  std::vector<OptionSpec> options;
  unsigned minOperands = 0;
  unsigned maxOperands = 0;
};

struct ParsedArgs {
  bool help = false;                                       // --help or -h was given
  std::vector<std::string> operands;                       // non-option arguments
  std::map<std::string, std::vector<std::string>> values;  // option name -> values ("" for flags)

  bool has(std::string_view name) const { return values.count(std::string(name)) != 0; }
  // The value of a single-valued option, or `fallback` when absent.
  std::string get(std::string_view name, std::string fallback = {}) const;
  // All values of a repeatable option, in order.
  std::vector<std::string> all(std::string_view name) const;
};

// Accepts `--name=VALUE` and `--name VALUE` for options with a value, `--` to end
// options, and `-` as an operand (standard input). Errors name the option.
Expected<ParsedArgs> parseArgs(const CommandSpec& spec, std::span<const std::string> args);

// "usage: ephc opt FILE [options]" followed by the description and the options.
std::string helpText(const CommandSpec& spec);

// Splits "a,b,,c" into {"a", "b", "c"}.
std::vector<std::string> splitList(std::string_view text);

}  // namespace eph::ephc
