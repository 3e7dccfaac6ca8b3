// The buffer-check decorator (BufferChecks.h): one Record per handle the
// wrapped device returned, checked before each call is passed on.
#include "runtime/BufferChecks.h"

#include <algorithm>
#include <vector>

namespace eph::runtime {
namespace {

std::string place(Loc loc) { return loc.known() ? loc.str() : "an unknown place"; }
std::string at(Loc loc) { return "at " + place(loc); }

}  // namespace

CheckedDevice::CheckedDevice(Device& inner, std::string name) : inner_(inner), name_(std::move(name)) {}

std::string CheckedDevice::describe(const Record& r) const {
  std::string s = "buffer allocated " + at(r.allocSite);
  if (!name_.empty()) s += " on " + name_;
  return s;
}

CheckedDevice::Record* CheckedDevice::find(uint64_t handle) {
  if (haveBase_ && handle >= base_ && handle - base_ < kDenseHandles) {
    uint64_t i = handle - base_;
    return i < dense_.size() && dense_[i].state != State::Unknown ? &dense_[i] : nullptr;
  }
  auto it = sparse_.find(handle);
  return it == sparse_.end() ? nullptr : &it->second;
}

CheckedDevice::Record& CheckedDevice::insert(uint64_t handle) {
  if (!haveBase_) base_ = handle, haveBase_ = true;
  if (handle < base_ || handle - base_ >= kDenseHandles) return sparse_[handle];
  uint64_t i = handle - base_;
  if (i >= dense_.size()) dense_.resize(std::max<size_t>(i + 1, dense_.size() * 2));
  return dense_[i];
}

Expected<uint64_t> CheckedDevice::alloc(const ir::Type* bufferType, uint64_t count, Loc site) {
  auto handle = inner_.alloc(bufferType, count, site);
  if (!handle) return handle;
  // A device that reuses the handle of a freed buffer starts a new record.
  Record& r = insert(*handle);
  r = Record{State::Allocated, bufferType->elem(), count, allocations_++, site, {}, {}};
  ++live_;
  return handle;
}

// Checks a use of `handle` and records it; `what` (called only for a
// message) names the use.
template <class What>
Status CheckedDevice::useAs(uint64_t handle, Loc site, const What& what) {
  Record* found = find(handle);
  if (!found)
    return Error{site, std::string(what()) + " of device buffer handle " + std::to_string(handle) +
                           ", which " + (name_.empty() ? "this device" : name_) + " never allocated"};
  Record& r = *found;
  if (r.state == State::Freed)
    return Error{site, "use after free: " + describe(r) + " was freed " + at(r.freeSite) +
                           " and used again " + at(site) + " (by " + std::string(what()) + ")"};
  r.state = State::InUse;
  r.lastUse = site;
  return Status::ok();
}

Status CheckedDevice::use(uint64_t handle, Loc site, std::string_view what) {
  return useAs(handle, site, [&] { return what; });
}

Status CheckedDevice::free(uint64_t handle, Loc site) {
  if (Record* found = find(handle); found && found->state == State::Freed) {
    const Record& r = *found;
    return Error{site, "double free: " + describe(r) + " was freed " + at(r.freeSite) +
                           " and freed again " + at(site)};
  }
  if (Status s = use(handle, site, "free"); !s) return s;
  if (Status s = inner_.free(handle, site); !s) return s;
  Record& r = *find(handle);
  r.state = State::Freed;
  r.freeSite = site;
  --live_;
  return Status::ok();
}

Expected<uint64_t> CheckedDevice::length(uint64_t handle, Loc site) {
  if (Status s = use(handle, site, "buffer.len"); !s) return s.error();
  return find(handle)->count;
}

Status CheckedDevice::upload(uint64_t dst, const interp::BufferData& src, Loc site) {
  if (Status s = use(dst, site, "h2d"); !s) return s;
  return inner_.upload(dst, src, site);
}

Status CheckedDevice::download(interp::BufferData& dst, uint64_t src, Loc site) {
  if (Status s = use(src, site, "d2h"); !s) return s;
  return inner_.download(dst, src, site);
}

Status CheckedDevice::viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) {
  if (Status s = use(dst, site, "h2d"); !s) return s;
  return inner_.viewUpload(dst, offset, src, site);
}

Status CheckedDevice::viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) {
  if (Status s = use(src, site, "d2h"); !s) return s;
  return inner_.viewDownload(dst, src, offset, site);
}

Status CheckedDevice::uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) {
  if (Status s = use(dst, site, "h2d"); !s) return s;
  return inner_.uploadBytes(dst, bytes, site);
}

Status CheckedDevice::downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) {
  if (Status s = use(src, site, "d2h"); !s) return s;
  return inner_.downloadBytes(bytes, src, site);
}

Status CheckedDevice::copyBytes(uint64_t dst, uint64_t src, uint64_t bytes, Loc site) {
  if (Status s = use(dst, site, "copy"); !s) return s;
  if (Status s = use(src, site, "copy"); !s) return s;
  return inner_.copyBytes(dst, src, bytes, site);
}

Status CheckedDevice::dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                               std::span<const interp::RtValue> args, Loc site) {
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Type* t = args[i].type;
    if (!t || !t->isBuffer() || t->space() != ir::Space::Device) continue;
    auto what = [&] { return "dispatch of @" + kernel.name() + ", argument " + std::to_string(i); };
    if (Status s = useAs(args[i].buffer, site, what); !s) return s;
  }
  return inner_.dispatch(kernel, groups, args, site);
}

Status CheckedDevice::checkLeaks(std::string_view function, std::span<const uint64_t> returned) const {
  std::vector<const Record*> leaked;
  auto consider = [&](uint64_t handle, const Record& r) {
    if (r.state != State::Unknown && r.state != State::Freed &&
        std::find(returned.begin(), returned.end(), handle) == returned.end())
      leaked.push_back(&r);
  };
  if (live_ == 0) return Status::ok();
  for (uint64_t i = 0; i < dense_.size(); ++i) consider(base_ + i, dense_[i]);
  for (const auto& [handle, r] : sparse_) consider(handle, r);
  if (leaked.empty()) return Status::ok();
  std::sort(leaked.begin(), leaked.end(), [](const Record* a, const Record* b) { return a->order < b->order; });
  const Record& first = *leaked.front();
  std::string msg = "leak: " + describe(first) + " (" + std::to_string(first.count) + " x " +
                    first.elem->str() + ") was never freed";
  msg += first.state == State::InUse ? " (last used " + at(first.lastUse) + ")" : " (and never used)";
  if (!function.empty()) msg += " when @" + std::string(function) + " returned";
  if (leaked.size() > 1) {
    msg += "; " + std::to_string(leaked.size() - 1) + " more leaked, allocated";
    for (size_t i = 1; i < leaked.size() && i <= 4; ++i) msg += (i > 1 ? ", " : " at ") + place(leaked[i]->allocSite);
    if (leaked.size() > 5) msg += ", ...";
  }
  return Error{first.allocSite, msg};
}

}  // namespace eph::runtime
