// Builds a kernel and the host program that runs it with ir::Builder,
// verifies the module, prints it, and runs it on every target this build
// has: out[i] = in[i] * in[i] + 1 over 100 elements, summed on the host.
#include <cstdint>
#include <cstdio>

#include "ir/Builder.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/interp/Interp.h"
#include "runtime/Device.h"

using namespace eph;
using ir::Builder;
using ir::Ownership;
using ir::Space;
using ir::Value;

// kernel @square_plus_one(%in, %out): out[i] = in[i] * in[i] + 1 for each i
// below the length of out.
ir::Function* buildKernel(ir::Module& m) {
  ir::Context& ctx = m.context();
  const ir::Type* u32 = ctx.u32();
  const ir::Type* params = ctx.functionType(
      {ctx.bufferType(u32, Space::Device, Ownership::Read), ctx.bufferType(u32, Space::Device, Ownership::Write)},
      {});
  ir::Function* k = m.addFunction("square_plus_one", ir::FunctionKind::Kernel, params);
  k->workgroupSize = {64, 1, 1};
  Value* in = k->param(0);
  Value* out = k->param(1);
  in->setName("in");
  out->setName("out");

  Builder b(ctx, k->body());
  Value* i = b.globalId(0);
  Value* n = b.bufferLen(out);
  b.ifOp(b.lt(i, n), {}, [&](Builder& b) {
    Value* x = b.load(in, i);
    Value* square = b.mul(x, x);
    b.store(out, i, b.add(square, b.constInt(u32, 1)));
  });
  b.ret();
  return k;
}

// host @main() -> u32: fills in[i] = i, dispatches the kernel, and returns
// the sum of out.
ir::Function* buildMain(ir::Module& m, const ir::Function& kernel) {
  ir::Context& ctx = m.context();
  const ir::Type* u32 = ctx.u32();
  ir::Function* main = m.addFunction("main", ir::FunctionKind::Host, ctx.functionType({}, {u32}));

  Builder b(ctx, main->body());
  Value* n = b.constInt(u32, 100);
  Value* zero = b.constInt(u32, 0);
  Value* one = b.constInt(u32, 1);
  Value* groups = b.constInt(u32, 2);
  Value* host = b.alloc(n, ctx.bufferType(u32, Space::Host, Ownership::Linear));
  b.forOp(zero, n, one, [&](Builder& b, Value* i, const ir::Values&) { b.store(host, i, i); });
  Value* in = b.alloc(n, ctx.bufferType(u32, Space::Device, Ownership::Linear));
  Value* out = b.alloc(n, ctx.bufferType(u32, Space::Device, Ownership::Linear));
  b.h2d(in, host);
  b.dispatch(kernel, {groups, one, one}, {in, out});
  b.wait();
  b.d2h(host, out);
  // A loop-carried sum: the body gets the carried values and returns the next ones.
  ir::Op* loop = b.forOp(zero, n, one, {zero}, [&](Builder& b, Value* i, const ir::Values& sum) {
    return b.add(sum[0], b.load(host, i));
  });
  b.free(host);
  b.free(in);
  b.free(out);
  b.ret({loop->result(0)});
  return main;
}

int main() {
  ir::Context ctx;
  ir::Module m(ctx);
  buildMain(m, *buildKernel(m));
  if (Status s = ir::verify(m); !s) {
    std::fprintf(stderr, "%s\n", s.error().str().c_str());
    return 1;
  }
  std::printf("%s", ir::print(m).c_str());

  uint32_t want = 0;
  for (uint32_t i = 0; i < 100; ++i) want += i * i + 1;
  int failures = 0;
  for (const std::string& target : runtime::availableTargets()) {
    auto device = runtime::openDevice(target);
    if (!device) {
      std::printf("%s: no device (%s)\n", target.c_str(), device.error().str().c_str());
      continue;
    }
    interp::Interpreter in(m);
    auto results = runtime::runHost(**device, in, *m.lookup("main"), {});
    if (!results) {
      std::fprintf(stderr, "%s: %s\n", target.c_str(), results.error().str().c_str());
      ++failures;
      continue;
    }
    auto got = static_cast<uint32_t>((*results)[0].i);
    std::printf("%s: %u%s\n", target.c_str(), got, got == want ? "" : " (wrong)");
    failures += got != want;
  }
  return failures == 0 ? 0 : 1;
}
