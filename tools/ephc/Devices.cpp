// `ephc devices`: the devices this build can run on and what each can do, as
// a table with one column per device and one row per capability.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "runtime/Device.h"
#include "tools/ephc/Driver.h"
#ifdef EPH_HAVE_VULKAN
#include "runtime/vulkan/VulkanDevice.h"
#endif

namespace eph::ephc {

CommandSpec devicesSpec() {
  return {
      .name = "devices",
      .summary = "List the devices this build can run on and their capabilities.",
      .description =
          "One column per device: the reference interpreter, the cpu target (when\n"
          "built with LLVM), then each Vulkan device\n"
          "numbered as --device N and EPH_DEVICE take it. Rows: name, type, driver,\n"
          "Vulkan version, subgroup size, 16/64-bit types, atomics, and the limits\n"
          "that bad input runs into (largest buffer, workgroup size and count,\n"
          "workgroup memory, push constants). When Vulkan is unavailable, the last\n"
          "line says why. 'ephc run --devices=vulkan:0,cpu' runs one program on\n"
          "several of them.",
  };
}

namespace {

std::string yesNo(bool b) { return b ? "yes" : "no"; }

std::string bytesText(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = double(b);
  while (v >= 1024 && u < 4 && std::fmod(v, 1024) == 0) v /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  return buf;
}

std::string triple(std::array<uint32_t, 3> v) {
  return std::to_string(v[0]) + " x " + std::to_string(v[1]) + " x " + std::to_string(v[2]);
}

struct Column {
  std::string title, type;
  DeviceCaps caps;
};

}  // namespace

int runDevicesCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = devicesSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;

  std::vector<Column> cols;
  auto interp = runtime::openDevice("interp");
  if (interp) cols.push_back({"interp", "reference", (*interp)->caps()});
  auto targets = runtime::availableTargets();
  if (std::find(targets.begin(), targets.end(), "cpu") != targets.end())
    if (auto cpu = runtime::openDevice("cpu")) cols.push_back({"cpu", "LLVM JIT", (*cpu)->caps()});
  std::string vulkanNote;
#ifdef EPH_HAVE_VULKAN
  auto vk = runtime::listVulkanDevices();
  if (vk)
    for (auto& d : *vk) cols.push_back({"vulkan " + std::to_string(d.index), d.type, d.caps});
  else
    vulkanNote = "vulkan: " + vk.error().message;
#else
  vulkanNote = "vulkan: not part of this build";
#endif

  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](std::string name, auto get) {
    std::vector<std::string> cells;
    for (auto& c : cols) cells.push_back(get(c));
    rows.push_back({std::move(name), std::move(cells)});
  };
  row("device", [](const Column& c) { return c.title; });
  row("name", [](const Column& c) { return c.caps.name; });
  row("type", [](const Column& c) { return c.type; });
  row("driver", [](const Column& c) { return c.caps.driver; });
  row("vulkan version", [](const Column& c) {
    uint32_t v = c.caps.vulkanApiVersion;
    return v ? std::to_string(v >> 22) + "." + std::to_string((v >> 12) & 0x3ff) : std::string("-");
  });
  row("subgroup size", [](const Column& c) { return std::to_string(c.caps.subgroupSize); });
  row("float16", [](const Column& c) { return yesNo(c.caps.float16); });
  row("float64", [](const Column& c) { return yesNo(c.caps.float64); });
  row("int8", [](const Column& c) { return yesNo(c.caps.int8); });
  row("int16", [](const Column& c) { return yesNo(c.caps.int16); });
  row("int64", [](const Column& c) { return yesNo(c.caps.int64); });
  row("atomic int64", [](const Column& c) { return yesNo(c.caps.atomicInt64); });
  row("atomic f32 add", [](const Column& c) { return yesNo(c.caps.atomicFloat32Add); });
  row("atomic f64 add", [](const Column& c) { return yesNo(c.caps.atomicFloat64Add); });
  row("matrix units", [](const Column& c) {  // cooperative matrices, f16 inputs
    for (const std::string& s : c.caps.cooperativeMatrixShapes)
      if (s == "16x16x16 f16 f32") return std::string("16x16x16 f16 -> f32");
    return std::string(c.caps.cooperativeMatrixShapes.empty() ? "no" : "other shapes");
  });
  row("workgroup matrices", [](const Column& c) {  // VK_NV_cooperative_matrix2, f16 inputs
    std::string out;
    for (const std::string& s : c.caps.workgroupMatrixShapes)
      if (s.find(" f16 f32 ") != std::string::npos) out += (out.empty() ? "" : ", ") + s;
    if (!out.empty())
      out += "; dimensions <= " + std::to_string(c.caps.workgroupMatrixMaxDimension) + ", invocations <= " +
             std::to_string(c.caps.workgroupMatrixMaxInvocations) + ", reserved " +
             std::to_string(c.caps.workgroupMatrixReservedMemory) + " B";
    return out.empty() ? std::string(c.caps.workgroupMatrixShapes.empty() ? "no" : "other types") : out;
  });
  row("largest buffer", [](const Column& c) { return bytesText(c.caps.maxBufferBytes); });
  row("device memory", [](const Column& c) { return c.caps.memoryBytes ? bytesText(c.caps.memoryBytes) : "-"; });
  row("workgroup invocations", [](const Column& c) { return std::to_string(c.caps.maxWorkgroupInvocations); });
  row("workgroup size", [](const Column& c) { return triple(c.caps.maxWorkgroupSize); });
  row("workgroup count", [](const Column& c) { return triple(c.caps.maxWorkgroupCount); });
  row("workgroup memory", [](const Column& c) { return bytesText(c.caps.maxWorkgroupMemoryBytes); });
  row("push constants", [](const Column& c) { return bytesText(c.caps.maxPushConstantBytes); });

  size_t nameWidth = 0;
  for (auto& r : rows) nameWidth = std::max(nameWidth, r.first.size());
  std::vector<size_t> widths(cols.size(), 0);
  for (auto& r : rows)
    for (size_t i = 0; i < cols.size(); ++i) widths[i] = std::max(widths[i], r.second[i].size());
  for (auto& r : rows) {
    std::string line = r.first + std::string(nameWidth - r.first.size() + 2, ' ');
    for (size_t i = 0; i < cols.size(); ++i)
      line += r.second[i] + (i + 1 < cols.size() ? std::string(widths[i] - r.second[i].size() + 2, ' ') : "");
    s.io.out << line << "\n";
  }
  if (!vulkanNote.empty()) s.io.out << vulkanNote << "\n";
  return 0;
}

}  // namespace eph::ephc
