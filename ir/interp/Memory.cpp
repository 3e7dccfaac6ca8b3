// The interpreter's buffers: storage plus a written flag per element, the
// allocation site and whether the buffer was freed.
#include "ir/interp/Interp.h"

namespace eph::interp {

uint64_t Memory::allocate(const ir::Type* elemType, ir::Space space, size_t count, Loc site) {
  auto b = std::make_unique<BufferData>();
  b->elemType = elemType;
  b->space = space;
  RtValue blank;
  blank.type = elemType;
  b->elems.assign(count, blank);
  b->written.assign(count, false);
  b->allocSite = site;
  buffers_.push_back(std::move(b));
  return buffers_.size();
}

uint64_t Memory::adopt(const ir::Type* elemType, ir::Space space, std::vector<RtValue> values) {
  uint64_t id = allocate(elemType, space, 0);
  BufferData* b = get(id);
  b->written.assign(values.size(), true);
  b->elems = std::move(values);
  return id;
}

BufferData* Memory::get(uint64_t id) {
  if (id == 0 || id > buffers_.size()) return nullptr;
  return buffers_[id - 1].get();
}

std::vector<uint64_t> Memory::live() const {
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (!buffers_[i]->freed && buffers_[i]->space != ir::Space::Workgroup) ids.push_back(i + 1);
  return ids;
}

Status checkFullyWritten(const BufferData& b, Loc site) {
  for (size_t i = 0; i < b.written.size(); ++i)
    if (!b.written[i])
      return Error{site, "element " + std::to_string(i) + " of a buffer of " +
                             std::to_string(b.elems.size()) +
                             " is copied to the device but was never written"};
  return Status::ok();
}

}  // namespace eph::interp
