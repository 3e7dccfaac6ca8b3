// The reference interpreter as a Device: device buffers live in an interpreter
// Memory of their own and kernels run in the interpreter. Running a host
// program on it exercises exactly the device path the GPU and CPU targets take
// (uploads, downloads, dispatch arguments), with the interpreter's checks.
#pragma once

#include "runtime/Device.h"

namespace eph::runtime {

class InterpDevice : public Device {
 public:
  InterpDevice();
  ~InterpDevice() override;
  std::string_view target() const override { return "interp"; }
  const DeviceCaps& caps() const override { return caps_; }
  Status prepare(const ir::Module& m) override;

  Expected<uint64_t> alloc(const ir::Type* bufferType, uint64_t count, Loc site) override;
  Status free(uint64_t handle, Loc site) override;
  Status upload(uint64_t dst, const interp::BufferData& src, Loc site) override;
  Status download(interp::BufferData& dst, uint64_t src, Loc site) override;
  // Views (buffer.view): kernels see a view's window through RtValue.
  bool supportsViews() const override { return true; }
  Status viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) override;
  Status viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) override;
  Status dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                  std::span<const interp::RtValue> args, Loc site) override;
  Status wait(Loc site) override { return Status::ok(); }
  // Raw bytes are decoded into values (every element then written) and
  // encoded from them; downloading an element never written is an error, as
  // bytes cannot say it has no value.
  Status uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) override;
  Status downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) override;
  bool tracksWrites() const override { return true; }

 private:
  interp::BufferData* live(uint64_t handle, Loc site, Status& err);
  DeviceCaps caps_;
  const ir::Module* module_ = nullptr;
  std::unique_ptr<interp::Interpreter> kernels_;  // runs kernels over its own Memory
};

}  // namespace eph::runtime
