#include "frontends/tensor/Run.h"

#include <climits>
#include <cstring>

#include "frontends/tensor/Tuning.h"
#include "ir/Layout.h"
#include "ir/interp/Interp.h"
#include "runtime/Device.h"

namespace eph::tensor {

namespace {

interp::RtValue toBuffer(interp::Memory& mem, ir::Context& ctx, const HostTensor& h) {
  const ir::Type* t = irType(ctx, h.dtype);
  std::vector<interp::RtValue> elems(size_t(std::max<int64_t>(h.size(), 1)));
  for (int64_t i = 0; i < h.size(); ++i)
    elems[size_t(i)] = t->isFloat() ? interp::RtValue::ofFloat(t, h.get(i))
                     : t->isBool() ? interp::RtValue::ofBool(t, h.getInt(i) != 0)
                                   : interp::RtValue::ofInt(t, h.getInt(i));
  if (h.size() == 0) elems[0] = t->isFloat() ? interp::RtValue::ofFloat(t, 0) : t->isBool() ? interp::RtValue::ofBool(t, false) : interp::RtValue::ofInt(t, 0);
  interp::RtValue v;
  v.type = ctx.bufferType(t, ir::Space::Host, ir::Ownership::Read);
  v.buffer = mem.adopt(t, ir::Space::Host, std::move(elems));
  return v;
}

// One input per input of `p`, each of the dtype and shape it declared; the
// dynamic first dimension's extent N (that of the first input with it, which
// every other must have too; 0 when none has it).
Expected<int64_t> checkInputs(const Program& p, const std::vector<HostTensor>& inputs) {
  if (inputs.size() != p.inputs().size())
    return Error{{}, "the program has " + std::to_string(p.inputs().size()) + " inputs, but " +
                         std::to_string(inputs.size()) + " were given"};
  int64_t n = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node& declared = p.node(p.inputs()[i]);
    if (n < 0 && isDynamic(declared.shape) && !inputs[i].shape.empty()) n = inputs[i].shape[0];
    if (Status st = checkInput(declared, inputs[i], std::max<int64_t>(n, 0)); !st) return st.error();
  }
  // Kernels index a buffer of N rows with 32 bits (Lower.cpp), and N is a u32.
  if (n > int64_t(INT32_MAX)) return Error{{}, "N = " + std::to_string(n) + " rows: at most 2147483647"};
  for (uint32_t id = 0; n > 0 && id < p.nodes().size(); ++id)
    if (isDynamic(p.node(id).shape) && rowElements(p.node(id).shape) * n > int64_t(INT32_MAX))
      return Error{{}, p.node(id).site + ": " + p.node(id).op + ": with N = " + std::to_string(n) + ", a tensor of shape " +
                           shapeText(p.node(id).shape) + " would have more than 2147483647 elements, which kernels index with 32 bits"};
  return std::max<int64_t>(n, 0);
}

// @main's last argument for a program with the dynamic first dimension.
interp::RtValue extentArg(ir::Context& ctx, int64_t n) { return interp::RtValue::ofInt(ctx.u32(), n); }

// A HostTensor's elements in the storage layout of ir/Layout.h, and back:
// a copy where the two agree (every dtype but bool, which devices store
// as u32), else element by element.
std::vector<std::byte> storageBytes(const ir::Type* t, const HostTensor& h) {
  size_t stride = ir::storageStride(t), n = size_t(std::max<int64_t>(h.size(), 1));
  if (stride == hostBytes(h.dtype) && h.dtype != DType::Bool && h.size() > 0) return h.bytes;
  std::vector<std::byte> out(n * stride);
  for (int64_t i = 0; i < h.size(); ++i)
    ir::encode(t->isFloat() ? interp::RtValue::ofFloat(t, h.get(i))
               : t->isBool() ? interp::RtValue::ofBool(t, h.getInt(i) != 0)
                             : interp::RtValue::ofInt(t, h.getInt(i)),
               out.data() + size_t(i) * stride);
  return out;
}

void fromStorageBytes(const ir::Type* t, std::span<const std::byte> bytes, HostTensor& h) {
  size_t stride = ir::storageStride(t);
  if (stride == hostBytes(h.dtype) && h.dtype != DType::Bool) {
    std::memcpy(h.bytes.data(), bytes.data(), h.bytes.size());
    return;
  }
  for (int64_t i = 0; i < h.size(); ++i) {
    interp::RtValue e = ir::decode(t, bytes.data() + size_t(i) * stride);
    if (isFloat(h.dtype)) h.set(i, e.f);
    else h.setInt(i, e.i);
  }
}

}  // namespace

