// The 'auto' io backend's choice and its calibration (auto_choice.hpp).
#include "auto_choice.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "error.hpp"
#include "planner.hpp"

namespace kvio {

AutoShape summarisePlan(const std::vector<kvio_copy2d>& plan) {
  AutoShape shape;
  for (const kvio_copy2d& c : plan) {
    shape.rows += c.height;
    shape.bytes += copyBytes(c);
    const bool oneCopy =
        c.height >= kMinRowsOfOneEngineCopy && c.src_pitch >= c.width && c.dst_pitch >= c.width;
    shape.engineCopies += oneCopy ? 1 : c.height;
  }
  shape.copies = static_cast<int64_t>(plan.size());
  return shape;
}

AutoPick chooseAuto(const AutoShape& shape, const AutoThresholds& calibration,
                    bool stagedAvailable) {
  if (shape.deviceIndices) return AutoPick::kKernel;
  if (shape.rows == 0) return AutoPick::kDirect;
  const uint64_t meanRow = shape.bytes / shape.rows;
  if (meanRow >= calibration.directRowBytes) return AutoPick::kDirect;
  if (shape.overlapsCompute && meanRow >= calibration.directRowBytesOverlap &&
      shape.bytes / std::max<uint64_t>(shape.engineCopies, 1) >=
          calibration.directCopyBytesOverlap) {
    return AutoPick::kDirect;
  }
  return chooseBelowCrossover(shape, calibration, stagedAvailable);
}

uint64_t directCrossover(bool overlapsCompute, const AutoThresholds& calibration) {
  return overlapsCompute ? std::min(calibration.directRowBytes, calibration.directRowBytesOverlap)
                         : calibration.directRowBytes;
}

AutoPick chooseBelowCrossover(const AutoShape& shape, const AutoThresholds& calibration,
                              bool stagedAvailable) {
  const bool hostDevice = shape.direction == AutoDirection::kHostToDevice ||
                          shape.direction == AutoDirection::kDeviceToHost;
  if (stagedAvailable && hostDevice && shape.bytes >= calibration.stagedMinBytes) {
    return AutoPick::kStaged;
  }
  return AutoPick::kKernel;
}

const char* autoPickName(AutoPick pick) {
  switch (pick) {
    case AutoPick::kKernel: return "kernel";
    case AutoPick::kDirect: return "direct";
    case AutoPick::kStaged: return "staged";
    case AutoPick::kCpu: return "cpu";
    case AutoPick::kAscend: return "kernel_ascend";
  }
  return "?";
}

AutoPick chooseWithoutGpu(int32_t srcMemory, int32_t dstMemory, bool ascendAvailable) {
  const bool npu = srcMemory == KVIO_MEMORY_ASCEND_DEVICE || dstMemory == KVIO_MEMORY_ASCEND_DEVICE;
  return npu && ascendAvailable ? AutoPick::kAscend : AutoPick::kCpu;
}

namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

struct Key {
  const char* name;
  uint64_t AutoCalibration::*field;
};
const Key kKeys[] = {
    {"direct_row_bytes", &AutoCalibration::directRowBytes},
    {"direct_row_bytes_overlap", &AutoCalibration::directRowBytesOverlap},
    {"direct_copy_bytes_overlap", &AutoCalibration::directCopyBytesOverlap},
    {"staged_min_bytes", &AutoCalibration::stagedMinBytes},
};
constexpr const char* kKeyList =
    "direct_row_bytes, direct_row_bytes_overlap, direct_copy_bytes_overlap, staged_min_bytes";

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

}  // namespace

bool parseBytes(const std::string& text, uint64_t* out) {
  if (text.find('\0') != std::string::npos) return false;  // strtoull would stop there
  if (text == "never") {
    *out = kNever;
    return true;
  }
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return false;
  const std::string suffix = end;
  int shift = 0;
  if (suffix == "K")
    shift = 10;
  else if (suffix == "M")
    shift = 20;
  else if (suffix == "G")
    shift = 30;
  else if (!suffix.empty())
    return false;
  if (shift > 0 && value > (kNever >> shift)) return false;
  *out = static_cast<uint64_t>(value) << shift;
  return true;
}

