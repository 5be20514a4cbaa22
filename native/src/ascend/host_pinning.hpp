// Which host memory aclrtHostRegisterV2 may pin on this machine. CANN documents
// (hicann/runtime docs/api_docs/aclrtHostRegisterV2.md, the ptr parameter) that on an OS kernel
// of version 5.10 or lower pinning pageable memory (malloc, mmap) leads to errors, so there only
// memory from aclrtMallocHost may be registered; above 5.10 pageable memory may be too. kvio's
// wraps of KVIO_MEMORY_ASCEND_HOST_PINNED that need pinning (pageable memory, or memory the
// runtime cannot classify) are refused on such kernels; memory pinned already (aclrtMallocHost)
// is wrapped there too (ascend_memory.cpp). Tests fake the kernel's release
// (kvio_test_ascend_kernel_release).
#ifndef KVIO_ASCEND_HOST_PINNING_HPP_
#define KVIO_ASCEND_HOST_PINNING_HPP_

#include <cstdio>
#include <string>

namespace kvio {
namespace ascend {

/// Whether a kernel of this release (uname's "release", e.g. "6.1.0-13-amd64", "5.10.0-60.18.0")
/// pins pageable host memory for ACL: above 5.10. A release that does not start with
/// "major.minor" is taken to (nothing says otherwise, and refusing would be a guess).
inline bool kernelPinsPageableMemory(const char* release) {
  int major = 0, minor = 0;
  if (release == nullptr || std::sscanf(release, "%d.%d", &major, &minor) != 2) return true;
  return major > 5 || (major == 5 && minor > 10);
}

/// The OS kernel's release (uname), or the one a test set; empty when uname fails.
std::string kernelRelease();
/// Tests only (kvio_test_ascend_kernel_release): kernelRelease() answers `release` from now on
/// (nullptr: uname's again).
void setKernelReleaseForTesting(const char* release);

}  // namespace ascend
}  // namespace kvio

#endif  // KVIO_ASCEND_HOST_PINNING_HPP_
