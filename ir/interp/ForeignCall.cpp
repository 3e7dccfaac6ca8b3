#include "ir/interp/ForeignCall.h"

#include <dlfcn.h>

namespace eph::interp {
namespace {
thread_local ForeignCall* innermost = nullptr;
}

Status loadForeignLibrary(const std::string& path) {
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = dlerror();
    return makeError({}, "cannot load library '" + path + "': " + (why ? why : "unknown error"));
  }
  return Status::ok();
}

void* resolveForeignSymbol(const std::string& name, std::string& why) {
  void* fn = name.empty() ? nullptr : dlsym(RTLD_DEFAULT, name.c_str());
  if (!fn) why = "extern symbol '" + name + "' is not defined (give its library with --link LIB.so)";
  return fn;
}

ForeignCallScope::ForeignCallScope(ForeignCall& call) : outer_(innermost) { innermost = &call; }
ForeignCallScope::~ForeignCallScope() { innermost = outer_; }
ForeignCall* ForeignCallScope::current() { return innermost; }

}  // namespace eph::interp
