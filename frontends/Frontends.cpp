// The frontends of this build: one line each.
#include "frontends/Frontend.h"
#include "frontends/ephapax/Frontend.h"
#include "frontends/value/Frontend.h"
#ifdef EPH_HAVE_ONNX
#include "frontends/tensor/onnx/Frontend.h"
#endif

namespace eph::frontends {

const std::vector<Frontend>& all() {
  static const std::vector<Frontend> list = {
      ephapax::frontend(),
      value::frontend(),
#ifdef EPH_HAVE_ONNX
      tensor::onnx::frontend(),
#endif
  };
  return list;
}

const Frontend* forFile(std::string_view path) {
  for (const Frontend& f : all())
    for (std::string_view ext : f.extensions)
      if (path.size() > ext.size() && path.substr(path.size() - ext.size()) == ext) return &f;
  return nullptr;
}

std::vector<ErrorCodeInfo> allErrorCodes() {
  std::vector<ErrorCodeInfo> codes = irErrorCodes();
  for (const Frontend& f : all()) codes.insert(codes.end(), f.errorCodes.begin(), f.errorCodes.end());
  return codes;
}

}  // namespace eph::frontends
