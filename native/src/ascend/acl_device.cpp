// AclDeviceApi: the ACL side of ascend::DeviceScope (see acl_device.hpp for the rules).
#include "acl_device.hpp"

#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "../core/thread_object.hpp"

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

// Reads and drops the thread's error text of a call whose error code is an answer (no
// context), so that it is neither reported nor kept as a failure's text.
void discardAclError(const AclApi& api) {
  if (api.getRecentErrMsg != nullptr) api.getRecentErrMsg();
}

}  // namespace

constexpr aclError AclDeviceApi::kSuccess;

bool AclDeviceApi::contextCalls() const {
  return api_.getCurrentContext != nullptr && api_.setCurrentContext != nullptr;
}

aclError AclDeviceApi::currentContext(Context* out) const {
  *out = nullptr;
  const aclError e = api_.getCurrentContext(out);
  if (e == ACL_ERROR_RT_CONTEXT_NULL) {  // a thread with no context: an answer, not a failure
    discardAclError(api_);
    *out = nullptr;
    return ACL_SUCCESS;
  }
  return e;
}

aclError AclDeviceApi::primaryContext(int device, Context* out) const {
  // This thread's last answer first: contexts are cached for the process and never replaced,
  // so the common case (an executor's device, call after call) takes no lock.
  thread_local const AclApi* lastApi = nullptr;
  thread_local int lastDevice = -1;
  thread_local aclrtContext lastContext = nullptr;
  if (device >= 0 && lastApi == &api_ && lastDevice == device) {
    *out = lastContext;
    return ACL_SUCCESS;
  }
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
    lastApi = &api_;
    lastDevice = device;
    lastContext = it->second;
    return ACL_SUCCESS;
  }
  Context saved = nullptr;
  aclError e = currentContext(&saved);
  if (e != ACL_SUCCESS) return e;
  // Once per device: binds (creating) its default context. A failed call may still have
  // changed the thread's context (the runtime binds before it checks), so the restore below
  // runs whatever happens. (If aclrtGetCurrentContext fails right after a successful
  // aclrtSetDevice, nothing is cached and a later call takes another reference: a runtime
  // failing that way has worse problems.)
  e = api_.setDevice(device);
  Context context = nullptr;
  if (e == ACL_SUCCESS) e = api_.getCurrentContext(&context);
  if (e == ACL_SUCCESS && context == nullptr) e = ACL_ERROR_RT_CONTEXT_NULL;
  if (e == ACL_SUCCESS) {
    cache()[{&api_, device}] = context;
    firstCached().emplace(&api_, context);
    *out = context;
  }
  // The caller's context back (a thread that had none keeps the default context: ACL cannot
  // unbind). A failed restore is this call's failure: the thread is not as it was. The text of
  // the first failure is what the caller reports (clearAclError keeps it).
  if (e != ACL_SUCCESS) clearError();
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
  if (e == ACL_ERROR_RT_CONTEXT_NULL) {  // no context: no device, an answer
    discardAclError(api_);
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

namespace {
// The first text clearAclError took on this thread since resetClearedAclError (a DeviceScope
// resets it when it starts): a failed scope clears more than once, the first text explains.
// Kept in a ThreadObject (core/thread_object.hpp): a destructor that clears an error while the
// thread exits finds none and keeps no text.
struct ClearedTextTag;
using ClearedText = ThreadObject<std::string, ClearedTextTag>;
}  // namespace

void clearAclError(const AclApi& api) {
  const char* text = api.getRecentErrMsg != nullptr ? api.getRecentErrMsg() : nullptr;
  if (text == nullptr || text[0] == '\0') return;
  try {
    std::string* cleared = ClearedText::get();
    if (cleared != nullptr && cleared->empty()) *cleared = text;
  } catch (const std::bad_alloc&) {  // only an explanation is lost; destructors call this
  }
}

void resetClearedAclError() {
  std::string* cleared = ClearedText::existing();
  if (cleared != nullptr) cleared->clear();
}

std::string lastClearedAclError() {
  const std::string* cleared = ClearedText::existing();
  return cleared == nullptr ? std::string() : *cleared;
}

RelaxedCapture::RelaxedCapture(const AclApi& api) : api_(api) {
  if (api_.captureThreadExchangeMode == nullptr) return;
  exchanged_ = api_.captureThreadExchangeMode(&mode_) == ACL_SUCCESS;
  if (!exchanged_) clearAclError(api_);
}

// A failed restore leaves the thread RELAXED, which forbids nothing the thread's own mode allowed;
// nobody is there to be told, so its text is read (cleared) like a destructor's failure.
RelaxedCapture::~RelaxedCapture() {
  if (exchanged_ && api_.captureThreadExchangeMode(&mode_) != ACL_SUCCESS) clearAclError(api_);
}

}  // namespace ascend
}  // namespace kvio
