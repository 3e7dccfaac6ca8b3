// A program that uses the installed ephc libraries: it parses a small module
// (a kernel and the host function that runs it), verifies it, and runs it on
// the reference interpreter and on every other target of the installed
// build except Vulkan (which may have no device here), printing one line per
// target: "interp: 328450" (the sum of i * i + 1 for i < 100).
#include <cstdio>
#include <string>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "ir/interp/Interp.h"
#include "runtime/Device.h"

namespace {

const char* const kModule = R"(
kernel @square_plus_one(%in: buffer<u32, device, read>, %out: buffer<u32, device, write>) workgroup(64, 1, 1) {
  %i = global_id {dim = 0} : u32
  %n = buffer.len %out : u32
  %inside = lt %i, %n : bool
  if %inside {
    %x = load %in, %i : u32
    %sq = mul %x, %x : u32
    %one = const {value = 1} : u32
    %y = add %sq, %one : u32
    store %out, %i, %y
    yield
  } {
    yield
  }
  return
}

host @main() -> u32 {
  %n = const {value = 100} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %groups = const {value = 2} : u32
  %h = alloc %n : buffer<u32, host, linear>
  for %zero, %n, %one { |%i: u32|
    store %h, %i, %i
    yield
  }
  %din = alloc %n : buffer<u32, device, linear>
  %dout = alloc %n : buffer<u32, device, linear>
  h2d %din, %h
  dispatch %groups, %one, %one, %din, %dout {kernel = @square_plus_one}
  wait
  d2h %h, %dout
  %sum = for %zero, %n, %one, %zero : u32 { |%i: u32, %acc: u32|
    %v = load %h, %i : u32
    %acc2 = add %acc, %v : u32
    yield %acc2
  }
  free %h
  free %din
  free %dout
  return %sum
}
)";

}  // namespace

int main() {
  using namespace eph;
  ir::Context ctx;
  auto module = ir::parseModule(ctx, kModule, "downstream.eir");
  if (!module) {
    std::fprintf(stderr, "%s\n", module.error().str().c_str());
    return 1;
  }
  if (Status s = ir::verify(**module); !s) {
    std::fprintf(stderr, "%s\n", s.error().str().c_str());
    return 1;
  }
  for (const std::string& target : runtime::availableTargets()) {
    if (target == "vulkan") continue;
    auto device = runtime::openDevice(target);
    if (!device) {
      std::fprintf(stderr, "%s: %s\n", target.c_str(), device.error().str().c_str());
      return 1;
    }
    interp::Interpreter in(**module);
    auto results = runtime::runHost(**device, in, *(*module)->lookup("main"), {});
    if (!results) {
      std::fprintf(stderr, "%s: %s\n", target.c_str(), results.error().str().c_str());
      return 1;
    }
    std::printf("%s: %s\n", target.c_str(), interp::format((*results)[0]).c_str());
  }
  return 0;
}