kvio_status parseAutoCalibration(const std::string& text, const std::string& source,
                                 AutoCalibration* out) {
  AutoCalibration result;
  result.source = source;
  bool seen[sizeof(kKeys) / sizeof(kKeys[0])] = {};
  const size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    const size_t lineStart = text.rfind('\n', nul);
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "auto calibration (%s), line %lld: a NUL byte (byte %zu of the line); the "
                "calibration is text",
                source.c_str(),
                static_cast<long long>(1 + std::count(text.begin(), text.begin() + nul, '\n')),
                lineStart == std::string::npos ? nul + 1 : nul - lineStart);
  }
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const std::string content = trim(line.substr(0, line.find('#')));
    if (content.empty()) continue;
    const size_t equals = content.find('=');
    if (equals == std::string::npos) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "auto calibration (%s), line %d: '%s' is not 'key = value' (keys: %s)",
                  source.c_str(), number, content.c_str(), kKeyList);
    }
    const std::string key = trim(content.substr(0, equals));
    const std::string value = trim(content.substr(equals + 1));
    size_t k = 0;
    while (k < sizeof(kKeys) / sizeof(kKeys[0]) && key != kKeys[k].name) ++k;
    if (k == sizeof(kKeys) / sizeof(kKeys[0])) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "auto calibration (%s), line %d: unknown key '%s' (keys: %s)", source.c_str(),
                  number, key.c_str(), kKeyList);
    }
    if (seen[k]) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "auto calibration (%s), line %d: '%s' is given twice", source.c_str(), number,
                  key.c_str());
    }
    seen[k] = true;
    if (!parseBytes(value, &(result.*kKeys[k].field))) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "auto calibration (%s), line %d: %s = '%s' is not a byte count (an integer with "
                  "an optional K, M or G suffix, or 'never')",
                  source.c_str(), number, key.c_str(), value.c_str());
    }
  }
  *out = std::move(result);
  return KVIO_STATUS_OK;
}

std::string formatAutoCalibration(const AutoCalibration& calibration) {
  std::string text = "# kvio auto calibration: " + calibration.source + "\n";
  for (const Key& key : kKeys) {
    const uint64_t value = calibration.*key.field;
    text +=
        std::string(key.name) + " = " + (value == kNever ? "never" : std::to_string(value)) + "\n";
  }
  return text;
}

namespace {

constexpr size_t kMaxCalibrationFileBytes = size_t{1} << 20;

const char* fileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

kvio_status unreadable(const char* path, const std::string& why) {
  return fail(KVIO_STATUS_INVALID_ARGUMENT,
              "KVIO_AUTO_CALIBRATION names '%s', which cannot be read: %s (unset it to use the "
              "defaults)",
              path, why.c_str());
}

// The calibration file's text: a regular file of at most kMaxCalibrationFileBytes. Opened
// without blocking (a FIFO would wait for a writer) and checked on the open descriptor, so
// the file read is the file checked.
kvio_status readCalibrationFile(const char* path, std::string* text) {
  const int fd = ::open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return unreadable(path, std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat status;
  if (::fstat(fd, &status) != 0) return unreadable(path, std::strerror(errno));
  if (!S_ISREG(status.st_mode)) {
    return unreadable(
        path, std::string("it is ") + fileTypeName(status.st_mode) + ", not a regular file");
  }
  const std::string limit = "more than a calibration file may hold (1 MiB)";
  if (static_cast<uint64_t>(status.st_size) > kMaxCalibrationFileBytes) {
    return unreadable(path, "it is " + std::to_string(status.st_size) + " bytes, " + limit);
  }
  std::string bytes(kMaxCalibrationFileBytes + 1, '\0');
  size_t size = 0;
  while (size < bytes.size()) {
    const ssize_t n = ::read(fd, &bytes[size], bytes.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return unreadable(path, std::strerror(errno));
    if (n == 0) break;
    size += static_cast<size_t>(n);
  }
  if (size > kMaxCalibrationFileBytes) return unreadable(path, "it has grown to " + limit);
  bytes.resize(size);
  *text = std::move(bytes);
  return KVIO_STATUS_OK;
}

}  // namespace

kvio_status initialAutoCalibration(AutoCalibration* out, bool* measure) {
  const char* path = std::getenv("KVIO_AUTO_CALIBRATION");
  const bool measuring = path != nullptr && std::string(path) == "measure";
  if (measure != nullptr) *measure = measuring;
  if (path == nullptr || *path == '\0' || measuring) {
    *out = AutoCalibration();
    return KVIO_STATUS_OK;
  }
  std::string text;
  KVIO_RETURN_IF_ERROR(readCalibrationFile(path, &text));
  return parseAutoCalibration(text, std::string("file ") + path, out);
}

}  // namespace kvio
