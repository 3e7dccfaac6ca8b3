#include "ir/Diagnostics.h"

#include <mutex>
#include <set>

namespace eph {

std::string Loc::str() const {
  if (!known()) return "<unknown>";
  return (file ? *file : std::string("<input>")) + ":" + std::to_string(line) + ":" +
         std::to_string(col);
}

const std::string* internName(std::string_view name) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> names;
  std::lock_guard<std::mutex> lock(mu);
  auto it = names.find(name);
  if (it == names.end()) it = names.emplace(name).first;
  return &*it;
}

std::string Diagnostic::str() const {
  return loc.str() + ": error" + (code.empty() ? "" : "[" + code + "]") + ": " + message;
}

std::string_view sourceLine(std::string_view text, unsigned line) {
  if (line == 0) return {};
  size_t start = 0;
  for (unsigned l = 1; l < line; ++l) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  size_t end = text.find('\n', start);
  std::string_view s = text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

namespace {
// Line `line` of `source` and a caret line under bytes [col-1, col-1+len),
// each indented by two spaces; "" when the line does not exist.
std::string caretLines(std::string_view source, unsigned line, unsigned col, unsigned len) {
  if (source.empty() || line == 0 || col == 0) return {};
  // A line past the end has no text; an empty last line is still a line.
  size_t lines = 1;
  for (char c : source) lines += c == '\n';
  if (line > lines) return {};
  std::string_view text = sourceLine(source, line);
  // Show at most about 80 bytes either side of the column of a long line.
  size_t at = std::min<size_t>(col - 1, text.size());
  size_t from = at > 80 ? at - 80 : 0;
  size_t to = std::min(text.size(), at + 80);
  std::string shown = std::string(from ? "..." : "") + std::string(text.substr(from, to - from)) +
                      (to < text.size() ? "..." : "");
  size_t caret = at - from + (from ? 3 : 0);
  size_t room = to - at;
  size_t n = len == 0 ? 1 : len;
  if (n > room) n = room > 0 ? room : 1;
  std::string out, pad;
  for (size_t i = 0; i < shown.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(shown[i]);
    bool control = (c < 0x20 && c != '\t') || c == 0x7f;
    out += control ? '?' : shown[i];
    if (i < caret && (c & 0xc0) != 0x80) pad += c == '\t' ? '\t' : ' ';
  }
  return "  " + out + "\n  " + pad + "^" + std::string(n - 1, '~') + "\n";
}
}  // namespace

std::string renderDiag(const Diagnostic& d, std::string_view file, std::string_view source) {
  std::string name = d.loc.file ? *d.loc.file : std::string(file);
  std::string head = "error" + (d.code.empty() ? std::string() : "[" + d.code + "]") + ": " + d.message + "\n";
  std::string out;
  if (d.loc.known()) {
    out = name + ":" + std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": " + head;
    out += caretLines(source, d.loc.line, d.loc.col, d.len);
  } else {
    out = (name.empty() ? std::string() : name + ": ") + head;
  }
  if (!d.hint.empty()) out += "  hint: " + d.hint + "\n";
  return out;
}

}  // namespace eph