Status checkInput(const Node& declared, const HostTensor& given, int64_t n) {
  if (given.dtype != declared.dtype)
    return Error{{}, "input '" + declared.name + "' wants dtype " + std::string(dtypeName(declared.dtype)) + ", got " +
                         std::string(dtypeName(given.dtype))};
  if (given.shape != withExtent(declared.shape, n))
    return Error{{}, "input '" + declared.name + "' wants shape " + shapeText(declared.shape) +
                         (isDynamic(declared.shape) ? " with N = " + std::to_string(n) + " (from the first input with N)" : "") +
                         ", got " + shapeText(given.shape)};
  if (given.bytes.size() != size_t(given.size()) * hostBytes(given.dtype))
    return Error{{}, "input '" + declared.name + "' has " + std::to_string(given.bytes.size()) + " bytes for " +
                         std::to_string(given.size()) + " elements of " + std::string(dtypeName(given.dtype))};
  return Status::ok();
}

Expected<std::vector<interp::RtValue>> mainArgs(interp::Memory& mem, ir::Context& ctx, const Program& p,
                                                const std::vector<uint32_t>& params, const std::vector<HostTensor>& inputs,
                                                const std::vector<std::shared_ptr<const HostTensor>>& derived) {
  auto n = checkInputs(p, inputs);
  if (!n) return n.error();
  std::vector<interp::RtValue> args;
  for (uint32_t id : params) {
    const Node& n = p.node(id);
    if (n.op == "const") {
      args.push_back(toBuffer(mem, ctx, *n.data));
    } else {
      size_t k = size_t(std::find(p.inputs().begin(), p.inputs().end(), id) - p.inputs().begin());
      args.push_back(toBuffer(mem, ctx, inputs[k]));
    }
  }
  if (hasDynamicInput(p)) args.push_back(extentArg(ctx, *n));
  for (const auto& d : derived) args.push_back(toBuffer(mem, ctx, *d));
  return args;
}

bool hasDynamicInput(const Program& p) {
  for (uint32_t id : p.inputs())
    if (isDynamic(p.node(id).shape)) return true;
  return false;
}

int64_t dynamicExtent(const Program& p, const std::vector<HostTensor>& inputs) {
  for (size_t i = 0; i < inputs.size() && i < p.inputs().size(); ++i)
    if (isDynamic(p.node(p.inputs()[i]).shape) && !inputs[i].shape.empty()) return inputs[i].shape[0];
  return 0;
}

Expected<HostTensor> resultTensor(interp::Memory& mem, const interp::RtValue& result, DType dtype, const Shape& shape) {
  HostTensor h(dtype, shape);
  const interp::BufferData* b = mem.get(result.buffer);
  if (!b || b->elems.size() < size_t(h.size())) return Error{{}, "internal error: a result is not a buffer of its size"};
  for (int64_t i = 0; i < h.size(); ++i) {
    const interp::RtValue& e = b->elems[size_t(i)];
    if (isFloat(dtype)) h.set(i, e.f);
    else h.setInt(i, e.i);
  }
  return h;
}

Expected<std::vector<HostTensor>> run(runtime::Device& device, const Program& p, const Compiled& c,
                                      const std::vector<HostTensor>& inputs) {
  if (c.deviceIO) {
    auto args = uploadInputs(device, p, c, inputs);
    if (!args) return args.error();
    auto results = runOnDevice(device, c, *args);
    freeDeviceBuffers(device, *args);
    if (!results) return results.error();
    return downloadResults(device, p, c, *results, dynamicExtent(p, inputs));
  }
  ir::Context& ctx = c.module->context();
  interp::Interpreter in(*c.module);
  auto args = mainArgs(in.memory(), ctx, p, c.params, inputs, c.derived);
  if (!args) return args.error();
  auto results = runtime::runHost(device, in, *c.module->lookup("main"), std::move(*args));
  if (!results) return results.error();
  std::vector<HostTensor> out;
  for (size_t k = 0; k < results->size(); ++k) {
    const Node& n = p.node(c.results[k]);
    auto h = resultTensor(in.memory(), (*results)[k], n.dtype, withExtent(n.shape, dynamicExtent(p, inputs)));
    if (!h) return h.error();
    out.push_back(std::move(*h));
  }
  return out;
}

