// AclDeviceApi: the ACL side of ascend::DeviceScope (see acl_device.hpp for the rules).
#include "acl_device.hpp"

#include <map>
#include <mutex>
#include <utility>

namespace kvio {
namespace ascend {
namespace {

std::mutex& cacheMutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}

// Default contexts by (table, device), in the order they were obtained; never destroyed (a
// table installed for tests stays alive until exit, like libascendcl.so's).
std::map<std::pair<const AclApi*, int>, aclrtContext>& cache() {
  static auto* c = new std::map<std::pair<const AclApi*, int>, aclrtContext>();
  return *c;
}
std::map<const AclApi*, aclrtContext>& firstCached() {
  static auto* c = new std::map<const AclApi*, aclrtContext>();
  return *c;
}

}  // namespace

constexpr aclError AclDeviceApi::kSuccess;

bool AclDeviceApi::contextCalls() const {
  return api_.getCurrentContext != nullptr && api_.setCurrentContext != nullptr;
}

aclError AclDeviceApi::currentContext(Context* out) const {
  *out = nullptr;
  const aclError e = api_.getCurrentContext(out);
  if (e == ACL_ERROR_RT_CONTEXT_NULL) {  // a thread with no context
    clearError();
    *out = nullptr;
    return ACL_SUCCESS;
  }
  return e;
}

aclError AclDeviceApi::primaryContext(int device, Context* out) const {
  std::lock_guard<std::mutex> lock(cacheMutex());
  if (device < 0) {
    auto first = firstCached().find(&api_);
    if (first == firstCached().end()) return ACL_ERROR_RT_INVALID_DEVICEID;
    *out = first->second;
    return ACL_SUCCESS;
  }
  auto it = cache().find({&api_, device});
  if (it != cache().end()) {
    *out = it->second;
    return ACL_SUCCESS;
  }
  Context saved = nullptr;
  aclError e = currentContext(&saved);
  if (e != ACL_SUCCESS) return e;
  e = api_.setDevice(device);  // once per device: binds (creating) its default context
  if (e != ACL_SUCCESS) return e;
  Context context = nullptr;
  e = api_.getCurrentContext(&context);
  if (e == ACL_SUCCESS && context == nullptr) e = ACL_ERROR_RT_CONTEXT_NULL;
  if (e == ACL_SUCCESS) {
    cache()[{&api_, device}] = context;
    firstCached().emplace(&api_, context);
    *out = context;
  }
  // The caller's context back (a thread that had none keeps the default context: ACL cannot
  // unbind). A failed restore is this call's failure: the thread is not as it was.
  if (saved != nullptr) {
    const aclError restored = api_.setCurrentContext(saved);
    if (e == ACL_SUCCESS) e = restored;
  }
  return e;
}

aclError AclDeviceApi::setCurrentContext(Context context) const {
  if (context == nullptr) return ACL_SUCCESS;  // no unbinding in ACL: the context stays bound
  return api_.setCurrentContext(context);
}

aclError AclDeviceApi::getDevice(int* device) const {
  *device = -1;  // unknown: the fallback then selects no device again afterwards
  if (api_.getDevice == nullptr) return ACL_SUCCESS;
  int32_t current = -1;
  const aclError e = api_.getDevice(&current);
  if (e == ACL_ERROR_RT_CONTEXT_NULL) {
    clearError();
    return ACL_SUCCESS;
  }
  if (e == ACL_SUCCESS) *device = current;
  return e;
}

aclError AclDeviceApi::setDevice(int device) const {
  return api_.setDevice(device);
}

void AclDeviceApi::clearError() const {
  clearAclError(api_);
}

void clearAclError(const AclApi& api) {
  if (api.getRecentErrMsg != nullptr) api.getRecentErrMsg();
}

}  // namespace ascend
}  // namespace kvio
