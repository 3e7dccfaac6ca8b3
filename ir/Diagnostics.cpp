#include "ir/Diagnostics.h"

namespace eph {

std::string Loc::str() const {
  if (!known()) return "<unknown>";
  return (file ? *file : std::string("<input>")) + ":" + std::to_string(line) + ":" +
         std::to_string(col);
}

std::string Error::str() const { return loc.str() + ": error: " + message; }

}  // namespace eph
