// Test support for tests that drive a VulkanDevice directly: skip a test when
// this machine has no Vulkan device (fail instead under EPH_REQUIRE_VULKAN=1,
// as CI sets), and open the device with the Khronos validation layer on
// (unless EPH_TEST_NO_VALIDATION=1, for machines without it such as the GPU
// machine the benchmarks run on) and no disk cache unless one is given.
#pragma once
#ifdef EPH_HAVE_VULKAN

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "runtime/vulkan/VulkanDevice.h"

namespace eph::test {

#define REQUIRE_VULKAN()                                                  \
  do {                                                                    \
    auto devs = runtime::listVulkanDevices();                             \
    if (!devs) {                                                          \
      const char* req = std::getenv("EPH_REQUIRE_VULKAN");                \
      if (req && std::string(req) == "1") FAIL() << devs.error().message; \
      GTEST_SKIP() << "no Vulkan device: " << devs.error().message;       \
    }                                                                     \
  } while (0)

inline bool validationWanted() {
  const char* e = std::getenv("EPH_TEST_NO_VALIDATION");
  return !(e && std::string(e) == "1");
}

inline std::unique_ptr<runtime::VulkanDevice> openValidated(runtime::VulkanOptions o = {}) {
  o.validation = validationWanted();
  if (o.cacheDir.empty()) o.cacheDir = "off";
  auto dev = runtime::VulkanDevice::open(o);
  EXPECT_TRUE(dev) << dev.error().message;
  return dev ? std::move(*dev) : nullptr;
}

}  // namespace eph::test

#endif  // EPH_HAVE_VULKAN
