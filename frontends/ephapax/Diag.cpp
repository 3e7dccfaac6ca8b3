#include "frontends/ephapax/Diag.h"

namespace eph::ephapax {

const std::vector<ErrorCodeInfo>& errorCodes() {
  static const std::vector<ErrorCodeInfo> codes = {
      {"E000", "syntax error"},
      {"E001", "linear value not consumed (leak)"},
      {"E002", "linear value used after it was consumed / used twice"},
      {"E003", "value escapes its region"},
      {"E004", "linear value not consumed before its region ends"},
      {"E005", "branches disagree on what they consume"},
      {"E006", "allocation in a region that is not active"},
      {"E007", "copy of a linear value"},
      {"E008", "drop of a non-linear value"},
      {"E009", "lambda captures a linear or let! binding"},
      {"E101", "type mismatch"},
      {"E102", "annotation does not match the value's type"},
      {"E103", "unbound variable"},
      {"E104", "unknown constructor or type"},
      {"E105", "non-exhaustive match"},
      {"E106", "wrong number of arguments"},
      {"E107", "duplicate definition"},
      {"E108", "type cannot be inferred"},
      {"E109", "a numeric type parameter instantiated with another type"},
      {"E200", "effects (perform/handle) are not supported by code generation"},
      {"E201", "a construct code generation does not support"},
      {"E202", "extern call with an unsupported signature"},
      {"E203", "a recursive data type holding memory-owning values, or used in kernel code"},
      {"E210", "kernel code mentions a linear host value"},
      {"E211", "a dispatch argument's buffer element type differs from the kernel's"},
      {"E212", "a host-only operation in kernel code, or a kernel-only one in host code"},
      {"E213", "`return` not in tail position"},
      {"E214", "`var` of a linear type, or assignment to something that is not a `var`"},
      {"E215", "a function argument of GPU code is not a named function, a capture-free lambda or a launcher's own function parameter"},
      {"E216", "`.await` on something that is neither a future nor a transfer or dispatch"},
      {"E217", "dispatch of something that is not a kernel, or a grid of more than 3 dimensions"},
      {"E218", "recursion in kernel code"},
      {"E219", "a kernel parameter type that no dispatch site determines"},
      {"E220", "a kernel writes a buffer it was given as a read borrow (`&b`)"},
      {"E299", "internal error: the lowered IR is invalid"},
  };
  return codes;
}

void DiagSink::error(std::string code, Span span, std::string message, std::string hint) {
  const SourceFile* src = source(span.file);
  Loc loc{src ? internName(src->name) : nullptr, span.line, span.col};
  diags_.push_back(Diag{loc, std::move(message), std::move(code), std::move(hint), span.len});
}

void DiagSink::amend(size_t i, std::string_view prefix, std::string_view suffix) {
  diags_[i].message = std::string(prefix) + diags_[i].message + std::string(suffix);
}

uint16_t DiagSink::addSource(std::string name, std::string_view text) {
  for (size_t i = 0; i < sources_.size(); ++i)
    if (sources_[i].name == name) return static_cast<uint16_t>(i + 1);
  sources_.push_back(SourceFile{std::move(name), std::string(text)});
  return static_cast<uint16_t>(sources_.size());
}

const SourceFile* DiagSink::source(uint16_t file) const {
  return file == 0 || file > sources_.size() ? nullptr : &sources_[file - 1];
}

const SourceFile* DiagSink::sourceNamed(const std::string* name) const {
  if (name)
    for (const SourceFile& s : sources_)
      if (s.name == *name) return &s;
  return nullptr;
}

}  // namespace eph::ephapax
