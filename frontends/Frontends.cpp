// The frontends of this build: one line each.
#include "frontends/Frontend.h"
#include "frontends/ephapax/Frontend.h"

namespace eph::frontends {

const std::vector<Frontend>& all() {
  static const std::vector<Frontend> list = {
      ephapax::frontend(),
  };
  return list;
}

const Frontend* forFile(std::string_view path) {
  for (const Frontend& f : all())
    for (std::string_view ext : f.extensions)
      if (path.size() > ext.size() && path.substr(path.size() - ext.size()) == ext) return &f;
  return nullptr;
}

}  // namespace eph::frontends
