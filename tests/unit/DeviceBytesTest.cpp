// The Device interface's raw transfers (runtime/Device.h): uploadBytes,
// downloadBytes and copyBytes move a whole buffer's storage bytes on every
// device, a wrong size is an error naming both sizes, and the interpreter's
// hooks (upload/download of an interp::BufferData) give the same values
// through them. InterpDevice keeps written flags: bytes downloaded from an
// element never written are an error naming it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <span>

#include "ir/Layout.h"
#include "runtime/Device.h"

namespace eph::test {
namespace {

std::vector<std::string> targets() {
  std::vector<std::string> out;
  for (const std::string& t : runtime::availableTargets()) {
    if (t == "vulkan") {
      auto d = runtime::openDevice("vulkan");
      if (!d) {
        const char* req = std::getenv("EPH_REQUIRE_VULKAN");
        if (req && std::string(req) == "1") ADD_FAILURE() << d.error().message;
        continue;
      }
    }
    out.push_back(t);
  }
  return out;
}

TEST(DeviceBytes, RoundTripsCopiesAndSizesOnEveryDevice) {
  ir::Context ctx;
  ir::Module empty(ctx);  // prepared, so that InterpDevice has its memory
  const ir::Type* t = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Linear);
  for (const std::string& target : targets()) {
    SCOPED_TRACE(target);
    auto dev = runtime::openDevice(target);
    ASSERT_TRUE(dev) << dev.error().message;
    ASSERT_TRUE((*dev)->prepare(empty));
    const size_t n = 1000;
    auto a = (*dev)->alloc(t, n, {}), b = (*dev)->alloc(t, n, {});
    ASSERT_TRUE(a && b);
    std::vector<float> v(n), got(n, -1.0f);
    for (size_t i = 0; i < n; ++i) v[i] = float(i) * 0.25f - 3.0f;
    ASSERT_TRUE((*dev)->uploadBytes(*a, std::as_bytes(std::span(v)), {}));
    ASSERT_TRUE((*dev)->copyBytes(*b, *a, n * 4, {}));
    ASSERT_TRUE((*dev)->downloadBytes(std::as_writable_bytes(std::span(got)), *b, {}));
    EXPECT_EQ(got, v);

    // The interpreter's hooks see the same values.
    interp::BufferData host;
    host.elemType = ctx.f32();
    host.elems.resize(n);
    host.written.assign(n, false);
    ASSERT_TRUE((*dev)->download(host, *a, {}));
    for (size_t i = 0; i < n; i += 97) {
      EXPECT_TRUE(host.written[i]);
      EXPECT_EQ(float(host.elems[i].f), v[i]) << i;
    }
    host.elems[5].f = 42.0;
    ASSERT_TRUE((*dev)->upload(*b, host, {}));
    ASSERT_TRUE((*dev)->downloadBytes(std::as_writable_bytes(std::span(got)), *b, {}));
    EXPECT_EQ(got[5], 42.0f);
    EXPECT_EQ(got[6], v[6]);

    // A wrong size names both.
    std::vector<float> shorter(n - 1);
    Status up = (*dev)->uploadBytes(*a, std::as_bytes(std::span(shorter)), {});
    ASSERT_FALSE(up);
    EXPECT_EQ(up.error().message, "copies 3996 bytes into a device buffer of 4000 bytes");
    Status down = (*dev)->downloadBytes(std::as_writable_bytes(std::span(shorter)), *a, {});
    ASSERT_FALSE(down);
    EXPECT_EQ(down.error().message, "copies a device buffer of 4000 bytes into 3996 bytes");
    ASSERT_TRUE((*dev)->free(*a, {}));
    ASSERT_TRUE((*dev)->free(*b, {}));
    ASSERT_TRUE((*dev)->wait({}));
  }
}

TEST(DeviceBytes, InterpDeviceKeepsWrittenFlags) {
  ir::Context ctx;
  ir::Module empty(ctx);
  auto dev = runtime::openDevice("interp");
  ASSERT_TRUE(dev);
  EXPECT_TRUE((*dev)->tracksWrites());
  ASSERT_TRUE((*dev)->prepare(empty));
  const ir::Type* t = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
  static const std::string file = "bytes.eir";
  auto a = (*dev)->alloc(t, 4, Loc{&file, 3, 5});
  ASSERT_TRUE(a);
  std::vector<uint32_t> got(4);
  Status s = (*dev)->downloadBytes(std::as_writable_bytes(std::span(got)), *a, {});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "element 0 of the device buffer allocated at bytes.eir:3:5 was never written");
  std::vector<uint32_t> v = {7, 8, 9, 10};
  ASSERT_TRUE((*dev)->uploadBytes(*a, std::as_bytes(std::span(v)), {}));
  ASSERT_TRUE((*dev)->downloadBytes(std::as_writable_bytes(std::span(got)), *a, {}));
  EXPECT_EQ(got, v);
  ASSERT_TRUE((*dev)->free(*a, {}));
}

}  // namespace
}  // namespace eph::test
