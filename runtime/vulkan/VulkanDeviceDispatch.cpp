// VulkanDevice's kernels: prepare() finds each kernel by its key (its text,
// its callees' text, the device's capabilities and options that change its
// SPIR-V) among those it compiled before, or checks it against the device's
// limits, emits its SPIR-V and builds its pipeline (through the pipeline
// cache); dispatch() binds its buffers and scalars and records it.
#include <algorithm>

#include "ir/KernelText.h"
#include "ir/Layout.h"
#include "runtime/DiskCache.h"
#include "runtime/vulkan/VulkanDeviceImpl.h"
#include "targets/spirv/Spirv.h"

namespace eph::runtime {
namespace {

constexpr uint32_t kSetsPerPool = 256;          // descriptor sets per pool
constexpr uint32_t kDescriptorsPerPool = 4096;  // storage-buffer descriptors per pool

std::string tuple3(std::array<uint32_t, 3> v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
}

}  // namespace

Expected<VkDescriptorSet> VulkanDevice::Impl::allocateSet(VkDescriptorSetLayout layout, Loc site) {
  Batch& b = batch();  // its pools are reset when it has run
  for (;;) {
    if (b.currentPool == b.pools.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerPool};
      VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      info.maxSets = kSetsPerPool;
      info.poolSizeCount = 1;
      info.pPoolSizes = &size;
      VkDescriptorPool pool;
      if (VkResult r = api().vkCreateDescriptorPool(device, &info, nullptr, &pool); r != VK_SUCCESS)
        return vkError(site, "vkCreateDescriptorPool failed", r);
      b.pools.push_back(pool);
    }
    VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    info.descriptorPool = b.pools[b.currentPool];
    info.descriptorSetCount = 1;
    info.pSetLayouts = &layout;
    VkDescriptorSet set;
    VkResult r = api().vkAllocateDescriptorSets(device, &info, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      return vkError(site, "vkAllocateDescriptorSets failed", r);
    ++b.currentPool;
  }
}

Expected<Pipeline*> VulkanDevice::Impl::pipelineFor(const std::vector<uint32_t>& spirv, uint32_t bindings,
                                                    uint32_t pushBytes, const std::string& kernel) {
  uint64_t key = runtime::hashBytes(spirv.data(), spirv.size() * 4);
  if (auto it = pipelines.find(key); it != pipelines.end()) {
    ++stats.fromMemory;
    return it->second.get();
  }
  auto p = std::make_unique<Pipeline>();
  p->device = device;
  std::vector<VkDescriptorSetLayoutBinding> slots(bindings);
  for (uint32_t b = 0; b < bindings; ++b) {
    slots[b].binding = b;
    slots[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    slots[b].descriptorCount = 1;
    slots[b].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dsl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dsl.bindingCount = bindings;
  dsl.pBindings = slots.data();
  if (VkResult r = api().vkCreateDescriptorSetLayout(device, &dsl, nullptr, &p->setLayout); r != VK_SUCCESS)
    return vkError({}, "kernel '@" + kernel + "': vkCreateDescriptorSetLayout failed", r);
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, pushBytes};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &p->setLayout;
  pl.pushConstantRangeCount = pushBytes ? 1 : 0;
  pl.pPushConstantRanges = &range;
  if (VkResult r = api().vkCreatePipelineLayout(device, &pl, nullptr, &p->layout); r != VK_SUCCESS)
    return vkError({}, "kernel '@" + kernel + "': vkCreatePipelineLayout failed", r);

  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = spirv.size() * 4;
  sm.pCode = spirv.data();
  VkShaderModule shader;
  if (VkResult r = api().vkCreateShaderModule(device, &sm, nullptr, &shader); r != VK_SUCCESS)
    return vkError({}, "kernel '@" + kernel + "': vkCreateShaderModule failed", r);

  // The disk cache: reuse driver data for this exact module when there is some.
  auto cached = disk->load(spirv);
  VkPipelineCacheCreateInfo pc{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (cached) {
    pc.initialDataSize = cached->size();
    pc.pInitialData = cached->data();
  }
  VkPipelineCache cache = VK_NULL_HANDLE;
  if (api().vkCreatePipelineCache(device, &pc, nullptr, &cache) != VK_SUCCESS) cache = VK_NULL_HANDLE;

  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = shader;
  info.stage.pName = kernel.c_str();
  info.layout = p->layout;
  if (printStatistics) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkResult r = api().vkCreateComputePipelines(device, cache, 1, &info, nullptr, &p->pipeline);
  if (r == VK_SUCCESS && printStatistics) vk::printPipelineStatistics(device, p->pipeline, kernel);
  api().vkDestroyShaderModule(device, shader, nullptr);
  if (r == VK_SUCCESS && cache && !cached) {
    size_t size = 0;
    if (api().vkGetPipelineCacheData(device, cache, &size, nullptr) == VK_SUCCESS && size) {
      std::vector<std::byte> data(size);
      if (api().vkGetPipelineCacheData(device, cache, &size, data.data()) == VK_SUCCESS) {
        data.resize(size);
        disk->save(spirv, data);
      }
    }
  }
  if (cache) api().vkDestroyPipelineCache(device, cache, nullptr);
  if (r != VK_SUCCESS) return vkError({}, "kernel '@" + kernel + "': the driver could not build its pipeline", r);
  ++(cached ? stats.fromDisk : stats.compiled);
  Pipeline* raw = p.get();
  pipelines.emplace(key, std::move(p));
  return raw;
}

Expected<std::unique_ptr<vk::CompiledKernel>> VulkanDevice::Impl::compileKernel(const ir::Function& k) {
  const DeviceCaps& c = physical.caps;
  const std::string& kn = k.name();
  auto ws = k.workgroupSize;
  uint64_t invocations = uint64_t(ws[0]) * ws[1] * ws[2];
  for (int d = 0; d < 3; ++d)
    if (ws[d] > c.maxWorkgroupSize[d])
      return Error{k.loc(), "kernel '@" + kn + "': workgroup size " + tuple3({ws[0], ws[1], ws[2]}) +
                                " exceeds the device's maxComputeWorkGroupSize " + tuple3(c.maxWorkgroupSize) +
                                " on " + name()};
  if (invocations > c.maxWorkgroupInvocations)
    return Error{k.loc(), "kernel '@" + kn + "': workgroup of " + std::to_string(invocations) +
                              " invocations exceeds the device's maxComputeWorkGroupInvocations (" +
                              std::to_string(c.maxWorkgroupInvocations) + ") on " + name()};
  uint64_t shared = 0;
  const_cast<ir::Function&>(k).walk([&](ir::Op* op) {
    if (op->is(ir::OpId::WorkgroupAlloc) && op->attr("size"))
      shared += uint64_t(op->intAttr("size")) * ir::storageStride(op->result()->type()->elem());
  });
  if (shared > c.maxWorkgroupMemoryBytes)
    return Error{k.loc(), "kernel '@" + kn + "': " + std::to_string(shared) +
                              " bytes of workgroup memory exceed the device's maxComputeSharedMemorySize (" +
                              std::to_string(c.maxWorkgroupMemoryBytes) + " bytes) on " + name()};

  KernelInfo info;
  info.name = kn;
  std::vector<const ir::Type*> scalars;
  std::vector<unsigned> scalarParams;
  auto params = k.paramTypes();
  for (unsigned i = 0; i < params.size(); ++i) {
    if (params[i]->isBuffer()) {
      int b = k.bindingOf(i);
      if (b < 0) continue;
      if (size_t(b) >= info.bindingParam.size()) {
        info.bindingParam.resize(b + 1, ~0u);
        info.bindingWrites.resize(b + 1, false);
      }
      info.bindingParam[b] = i;
      info.bindingWrites[b] = params[i]->ownership() != ir::Ownership::Read;
    } else {
      scalars.push_back(params[i]);
      scalarParams.push_back(i);
    }
  }
  if (info.bindingParam.size() > kDescriptorsPerPool)
    return Error{k.loc(), "kernel '@" + kn + "': " + std::to_string(info.bindingParam.size()) +
                              " buffer parameters exceed ephc's limit of " +
                              std::to_string(kDescriptorsPerPool) + " per kernel"};
  if (info.bindingParam.size() > physical.maxStorageBuffersPerStage)
    return Error{k.loc(), "kernel '@" + kn + "': " + std::to_string(info.bindingParam.size()) +
                              " buffer parameters exceed the device's maxPerStageDescriptorStorageBuffers (" +
                              std::to_string(physical.maxStorageBuffersPerStage) + ") on " + name()};
  if (!scalars.empty()) {
    const ir::Type* block = k.module()->context().structType(scalars);
    for (unsigned j = 0; j < scalars.size(); ++j) info.pushFields.push_back({scalarParams[j], ir::fieldOffset(block, j)});
    info.pushBytes = uint32_t((ir::storageSize(block) + 3) & ~size_t(3));
    if (info.pushBytes > c.maxPushConstantBytes)
      return Error{k.loc(), "kernel '@" + kn + "': " + std::to_string(info.pushBytes) +
                                " bytes of scalar parameters exceed the device's maxPushConstantsSize (" +
                                std::to_string(c.maxPushConstantBytes) + " bytes) on " + name()};
  }

  // Its bounds sites are numbered after every kernel's emitted before.
  size_t siteBase = boundsSites.size();
  auto words = spirv::emitKernel(k, c, {.checkBounds = checkBounds, .sites = &boundsSites});
  ++stats.emitted;
  if (!words) {
    boundsSites.resize(siteBase);
    Error e = words.error();
    if (e.message.find("@" + kn) == std::string::npos) e.message = "kernel '@" + kn + "': " + e.message;
    if (!e.loc.known()) e.loc = k.loc();
    return e;
  }
  auto compiled = std::make_unique<vk::CompiledKernel>();
  compiled->siteBase = uint32_t(siteBase);
  if (boundsSites.size() > siteBase) {
    std::unordered_map<const ir::Op*, uint32_t> index;
    std::vector<const ir::Op*> ops = ir::kernelOps(k);
    for (size_t i = 0; i < ops.size(); ++i) index.emplace(ops[i], uint32_t(i));
    for (size_t s = siteBase; s < boundsSites.size(); ++s) {
      auto at = index.find(boundsSites[s]);  // always found: the emitter checks only these ops
      compiled->siteOps.push_back(at == index.end() ? ~0u : at->second);
    }
  }
  uint32_t bindings = uint32_t(info.bindingParam.size()) + (checkBounds ? 1 : 0);  // the record last
  auto pipe = pipelineFor(*words, bindings, info.pushBytes, kn);
  if (!pipe) {
    Error e = pipe.error();
    e.loc = k.loc();
    return e;
  }
  info.pipeline = *pipe;
  info.spirv = std::move(*words);
  compiled->info = std::move(info);
  if (Status s = checkValidation(k.loc()); !s) return s.error();
  return compiled;
}

// A kernel prepared before (by this device, in any module) is found by its
// key: nothing is emitted or validated, and its bounds sites are pointed at
// this module's ops. Any other is compiled, its pipeline found through the
// cache keyed by its SPIR-V (in memory, then on disk) or built.
Status VulkanDevice::Impl::prepareKernel(const ir::Function& k) {
  std::string key = kernelKey(k, physical.caps, checkBounds);
  auto it = compiled.find(key);
  if (it != compiled.end()) {
    ++stats.reused;
    const vk::CompiledKernel& ck = *it->second;
    if (!ck.siteOps.empty()) {
      std::vector<const ir::Op*> ops = ir::kernelOps(k);
      for (size_t i = 0; i < ck.siteOps.size(); ++i)
        boundsSites[ck.siteBase + i] = ck.siteOps[i] < ops.size() ? ops[ck.siteOps[i]] : nullptr;
    }
    kernels[&k] = &ck.info;
    return Status::ok();
  }
  auto ck = compileKernel(k);
  if (!ck) return ck.error();
  kernels[&k] = &compiled.emplace(std::move(key), std::move(*ck)).first->second->info;
  return Status::ok();
}

std::string VulkanDevice::kernelKey(const ir::Function& kernel, const DeviceCaps& caps, bool checkBounds) {
  return "ephc vulkan kernel 1\n" + spirv::emitKey(caps, {.checkBounds = checkBounds}) + ir::kernelText(kernel);
}

// Only kernels whose key is new are emitted and validated: a module at the
// address of an earlier, destroyed one finds its kernels by their text, never
// by address.
Status VulkanDevice::prepare(const ir::Module& m) {
  Impl& I = *impl_;
  I.module = &m;
  I.prepared = false;
  I.kernels.clear();
  // Sites of kernels not in this module name no op (their module may be gone).
  std::fill(I.boundsSites.begin(), I.boundsSites.end(), nullptr);
  for (auto& f : m.functions())
    if (f->isKernel())
      if (Status s = I.prepareKernel(*f); !s) return s;
  I.prepared = true;
  return Status::ok();
}

Status VulkanDevice::dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                              std::span<const interp::RtValue> args, Loc site) {
  Impl& I = *impl_;
  auto it = I.kernels.find(&kernel);
  if (it == I.kernels.end() || kernel.module() != I.module || !I.prepared) {
    if (!kernel.module()) return Error{site, "kernel '@" + kernel.name() + "' belongs to no module"};
    if (Status s = prepare(*kernel.module()); !s) return s;
    it = I.kernels.find(&kernel);
    if (it == I.kernels.end()) return Error{site, "'@" + kernel.name() + "' is not a kernel"};
  }
  const KernelInfo& k = *it->second;
  const DeviceCaps& c = I.physical.caps;
  for (int d = 0; d < 3; ++d)
    if (groups[d] > c.maxWorkgroupCount[d])
      return Error{site, "dispatch of '@" + k.name + "' with " + tuple3(groups) +
                             " workgroups exceeds the device's maxComputeWorkGroupCount " +
                             tuple3(c.maxWorkgroupCount) + " on " + c.name};
  if (args.size() != kernel.paramTypes().size())
    return Error{site, "dispatch of '@" + k.name + "' with " + std::to_string(args.size()) + " arguments; it takes " +
                           std::to_string(kernel.paramTypes().size())};

  std::vector<VkDescriptorBufferInfo> infos(k.bindingParam.size());
  std::vector<VkBuffer> reads, writes;
  for (size_t b = 0; b < k.bindingParam.size(); ++b) {
    unsigned p = k.bindingParam[b];
    Status err;
    Buffer* buf = I.live(args[p].buffer, site, err);
    if (!buf) return Error{site, "dispatch of '@" + k.name + "', argument " + std::to_string(p) + ": " + err.error().message};
    // The descriptor covers exactly the buffer's elements (buffer.len is
    // OpArrayLength); an empty buffer gets one byte, shorter than any element.
    infos[b] = {buf->buffer, 0, buf->bytes ? buf->bytes : 1};
    if (args[p].isView()) {
      // A view is the range of its window (an empty view: one byte at 0).
      uint64_t stride = ir::storageStride(args[p].type->elem());
      uint64_t at = args[p].viewCount ? args[p].viewOffset * stride : 0;
      if (at % c.storageBufferOffsetAlignment != 0)
        return Error{site, "dispatch of '@" + k.name + "', argument " + std::to_string(p) + ": a view at element " +
                               std::to_string(args[p].viewOffset) + " starts at byte " + std::to_string(at) +
                               ", not a multiple of the device's minStorageBufferOffsetAlignment (" +
                               std::to_string(c.storageBufferOffsetAlignment) + " bytes) on " + c.name};
      if (at + args[p].viewCount * stride > buf->bytes)
        return Error{site, "dispatch of '@" + k.name + "', argument " + std::to_string(p) +
                               ": the view is out of range for its buffer"};
      infos[b] = {buf->buffer, at, args[p].viewCount ? args[p].viewCount * stride : 1};
    }
    (k.bindingWrites[b] ? writes : reads).push_back(buf->buffer);
  }
  if (groups[0] == 0 || groups[1] == 0 || groups[2] == 0) return Status::ok();

  std::vector<std::byte> push(k.pushBytes);
  for (auto& [p, offset] : k.pushFields) ir::encode(args[p], push.data() + offset);

  if (Status s = I.beginRecording(site); !s) return s;
  Batch& batch = I.batch();
  if (I.checkBounds) infos.push_back({batch.boundsRecord.buffer, 0, batch.boundsRecord.bytes});
  auto set = I.allocateSet(k.pipeline->setLayout, site);
  if (!set) return set.error();
  std::vector<VkWriteDescriptorSet> w(infos.size());
  for (size_t b = 0; b < infos.size(); ++b) {
    w[b] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w[b].dstSet = *set;
    w[b].dstBinding = uint32_t(b);
    w[b].descriptorCount = 1;
    w[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w[b].pBufferInfo = &infos[b];
  }
  if (!w.empty()) api().vkUpdateDescriptorSets(I.device, uint32_t(w.size()), w.data(), 0, nullptr);

  // A buffer both read and written counts as written.
  std::vector<VkBuffer> onlyReads;
  for (VkBuffer r : reads)
    if (std::find(writes.begin(), writes.end(), r) == writes.end()) onlyReads.push_back(r);
  I.access(onlyReads, writes);
  batch.boundsPending |= I.checkBounds;

  api().vkCmdBindPipeline(batch.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline->pipeline);
  api().vkCmdBindDescriptorSets(batch.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline->layout, 0, 1, &*set, 0, nullptr);
  if (k.pushBytes)
    api().vkCmdPushConstants(batch.cmd, k.pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k.pushBytes, push.data());
  // The start waits for earlier compute work, so each time is one dispatch's.
  int64_t q = I.stampStart("dispatch", k.name, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  api().vkCmdDispatch(batch.cmd, groups[0], groups[1], groups[2]);
  I.stampEnd(q, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  if (Status s = I.checkValidation(site); !s) return s;
  return I.recorded(site);
}

std::vector<uint32_t> VulkanDevice::spirvOf(const ir::Function& kernel) const {
  auto it = impl_->kernels.find(&kernel);
  return it == impl_->kernels.end() ? std::vector<uint32_t>{} : it->second->spirv;
}

}  // namespace eph::runtime
