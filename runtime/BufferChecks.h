// Runtime buffer checks: a Device decorator that follows every device buffer
// through allocated -> in use -> freed and turns each misuse into an error
// naming the buffer's allocation site, instead of whatever the device would
// do with a stale handle:
//
//   use after free   h2d, d2h, copy, dispatch or free of a freed buffer
//                    "use after free: buffer allocated at f.eph:3:5 was freed
//                     at f.eph:7:3 and used again at f.eph:9:1 (by h2d)"
//   double free      "double free: buffer allocated at ... was freed at ...
//                     and freed again at ..."
//   leak             a buffer still live when the host function returns
//                    (checkLeaks), reported at its allocation site
//
// The IR verifier and the linearity pass reject such programs statically;
// these checks catch what they cannot see: a C++ user driving Device hooks
// directly, `__ffi` code, IR run without the static checks. In the runtime a
// device buffer is consumed by `free`, the only op that consumes one, so
// "consumed" and "freed" are one state here.
//
// Off by default and then free: runHost installs the decorator only when
// RunOptions::checkBuffers is set (`ephc run --check-buffers`, or
// EPH_CHECK_BUFFERS=1).
//
//   runtime::CheckedDevice checked(*dev);
//   auto h = checked.alloc(type, 4, loc);   // then free, upload, ... through `checked`
//   Status leaks = checked.checkLeaks("main");
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/Device.h"

namespace eph::runtime {

class CheckedDevice : public Device {
 public:
  // `name` says which device in messages of a program that runs on several
  // ("device 1 (cpu)"); empty for one device.
  explicit CheckedDevice(Device& inner, std::string name = {});

  std::string_view target() const override { return inner_.target(); }
  const DeviceCaps& caps() const override { return inner_.caps(); }
  Status prepare(const ir::Module& m) override { return inner_.prepare(m); }

  Expected<uint64_t> alloc(const ir::Type* bufferType, uint64_t count, Loc site) override;
  Status free(uint64_t handle, Loc site) override;
  Status upload(uint64_t dst, const interp::BufferData& src, Loc site) override;
  Status download(interp::BufferData& dst, uint64_t src, Loc site) override;
  Status dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                  std::span<const interp::RtValue> args, Loc site) override;
  Status wait(Loc site) override { return inner_.wait(site); }
  Status uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) override;
  Status downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) override;
  Status copyBytes(uint64_t dst, uint64_t src, uint64_t bytes, Loc site) override;
  bool tracksWrites() const override { return inner_.tracksWrites(); }
  bool supportsViews() const override { return inner_.supportsViews(); }
  Status viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) override;
  Status viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) override;
  // Checks the use, then the recorded count.
  Expected<uint64_t> length(uint64_t handle, Loc site) override;

  // Checks that `handle` is a live buffer of this device before an op (`what`,
  // e.g. "copy") uses it outside the hooks above; records the use.
  Status use(uint64_t handle, Loc site, std::string_view what);

  // An error at the first leaked buffer's allocation site when buffers other
  // than `returned` are still live (`function` returned without freeing
  // them); ok when none are.
  Status checkLeaks(std::string_view function, std::span<const uint64_t> returned = {}) const;
  // How many buffers are allocated and not freed.
  size_t liveBuffers() const { return live_; }

 private:
  enum class State { Unknown, Allocated, InUse, Freed };
  struct Record {
    State state = State::Unknown;
    const ir::Type* elem = nullptr;
    uint64_t count = 0;
    uint64_t order = 0;  // allocation order, so leaks are listed as allocated
    Loc allocSite, lastUse, freeSite;
  };
  std::string describe(const Record& r) const;
  template <class What>
  Status useAs(uint64_t handle, Loc site, const What& what);
  // The record of `handle`, or null when this device never returned it.
  Record* find(uint64_t handle);
  Record& insert(uint64_t handle);

  Device& inner_;
  std::string name_;
  // Records by handle: the devices hand out consecutive handles, kept in a
  // vector from the first one this decorator saw (one index per op); others
  // in a map.
  static constexpr uint64_t kDenseHandles = uint64_t(1) << 22;
  std::vector<Record> dense_;
  uint64_t base_ = 0;  // the handle of dense_[0]
  bool haveBase_ = false;
  std::unordered_map<uint64_t, Record> sparse_;
  uint64_t allocations_ = 0;
  size_t live_ = 0;
};

}  // namespace eph::runtime