Expected<std::vector<interp::RtValue>> uploadInputs(runtime::Device& device, const Program& p, const Compiled& c,
                                                    const std::vector<HostTensor>& inputs) {
  auto extent = checkInputs(p, inputs);
  if (!extent) return extent.error();
  ir::Context& ctx = c.module->context();
  const ir::Function& main = *c.module->lookup("main");
  if (Status st = device.prepare(*c.module); !st) return st.error();
  std::vector<interp::RtValue> args;
  // One device buffer holding h, as @main's parameter k.
  auto upload = [&](size_t k, const HostTensor& h) -> Status {
    const ir::Type* t = irType(ctx, h.dtype);
    auto buf = device.alloc(ctx.bufferType(t, ir::Space::Device, ir::Ownership::Linear), uint64_t(std::max<int64_t>(h.size(), 1)), {});
    if (!buf) return buf.error();
    interp::RtValue v;
    v.type = main.paramTypes()[k];
    v.buffer = *buf;
    args.push_back(v);
    return device.uploadBytes(*buf, storageBytes(t, h), {});
  };
  for (size_t k = 0; k < c.params.size(); ++k) {
    const Node& n = p.node(c.params[k]);
    const HostTensor* h = n.data.get();
    if (n.op != "const") h = &inputs[size_t(std::find(p.inputs().begin(), p.inputs().end(), c.params[k]) - p.inputs().begin())];
    if (Status st = upload(k, *h); !st) {
      freeDeviceBuffers(device, args);
      return st.error();
    }
  }
  if (c.dynamic) args.push_back(extentArg(ctx, *extent));
  for (const auto& d : c.derived)
    if (Status st = upload(args.size(), *d); !st) {
      freeDeviceBuffers(device, args);
      return st.error();
    }
  return args;
}

Expected<std::vector<interp::RtValue>> runOnDevice(runtime::Device& device, const Compiled& c,
                                                   const std::vector<interp::RtValue>& args) {
  interp::Interpreter in(*c.module);
  // Not through EPH_CHECK_BUFFERS's CheckedDevice: it would not know the
  // argument buffers, allocated before @main ran (the linearity pass proves
  // @main frees what it allocates and does not return).
  runtime::RunOptions o = runtime::RunOptions::fromEnvironment();
  o.checkBuffers = false;
  o.prepared = true;  // by uploadInputs
  // @main is straight-line allocations and dispatches: interpreting it costs
  // microseconds, compiling it (or finding it in the cpu cache, which prints
  // the module for its key) milliseconds a run.
  if (o.host == runtime::RunOptions::Host::Auto) o.host = runtime::RunOptions::Host::Interp;
  return runtime::runHost(device, in, *c.module->lookup("main"), args, o);
}

Expected<std::vector<HostTensor>> downloadResults(runtime::Device& device, const Program& p, const Compiled& c,
                                                  const std::vector<interp::RtValue>& results, int64_t n) {
  ir::Context& ctx = c.module->context();
  std::vector<HostTensor> out;
  Status downloaded = Status::ok();
  for (size_t k = 0; k < results.size() && downloaded; ++k) {
    const Node& node = p.node(c.results[k]);
    HostTensor h(node.dtype, withExtent(node.shape, n));
    const ir::Type* t = irType(ctx, node.dtype);
    std::vector<std::byte> bytes(size_t(std::max<int64_t>(h.size(), 1)) * ir::storageStride(t));
    if (h.size() > 0) {  // an empty tensor's buffer has one element, never written
      downloaded = device.downloadBytes(bytes, results[k].buffer, {});
      fromStorageBytes(t, bytes, h);
    }
    out.push_back(std::move(h));
  }
  freeDeviceBuffers(device, results);
  if (!downloaded) return downloaded.error();
  return out;
}

void freeDeviceBuffers(runtime::Device& device, const std::vector<interp::RtValue>& buffers) {
  for (const interp::RtValue& v : buffers)
    if (v.type && v.type->isBuffer()) (void)device.free(v.buffer, {});  // not N (Compiled::dynamic)
}

Expected<std::vector<HostTensor>> run(const Program& p, std::string_view target, const std::vector<HostTensor>& inputs,
                                      const LowerOptions& opts) {
  auto dev = runtime::openDevice(target);
  if (!dev) return dev.error();
  ir::Context ctx;
  LowerOptions o = opts.tune ? tunedFor((*dev)->caps(), opts) : opts;
  o.deviceIO = true;
  auto c = lower(ctx, p, o);
  if (!c) return c.error();
  return run(**dev, p, *c, inputs);
}

}  // namespace eph::tensor
