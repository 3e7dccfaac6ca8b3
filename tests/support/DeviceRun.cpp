#include "tests/support/DeviceRun.h"

namespace eph::test {

KernelArg KernelArg::ofBuffer(const ir::Type* elem, std::vector<interp::RtValue> elems) {
  KernelArg a;
  a.isBuffer = true;
  a.buffer.elemType = elem;
  a.buffer.space = ir::Space::Host;
  a.buffer.written.assign(elems.size(), true);
  a.buffer.elems = std::move(elems);
  return a;
}

KernelArg KernelArg::ofScalar(interp::RtValue v) {
  KernelArg a;
  a.scalar = std::move(v);
  return a;
}

Expected<std::vector<interp::BufferData>> runKernelOn(runtime::Device& dev, const ir::Module& m,
                                                      const std::string& kernel, std::array<uint32_t, 3> groups,
                                                      const std::vector<KernelArg>& args) {
  const ir::Function* k = m.lookup(kernel);
  if (!k) return Error{{}, "no kernel @" + kernel};
  if (Status s = dev.prepare(m); !s) return s.error();
  std::vector<interp::RtValue> values;
  std::vector<uint64_t> handles;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].isBuffer) {
      values.push_back(args[i].scalar);
      continue;
    }
    auto h = dev.alloc(k->paramTypes()[i], args[i].buffer.elems.size(), {});
    if (!h) return h.error();
    if (Status s = dev.upload(*h, args[i].buffer, {}); !s) return s.error();
    interp::RtValue v;
    v.type = k->paramTypes()[i];
    v.buffer = *h;
    values.push_back(v);
    handles.push_back(*h);
  }
  if (Status s = dev.dispatch(*k, groups, values, {}); !s) return s.error();
  if (Status s = dev.wait({}); !s) return s.error();
  std::vector<interp::BufferData> out;
  size_t next = 0;
  for (const KernelArg& a : args) {
    if (!a.isBuffer) continue;
    interp::BufferData b;
    b.elemType = a.buffer.elemType;
    b.elems.resize(a.buffer.elems.size());
    b.written.assign(a.buffer.elems.size(), false);
    if (Status s = dev.download(b, handles[next], {}); !s) return s.error();
    if (Status s = dev.free(handles[next++], {}); !s) return s.error();
    out.push_back(std::move(b));
  }
  return out;
}

std::string formatBuffer(const interp::BufferData& b) {
  std::string s = "[";
  for (size_t i = 0; i < b.elems.size(); ++i) s += (i ? ", " : "") + interp::format(b.elems[i]);
  return s + "]";
}

HostRun runMainOn(runtime::Device& dev, const ir::Module& m) {
  HostRun r;
  r.interp = std::make_unique<interp::Interpreter>(m);
  r.results = runtime::runHost(dev, *r.interp, *m.lookup("main"), {});
  return r;
}

}  // namespace eph::test
