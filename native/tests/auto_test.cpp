// The 'auto' io backend's choice on the host: the pure function on every branch and at every
// boundary, the calibration format (parse, errors, round trip, the environment variable), and
// the auto executor's memory rule (the union of its candidates'). The dispatch of real
// transfers is in auto_dispatch_test.cpp.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "auto_stand.hpp"
#include "core/auto_choice.hpp"
#include "core/auto_executor.hpp"
#include "core/backends.hpp"
#include "core/error.hpp"
#include "kvio/kvio.h"

namespace kvio_test {
namespace {

using kvio::AutoCalibration;
using kvio::AutoDirection;
using kvio::AutoPick;
using kvio::AutoShape;
using kvio::chooseAuto;

AutoShape shapeOf(uint64_t rowBytes, uint64_t rows, AutoDirection direction, bool overlaps) {
  AutoShape s;
  s.bytes = rowBytes * rows;
  s.rows = rows;
  s.copies = 1;
  s.engineCopies = rows;  // scattered rows: one 1-D engine copy each
  s.direction = direction;
  s.overlapsCompute = overlaps;
  return s;
}

constexpr AutoDirection kH2D = AutoDirection::kHostToDevice;

TEST(AutoChoice, DefaultsAreTheDocumentedH200Crossovers) {
  const AutoCalibration c;
  EXPECT_EQ(c.directRowBytes, 256u * 1024);
  EXPECT_EQ(c.directRowBytesOverlap, 2u * 1024);
  EXPECT_EQ(c.directCopyBytesOverlap, 32u * 1024);
  EXPECT_EQ(c.stagedMinBytes, UINT64_MAX);  // never until staged has GPU figures
  EXPECT_EQ(c.source, "defaults (H200 figures)");
}

TEST(AutoChoice, DeviceIndicesGoToTheKernelWhateverTheRows) {
  AutoShape s = shapeOf(1 << 20, 64, kH2D, true);
  s.deviceIndices = true;
  EXPECT_EQ(chooseAuto(s, AutoCalibration(), true), AutoPick::kKernel);
}

TEST(AutoChoice, NoRowsGoToDirect) {
  EXPECT_EQ(chooseAuto(shapeOf(0, 0, kH2D, false), AutoCalibration(), true), AutoPick::kDirect);
}

TEST(AutoChoice, IdleCrossoverBoundary) {
  const AutoCalibration c;
  EXPECT_EQ(chooseAuto(shapeOf(c.directRowBytes - 1, 100, kH2D, false), c, false),
            AutoPick::kKernel);
  EXPECT_EQ(chooseAuto(shapeOf(c.directRowBytes, 100, kH2D, false), c, false), AutoPick::kDirect);
  EXPECT_EQ(chooseAuto(shapeOf(256, 1000, kH2D, false), c, false), AutoPick::kKernel);
}

// Marked, scattered rows (one engine copy each): bytes per engine copy decide.
TEST(AutoChoice, OverlapCrossoverBoundaryOnScatteredRows) {
  const AutoCalibration c;
  EXPECT_EQ(chooseAuto(shapeOf(c.directCopyBytesOverlap - 1, 100, kH2D, true), c, false),
            AutoPick::kKernel);
  EXPECT_EQ(chooseAuto(shapeOf(c.directCopyBytesOverlap, 100, kH2D, true), c, false),
            AutoPick::kDirect);
  // The same 16 KiB rows without the mark stay on the kernel.
  EXPECT_EQ(chooseAuto(shapeOf(c.directCopyBytesOverlap, 100, kH2D, false), c, false),
            AutoPick::kKernel);
}

// Marked rows carried as 2-D copies: the row floor and the bytes per engine copy both decide.
TEST(AutoChoice, OverlapWeighsBytesPerEngineCopyAndTheRowFloor) {
  const AutoCalibration c;
  AutoShape s = shapeOf(2048, 64 * 128, kH2D, true);  // 128 copies of 64 rows of 2 KiB
  s.engineCopies = 128;
  EXPECT_EQ(chooseAuto(s, c, false), AutoPick::kDirect);
  s.overlapsCompute = false;
  EXPECT_EQ(chooseAuto(s, c, false), AutoPick::kKernel);
  s = shapeOf(c.directRowBytesOverlap - 1, 64 * 128, kH2D, true);  // rows below the floor
  s.engineCopies = 128;
  EXPECT_EQ(chooseAuto(s, c, false), AutoPick::kKernel);
  s = shapeOf(2048, 15, kH2D, true);  // 30 KiB in one 2-D copy: below 32 KiB a copy
  s.engineCopies = 1;
  EXPECT_EQ(chooseAuto(s, c, false), AutoPick::kKernel);
  s = shapeOf(2048, 16, kH2D, true);  // 32 KiB in one copy
  s.engineCopies = 1;
  EXPECT_EQ(chooseAuto(s, c, false), AutoPick::kDirect);
  s.engineCopies = 0;  // no estimate (a shape built by hand): taken as one copy, never a division
  EXPECT_EQ(chooseAuto(s, c, false), AutoPick::kDirect);
}

// The mark never moves a transfer away from direct: rows at the idle crossover are direct
// marked too, whatever the overlap keys say.
TEST(AutoChoice, TheMarkNeverTakesDirectAway) {
  AutoCalibration c;
  c.directRowBytesOverlap = UINT64_MAX;
  c.directCopyBytesOverlap = UINT64_MAX;
  EXPECT_EQ(chooseAuto(shapeOf(c.directRowBytes, 4, kH2D, true), c, false), AutoPick::kDirect);
  EXPECT_EQ(kvio::directCrossover(true, c), c.directRowBytes);
  EXPECT_EQ(kvio::directCrossover(false, AutoCalibration()), AutoCalibration().directRowBytes);
  EXPECT_EQ(kvio::directCrossover(true, AutoCalibration()),
            AutoCalibration().directRowBytesOverlap);
}

// summarisePlan's engine copies: a copy of at least kMinRowsOfOneEngineCopy rows whose pitches
// hold its width is one 2-D engine copy; fewer rows (two scattered tokens the planner joined),
// one row, or pitches narrower than the width (no planner plan has them), one copy per row.
TEST(AutoChoice, SummarisedEngineCopies) {
  static_assert(kvio::kMinRowsOfOneEngineCopy == 8, "the cases below are laid out for 8");
  std::vector<kvio_copy2d> plan(5);
  plan[0] = kvio_copy2d{0, 0, 2048, 64, 8192, 2048};  // a page of one layer: one 2-D copy
  plan[1] = kvio_copy2d{0, 0, 2048, 8, 8192, 2048};   // 8 rows: one
  plan[2] = kvio_copy2d{0, 0, 2048, 7, 8192, 2048};   // 7 rows: 7
  plan[3] = kvio_copy2d{0, 0, 4096, 1, 4096, 4096};   // one row
  plan[4] = kvio_copy2d{0, 0, 4096, 9, 4096, 1024};   // a pitch below the width: 9 rows
  const AutoShape s = kvio::summarisePlan(plan);
  EXPECT_EQ(s.rows, 89u);
  EXPECT_EQ(s.bytes, 2048u * 79 + 4096 * 10);
  EXPECT_EQ(s.copies, 5);
  EXPECT_EQ(s.engineCopies, 1u + 1 + 7 + 1 + 9);
}

TEST(AutoChoice, MeanRowDecidesNotTheLargestRow) {
  AutoShape s;
  s.bytes = 64 * 1024 + 256;  // one 64 KiB row and one 256 B row: mean below 64 KiB
  s.rows = 2;
  EXPECT_EQ(chooseAuto(s, AutoCalibration(), false), AutoPick::kKernel);
}

TEST(AutoChoice, StagedOnlyWhenAvailableHostDeviceAndLargeEnough) {
  EXPECT_EQ(chooseAuto(shapeOf(256, 1 << 20, kH2D, false), AutoCalibration(), true),
            AutoPick::kKernel);  // the default calibration never picks staged
  AutoCalibration c;
  c.stagedMinBytes = 4 << 20;
  const uint64_t rows = c.stagedMinBytes / 256;
  for (AutoDirection d : {AutoDirection::kHostToDevice, AutoDirection::kDeviceToHost}) {
    EXPECT_EQ(chooseAuto(shapeOf(256, rows, d, false), c, true), AutoPick::kStaged);
    EXPECT_EQ(chooseAuto(shapeOf(256, rows, d, true), c, true), AutoPick::kStaged);
    EXPECT_EQ(chooseAuto(shapeOf(256, rows, d, false), c, false), AutoPick::kKernel);
  }
  AutoShape justBelow = shapeOf(256, rows, kH2D, false);
  justBelow.bytes -= 1;
  EXPECT_EQ(chooseAuto(justBelow, c, true), AutoPick::kKernel);
  EXPECT_EQ(chooseAuto(shapeOf(256, rows, AutoDirection::kDeviceToDevice, false), c, true),
            AutoPick::kKernel);
  EXPECT_EQ(chooseAuto(shapeOf(256, rows, AutoDirection::kHostToHost, false), c, true),
            AutoPick::kKernel);
  // Rows at the crossover go to direct even when staged would take the size.
  EXPECT_EQ(chooseAuto(shapeOf(c.directRowBytes, 1024, kH2D, false), c, true), AutoPick::kDirect);
}

TEST(AutoChoice, CalibrationMovesTheCrossover) {
  AutoCalibration c;
  c.directRowBytes = 1024;
  EXPECT_EQ(chooseAuto(shapeOf(1024, 10, kH2D, false), c, false), AutoPick::kDirect);
  c.directRowBytes = UINT64_MAX;  // never
  EXPECT_EQ(chooseAuto(shapeOf(1 << 30, 4, kH2D, false), c, false), AutoPick::kKernel);
}

TEST(AutoChoice, SummarisesAPlan) {
  const std::vector<kvio_copy2d> plan{{
                                          0,
                                          0,
                                          256,
                                          4,
                                          512,
                                          512,
                                      },
                                      {0, 0, 1024, 1, 0, 0}};
  const AutoShape s = kvio::summarisePlan(plan);
  EXPECT_EQ(s.rows, 5u);
  EXPECT_EQ(s.bytes, 2048u);
  EXPECT_EQ(s.copies, 2);
}

TEST(AutoChoice, PickNames) {
  EXPECT_STREQ(kvio::autoPickName(AutoPick::kKernel), "kernel");
  EXPECT_STREQ(kvio::autoPickName(AutoPick::kDirect), "direct");
  EXPECT_STREQ(kvio::autoPickName(AutoPick::kStaged), "staged");
  EXPECT_STREQ(kvio::autoPickName(AutoPick::kCpu), "cpu");
}

// ---- the calibration format ----

// The submit path reads the thresholds without a lock while set_calibration stores new ones:
// every read must be one stored set whole. Two sets whose values differ in every field, stored
// alternately by one writer while readers load (until they have loaded a few thousand times);
// a mix (say A's direct_row_bytes with B's staged_min_bytes) would fail. The last store is what
// a later read sees.
TEST(AutoPublishedThresholds, ReadersSeeOneStoredSetWholeWhileAWriterStores) {
  kvio::AutoThresholds a, b;
  a.directRowBytes = 1;
  a.directRowBytesOverlap = 2;
  a.directCopyBytesOverlap = 4;
  a.stagedMinBytes = 3;
  b.directRowBytes = 1u << 20;
  b.directRowBytesOverlap = 1u << 21;
  b.directCopyBytesOverlap = 1u << 22;
  b.stagedMinBytes = UINT64_MAX;
  kvio::PublishedThresholds published(a);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> mixed{0}, sawA{0}, sawB{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const kvio::AutoThresholds t = published.load();
        const bool isA = t.directRowBytes == a.directRowBytes &&
                         t.directRowBytesOverlap == a.directRowBytesOverlap &&
                         t.directCopyBytesOverlap == a.directCopyBytesOverlap &&
                         t.stagedMinBytes == a.stagedMinBytes;
        const bool isB = t.directRowBytes == b.directRowBytes &&
                         t.directRowBytesOverlap == b.directRowBytesOverlap &&
                         t.directCopyBytesOverlap == b.directCopyBytesOverlap &&
                         t.stagedMinBytes == b.stagedMinBytes;
        (isA ? sawA : isB ? sawB : mixed).fetch_add(1);
      }
    });
  }
  // At least 200000 stores, and on until the readers have loaded 3000 times meanwhile: a loaded
  // machine may not schedule them during a fixed number of stores (a count, not a time). Bounded
  // (2^30 stores, seconds) so that readers that never run fail the assertions below, not ctest's
  // timeout.
  for (int64_t i = 0;
       i < (int64_t{1} << 30) && (i < 200000 || sawA.load() + sawB.load() + mixed.load() < 3000);
       ++i) {
    published.store(i % 2 == 0 ? b : a);
  }
  published.store(b);
  stop.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(mixed.load(), 0);
  EXPECT_GT(sawA.load() + sawB.load(), 0);
  const kvio::AutoThresholds last = published.load();
  EXPECT_EQ(last.directRowBytes, b.directRowBytes);
  EXPECT_EQ(last.directRowBytesOverlap, b.directRowBytesOverlap);
  EXPECT_EQ(last.directCopyBytesOverlap, b.directCopyBytesOverlap);
  EXPECT_EQ(last.stagedMinBytes, b.stagedMinBytes);
}

TEST(AutoCalibrationFormat, ParsesSuffixesNeverCommentsAndLeavesOmittedKeysAtDefault) {
  AutoCalibration c;
  ASSERT_EQ(kvio::parseAutoCalibration("# measured\n  direct_row_bytes = 32K  # comment\n\n"
                                       "staged_min_bytes=never\r\n",
                                       "test", &c),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(c.directRowBytes, 32u * 1024);
  EXPECT_EQ(c.stagedMinBytes, UINT64_MAX);
  EXPECT_EQ(c.directRowBytesOverlap, AutoCalibration().directRowBytesOverlap);
  EXPECT_EQ(c.source, "test");
  ASSERT_EQ(
      kvio::parseAutoCalibration(
          "direct_row_bytes_overlap = 2M\ndirect_copy_bytes_overlap = 3K\nstaged_min_bytes = 1G\n",
          "t", &c),
      KVIO_STATUS_OK);
  EXPECT_EQ(c.directRowBytesOverlap, 2u << 20);
  EXPECT_EQ(c.directCopyBytesOverlap, 3u << 10);
  EXPECT_EQ(c.stagedMinBytes, 1u << 30);
  EXPECT_EQ(c.directRowBytes, AutoCalibration().directRowBytes);  // not kept from before
}

TEST(AutoCalibrationFormat, RoundTrips) {
  AutoCalibration c;
  c.directRowBytes = 12345;
  c.directRowBytesOverlap = UINT64_MAX;
  c.directCopyBytesOverlap = 777;
  c.stagedMinBytes = 0;
  c.source = "mine";
  const std::string text = kvio::formatAutoCalibration(c);
  EXPECT_NE(text.find("# kvio auto calibration: mine"), std::string::npos) << text;
  AutoCalibration back;
  ASSERT_EQ(kvio::parseAutoCalibration(text, "again", &back), KVIO_STATUS_OK) << text;
  EXPECT_EQ(back.directRowBytes, 12345u);
  EXPECT_EQ(back.directRowBytesOverlap, UINT64_MAX);
  EXPECT_EQ(back.directCopyBytesOverlap, 777u);
  EXPECT_EQ(back.stagedMinBytes, 0u);
}

TEST(AutoCalibrationFormat, ErrorsNameTheLineAndLeaveTheOutputUnchanged) {
  const struct {
    const char* text;
    const char* expected;
  } cases[] = {
      {"direct_row_bytes = 1\nbogus = 3\n", "line 2: unknown key 'bogus'"},
      {"direct_row_bytes = 1\ndirect_row_bytes = 2\n", "line 2: 'direct_row_bytes' is given twice"},
      {"direct_row_bytes = -1\n", "line 1: direct_row_bytes = '-1' is not a byte count"},
      {"direct_row_bytes = 4KB\n", "'4KB' is not a byte count"},
      {"direct_row_bytes = 99999999999999999999\n", "is not a byte count"},
      {"direct_row_bytes = 17179869184G\n", "is not a byte count"},  // overflows 64 bits
      {"direct_row_bytes =\n", "'' is not a byte count"},
      {"\n\ndirect_row_bytes 5\n", "line 3: 'direct_row_bytes 5' is not 'key = value'"},
  };
  for (const auto& c : cases) {
    AutoCalibration out;
    out.directRowBytes = 7;
    EXPECT_EQ(kvio::parseAutoCalibration(c.text, "src", &out), KVIO_STATUS_INVALID_ARGUMENT)
        << c.text;
    EXPECT_NE(std::string(kvio_last_error()).find(c.expected), std::string::npos)
        << kvio_last_error();
    EXPECT_NE(std::string(kvio_last_error()).find("auto calibration (src)"), std::string::npos);
    EXPECT_EQ(out.directRowBytes, 7u);
  }
}

// A NUL byte anywhere in the text (a value, a comment, a key) is refused with its line: the
// value "5\0garbage" was read as 5.
TEST(AutoCalibrationFormat, NulBytesAreRefusedWithTheirLine) {
  using namespace std::string_literals;
  const struct {
    std::string text;
    const char* expected;
  } cases[] = {
      {"direct_row_bytes = 1\nstaged_min_bytes = 5\0garbage\n"s,
       "line 2: a NUL byte (byte 21 of the line)"},
      {"# a comment\0\ndirect_row_bytes = 1\n"s, "line 1: a NUL byte (byte 12"},
      {"\0"s, "line 1: a NUL byte (byte 1 of the line)"},
  };
  for (const auto& c : cases) {
    AutoCalibration out;
    out.stagedMinBytes = 7;
    EXPECT_EQ(kvio::parseAutoCalibration(c.text, "src", &out), KVIO_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kvio_last_error()).find(c.expected), std::string::npos)
        << kvio_last_error();
    EXPECT_NE(std::string(kvio_last_error()).find("auto calibration (src)"), std::string::npos);
    EXPECT_EQ(out.stagedMinBytes, 7u);
  }
  uint64_t value = 3;
  EXPECT_FALSE(kvio::parseBytes("5\0garbage"s, &value));
  EXPECT_EQ(value, 3u);
}

// What KVIO_AUTO_CALIBRATION names must be a regular file of at most 1 MiB: a directory (which
// opens on Linux and read as empty), a device (/dev/null read as empty; /dev/zero never ends),
// a FIFO (which blocked the executor's creation until a writer came) and a larger file are
// refused, INVALID_ARGUMENT saying what it is. A file of exactly 1 MiB is read.
TEST(AutoCalibrationFormat, EnvironmentVariableMustNameARegularFileOfAtMostOneMiB) {
  const std::string dir = ::testing::TempDir() + "kvio_auto_calibration_dir";
  const std::string fifo = ::testing::TempDir() + "kvio_auto_calibration_fifo";
  const std::string big = ::testing::TempDir() + "kvio_auto_calibration_big.txt";
  ::rmdir(dir.c_str());
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Without the non-blocking open the FIFO case waits for a writer: this one comes after 10 s,
  // so that case fails rather than hangs.
  std::mutex mutex;
  std::condition_variable doneChanged;
  bool done = false;
  std::thread writer([&] {
    std::unique_lock<std::mutex> lock(mutex);
    if (doneChanged.wait_for(lock, std::chrono::seconds(10), [&] { return done; })) return;
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd >= 0) ::close(fd);
  });
  const struct {
    std::string path;
    const char* says;
  } cases[] = {
      {dir, "it is a directory, not a regular file"},
      {fifo, "it is a FIFO, not a regular file"},
      {"/dev/null", "it is a character device, not a regular file"},
  };
  AutoCalibration c;
  for (const auto& k : cases) {
    SCOPED_TRACE(k.path);
    ASSERT_EQ(setenv("KVIO_AUTO_CALIBRATION", k.path.c_str(), 1), 0);
    c.directRowBytes = 7;
    EXPECT_EQ(kvio::initialAutoCalibration(&c), KVIO_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(
        std::string(kvio_last_error())
            .find("KVIO_AUTO_CALIBRATION names '" + k.path + "', which cannot be read: " + k.says),
        std::string::npos)
        << kvio_last_error();
    EXPECT_EQ(c.directRowBytes, 7u);
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  doneChanged.notify_all();
  writer.join();
  // 1 MiB of comment lines (64 bytes each), then one byte more.
  const std::string line = "#" + std::string(62, '.') + "\n";
  std::string text;
  while (text.size() < (size_t{1} << 20)) text += line;
  ASSERT_EQ(text.size(), size_t{1} << 20);
  for (const bool over : {false, true}) {
    std::FILE* f = std::fopen(big.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    if (over) std::fputc('#', f);
    std::fclose(f);
    ASSERT_EQ(setenv("KVIO_AUTO_CALIBRATION", big.c_str(), 1), 0);
    if (over) {
      EXPECT_EQ(kvio::initialAutoCalibration(&c), KVIO_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(std::string(kvio_last_error())
                    .find("it is 1048577 bytes, more than a calibration file may hold (1 MiB)"),
                std::string::npos)
          << kvio_last_error();
    } else {
      EXPECT_EQ(kvio::initialAutoCalibration(&c), KVIO_STATUS_OK) << kvio_last_error();
      EXPECT_EQ(c.source, "file " + big);
    }
  }
  ASSERT_EQ(unsetenv("KVIO_AUTO_CALIBRATION"), 0);
  std::remove(big.c_str());
  std::remove(fifo.c_str());
  ::rmdir(dir.c_str());
}

TEST(AutoCalibrationFormat, EnvironmentVariableNamesTheFile) {
  const std::string path = ::testing::TempDir() + "kvio_auto_calibration.txt";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("direct_row_bytes = 128K\n", f);
  std::fclose(f);
  ASSERT_EQ(setenv("KVIO_AUTO_CALIBRATION", path.c_str(), 1), 0);
  AutoCalibration c;
  EXPECT_EQ(kvio::initialAutoCalibration(&c), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(c.directRowBytes, 128u * 1024);
  EXPECT_EQ(c.source, "file " + path);
  ASSERT_EQ(setenv("KVIO_AUTO_CALIBRATION", (path + ".missing").c_str(), 1), 0);
  EXPECT_EQ(kvio::initialAutoCalibration(&c), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("cannot be read"), std::string::npos);
  // ... and an 'auto' executor cannot be created with it.
  uint64_t executor = 0;
  EXPECT_EQ(kvio_executor_create(KVIO_BACKEND_AUTO, 1, &executor), KVIO_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(unsetenv("KVIO_AUTO_CALIBRATION"), 0);
  EXPECT_EQ(kvio::initialAutoCalibration(&c), KVIO_STATUS_OK);
  EXPECT_EQ(c.source, "defaults (H200 figures)");
  std::remove(path.c_str());
}

TEST(AutoExecutorMemory, AcceptsWhatAnyCandidateAcceptsAndSaysWhyNot) {
  int jobs = 0;
  std::array<kvio::AutoExecutor::Candidate, kvio::kAutoPicks> c;
  c[0] = {KVIO_BACKEND_KERNEL, std::make_unique<Stand>(&jobs, KVIO_MEMORY_HOST)};
  c[1] = {KVIO_BACKEND_DIRECT, std::make_unique<Stand>(&jobs, KVIO_MEMORY_HOST_PINNED)};
  kvio::AutoExecutor executor(std::move(c), AutoCalibration());
  const kvio::MemoryPlace host{KVIO_MEMORY_HOST, -1}, pinned{KVIO_MEMORY_HOST_PINNED, -1};
  EXPECT_EQ(executor.acceptMemory(host, host), KVIO_STATUS_OK);      // direct takes it
  EXPECT_EQ(executor.acceptMemory(pinned, pinned), KVIO_STATUS_OK);  // kernel takes it
  EXPECT_EQ(executor.acceptMemory(host, pinned), KVIO_STATUS_UNSUPPORTED);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("the 'auto' io backend"), std::string::npos) << message;
  EXPECT_NE(message.find("stand refuses kind 0"), std::string::npos) << message;
  EXPECT_NE(executor.setKernelLaunch(4, 4), KVIO_STATUS_OK);  // a stand is no kernel executor
}

TEST(AutoExecutorMemory, OnCpuAloneRefusesDeviceIndicesAndLaunchShapes) {
  int jobs = 0;
  std::array<kvio::AutoExecutor::Candidate, kvio::kAutoPicks> c;
  c[static_cast<size_t>(kvio::AutoPick::kCpu)] = {KVIO_BACKEND_CPU,
                                                  std::make_unique<Stand>(&jobs, KVIO_MEMORY_HOST)};
  kvio::AutoExecutor executor(std::move(c), AutoCalibration());
  const int64_t indices[1] = {0};
  EXPECT_EQ(executor.checkDeviceIndices(indices, indices, 1), KVIO_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(kvio_last_error()).find("runs cpu, no GPU or NPU"), std::string::npos);
  EXPECT_EQ(executor.setKernelLaunch(4, 4), KVIO_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(kvio_last_error()).find("no launch shape"), std::string::npos);
  EXPECT_EQ(jobs, 0);
}

// A candidate that keeps the jobs it is given and counts the calls asking it to let go of the
// finished ones (the CUDA executors retire jobs only in their own submit or drain).
class Retiring : public kvio::Executor {
 public:
  explicit Retiring(int* retires) : retires_(retires) {}
  int32_t threads() const override { return 1; }
  void submit(std::shared_ptr<kvio::Job> job) override { jobs.push_back(std::move(job)); }
  void drain() override {}
  void retireFinished() override { ++*retires_; }
  kvio_status acceptMemory(kvio::MemoryPlace, kvio::MemoryPlace) const override {
    return KVIO_STATUS_OK;
  }
  std::vector<std::shared_ptr<kvio::Job>> jobs;

 private:
  int* retires_;
};

// Every job auto gives one candidate asks the others to retire what they finished: a candidate
// auto stops choosing would otherwise keep its last jobs' plans, events and staging until the
// executor closes. The chosen one is not asked (its submit retires).
TEST(AutoExecutorRetire, CandidatesNotChosenRetireTheirFinishedJobs) {
  std::array<int, 3> retires{};
  std::array<Retiring*, 3> stand{};
  std::array<kvio::AutoExecutor::Candidate, kvio::kAutoPicks> c;
  const int32_t backends[3] = {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED};
  for (size_t i = 0; i < 3; ++i) {
    auto executor = std::make_unique<Retiring>(&retires[i]);
    stand[i] = executor.get();
    c[i] = {backends[i], std::move(executor)};  // AutoPick order: kernel, direct, staged
  }
  kvio::AutoExecutor executor(std::move(c), AutoCalibration());
  for (size_t chosen = 0; chosen < 3; ++chosen) {
    auto job = std::make_shared<kvio::Job>();
    job->ioBackend = backends[chosen];
    const std::array<int, 3> before = retires;
    executor.submit(job);
    EXPECT_EQ(stand[chosen]->jobs.size(), 1u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(retires[i] - before[i], i == chosen ? 0 : 1)
          << "candidate " << i << ", chosen " << chosen;
    }
  }
}

// A candidate's retirement that throws (out of memory reading a finished job's outcome) comes after
// the chosen candidate took the job: auto's submit must not throw then, or the core would take the
// transfer for not queued (unregister it, complete it and drop its pools) while its copies run.
class ThrowingRetire : public Retiring {
 public:
  using Retiring::Retiring;
  void retireFinished() override {
    Retiring::retireFinished();
    throw std::bad_alloc();
  }
};

TEST(AutoExecutorRetire, ARetirementThatThrowsDoesNotUndoTheSubmit) {
  std::array<int, 3> retires{};
  std::array<kvio::AutoExecutor::Candidate, kvio::kAutoPicks> c;
  auto chosen = std::make_unique<Retiring>(&retires[0]);
  Retiring* const taker = chosen.get();
  c[0] = {KVIO_BACKEND_KERNEL, std::move(chosen)};
  c[1] = {KVIO_BACKEND_DIRECT, std::make_unique<ThrowingRetire>(&retires[1])};
  c[2] = {KVIO_BACKEND_STAGED, std::make_unique<Retiring>(&retires[2])};
  kvio::AutoExecutor executor(std::move(c), AutoCalibration());
  auto job = std::make_shared<kvio::Job>();
  job->ioBackend = KVIO_BACKEND_KERNEL;
  EXPECT_NO_THROW(executor.submit(job));
  EXPECT_EQ(taker->jobs.size(), 1u);
  EXPECT_EQ(retires[1], 1);
  EXPECT_EQ(retires[2], 1) << "the candidate after the one that threw is still asked";
}

// ---- the first-use measurement (KVIO_AUTO_CALIBRATION=measure) ----

// The sweep times scattered rows: each of its rows must be one copy of the plan (one engine copy
// for direct), not rows joined into a 2-D copy, the copy engine's fast case (every other slot
// in increasing order plans as one 2-D copy).
TEST(AutoMeasure, TheSweepsRowsAreOneEngineCopyEach) {
  for (const int64_t count : {8, 64, 4096}) {
    SCOPED_TRACE(count);
    const kvio_pool_spec spec{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 1, 2 * count, 1, 1, 4096};
    uint64_t a = 0, b = 0;
    ASSERT_EQ(kvio_pool_allocate(&spec, &a), KVIO_STATUS_OK) << kvio_last_error();
    ASSERT_EQ(kvio_pool_allocate(&spec, &b), KVIO_STATUS_OK) << kvio_last_error();
    const auto planOf = [&](const std::vector<int64_t>& slots) {
      const kvio_transfer_desc desc{
          a, b, slots.data(), slots.data(), static_cast<int64_t>(slots.size()), 0, 0, 1};
      int64_t n = 0;
      EXPECT_EQ(kvio_plan(&desc, nullptr, 0, &n), KVIO_STATUS_OK) << kvio_last_error();
      std::vector<kvio_copy2d> plan(static_cast<size_t>(n));
      EXPECT_EQ(kvio_plan(&desc, plan.data(), n, &n), KVIO_STATUS_OK) << kvio_last_error();
      return plan;
    };
    const std::vector<int64_t> slots = kvio::autoSweepSlots(count);
    ASSERT_EQ(slots.size(), static_cast<size_t>(count));
    const std::vector<kvio_copy2d> plan = planOf(slots);
    EXPECT_EQ(plan.size(), static_cast<size_t>(count));
    EXPECT_EQ(kvio::summarisePlan(plan).engineCopies, static_cast<uint64_t>(count));
    std::vector<int64_t> ascending(slots.rbegin(), slots.rend());
    EXPECT_EQ(planOf(ascending).size(), 1u) << "rows at a constant step join into a 2-D copy";
    EXPECT_EQ(kvio_pool_close(a), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_pool_close(b), KVIO_STATUS_OK);
  }
}

TEST(AutoMeasure, CrossoverIsWhereDirectWinsFromThereOn) {
  using M = kvio::AutoMeasurement;
  constexpr uint64_t kNever = UINT64_MAX;
  EXPECT_EQ(kvio::autoCrossover({}), kNever);
  EXPECT_EQ(kvio::autoCrossover({{4096, 1, 2}, {8192, 1, 2}}), kNever);
  EXPECT_EQ(kvio::autoCrossover({{4096, 2, 1}, {8192, 2, 1}}), 4096u);
  EXPECT_EQ(kvio::autoCrossover({{4096, 1, 2}, {8192, 1, 1}, {16384, 2, 1}}), 8192u);  // a tie wins
  // Direct wins at 8 KiB, loses at 16 KiB, wins above: the crossover is above the loss.
  EXPECT_EQ(kvio::autoCrossover({{4096, 1, 2}, {8192, 2, 1}, {16384, 1, 2}, {32768, 2, 1}}),
            32768u);
  EXPECT_EQ(kvio::autoCrossover(std::vector<M>{{65536, 1, 2}, {131072, 1, 3}}), kNever);
  // Against a share of the kernel: direct at a third of its speed (3x its time) is enough for a
  // share of 0.17, a tenth is not; at exactly the share it counts (as a tie does).
  EXPECT_EQ(kvio::autoCrossover({{4096, 1, 10}, {8192, 1, 3}, {16384, 1, 2}}, 0.17), 8192u);
  EXPECT_EQ(kvio::autoCrossover({{4096, 1, 10}, {8192, 1, 3}, {16384, 1, 2}}), kNever);
  EXPECT_EQ(kvio::autoCrossover({{4096, 1, 4}, {8192, 1, 3}}, 0.25), 4096u);
}

/// A Stand whose jobs the test scripts: before each job, script(n, rowBytes) (n counts this
/// stand's jobs from 1; rowBytes is the width of the job's first planned copy, the sweep's row
/// size) says how many microseconds the job takes (the stand sleeps that long on the submitting
/// thread, inside the sweep's timing, then runs the job) or, when negative, that the job fails:
/// it completes with BACKEND_ERROR naming the job, nothing copied.
class ScriptedStand : public Stand {
 public:
  using Script = std::function<int64_t(int job, uint64_t rowBytes)>;
  ScriptedStand(const char* name, int* submitted, Script script)
      : Stand(submitted), name_(name), submitted_(submitted), script_(std::move(script)) {}
  void submit(std::shared_ptr<kvio::Job> job) override {
    const uint64_t rowBytes = job->plan.empty() ? 0 : job->plan.front().width;
    const int n = *submitted_ + 1;
    const int64_t micros = script_(n, rowBytes);
    if (micros < 0) {
      ++*submitted_;
      job->state->complete(
          KVIO_STATUS_BACKEND_ERROR,
          std::string("the ") + name_ + " stand fails its job " + std::to_string(n));
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(micros));
    Stand::submit(std::move(job));
  }

 private:
  const char* name_;
  int* submitted_;
  Script script_;
};

std::unique_ptr<kvio::Executor> standInAuto(int* kernelJobs, int* directJobs,
                                            ScriptedStand::Script kernel = nullptr,
                                            ScriptedStand::Script direct = nullptr) {
  const auto none = [](int, uint64_t) -> int64_t { return 0; };
  std::array<kvio::AutoExecutor::Candidate, kvio::kAutoPicks> c;
  c[0] = {KVIO_BACKEND_KERNEL,
          std::make_unique<ScriptedStand>("kernel", kernelJobs, kernel ? kernel : none)};
  c[1] = {KVIO_BACKEND_DIRECT,
          std::make_unique<ScriptedStand>("direct", directJobs, direct ? direct : none)};
  return std::make_unique<kvio::AutoExecutor>(std::move(c), AutoCalibration());
}

kvio::AutoExecutor* autoOf(const std::unique_ptr<kvio::Executor>& executor) {
  return static_cast<kvio::AutoExecutor*>(executor.get());
}

std::array<int64_t, 4> liveObjects() {
  std::array<int64_t, 4> counts{};
  EXPECT_EQ(kvio_debug_live_objects(counts.data()), KVIO_STATUS_OK);
  return counts;
}

// The sweep times each candidate on rows of 4 KiB to 256 KiB. Here the stand-ins' speed is the
// test's: below 32 KiB rows the kernel stand takes 0.3 ms a job and direct 30 ms, from 32 KiB on
// the other way round (100x apart: a loaded machine adds milliseconds, not a factor; under
// ThreadSanitizer on a busy 2-core machine a 0.3 ms job took 7 ms). So the crossover is exactly
// 32 KiB, and each figure in the source (GB/s of the best of three runs of 8 MiB, printed to
// 0.1) is at most 8 MiB / 30 ms = 0.28 GB/s for the slow candidate and at least twice that for
// the fast one. About 1 s in all.
TEST(AutoMeasure, SweepsBothCandidatesAndSetsTheCrossoverTheirSpeedsGive) {
  const auto before = liveObjects();
  constexpr uint64_t kCross = 32 << 10;
  constexpr int64_t kFastMicros = 300, kSlowMicros = 30000;
  int kernelJobs = 0, directJobs = 0;
  std::vector<uint64_t> kernelRows, directRows;
  std::unique_ptr<kvio::Executor> executor = standInAuto(
      &kernelJobs, &directJobs,
      [&](int, uint64_t row) -> int64_t {
        kernelRows.push_back(row);
        return row < kCross ? kFastMicros : kSlowMicros;
      },
      [&](int, uint64_t row) -> int64_t {
        directRows.push_back(row);
        return row < kCross ? kSlowMicros : kFastMicros;
      });
  constexpr uint64_t kBytesPerRun = 8 << 20;
  kvio::AutoMeasureTarget target{KVIO_MEMORY_HOST, KVIO_MEMORY_HOST, -1, kBytesPerRun};
  ASSERT_EQ(kvio::measureAutoCalibration(&executor, target), KVIO_STATUS_OK) << kvio_last_error();
  ASSERT_NE(executor, nullptr);
  // 7 row sizes, one untimed and three timed runs each, every job on rows of its size.
  const std::vector<uint64_t> sizes{4 << 10,  8 << 10,   16 << 10, 32 << 10,
                                    64 << 10, 128 << 10, 256 << 10};
  std::vector<uint64_t> expectedRows;
  for (uint64_t size : sizes) expectedRows.insert(expectedRows.end(), 4, size);
  EXPECT_EQ(kernelJobs, 28);
  EXPECT_EQ(directJobs, 28);
  EXPECT_EQ(kernelRows, expectedRows);
  EXPECT_EQ(directRows, expectedRows);
  const AutoCalibration c = autoOf(executor)->calibration();
  EXPECT_EQ(c.directRowBytes, kCross);
  EXPECT_EQ(c.directCopyBytesOverlap, kCross);  // direct 0.01x the kernel below: under 0.17x
  EXPECT_EQ(c.directRowBytesOverlap, AutoCalibration().directRowBytesOverlap);  // not measured
  EXPECT_EQ(c.stagedMinBytes, AutoCalibration().stagedMinBytes);
  // "... GB/s kernel/direct: 4K k/d 8K k/d ... 256K k/d", one pair per size, in order.
  const std::string head =
      "measured at first use on device -1, host to device, GB/s kernel/direct:";
  ASSERT_EQ(c.source.rfind(head, 0), 0u) << c.source;
  std::istringstream figures(c.source.substr(head.size()));
  const double slowBound = static_cast<double>(kBytesPerRun) / (kSlowMicros * 1e-6) * 1e-9;
  for (uint64_t size : sizes) {
    std::string label;
    double kernel = -1, direct = -1;
    char slash = 0;
    ASSERT_TRUE(figures >> label >> kernel >> slash >> direct) << c.source;
    EXPECT_EQ(label, std::to_string(size >> 10) + "K") << c.source;
    EXPECT_EQ(slash, '/') << c.source;
    const double fast = size < kCross ? kernel : direct;
    const double slow = size < kCross ? direct : kernel;
    EXPECT_LE(slow, slowBound + 0.05) << label << " in " << c.source;  // printed to 0.1
    EXPECT_GT(slow, 0) << label << " in " << c.source;
    EXPECT_GE(fast, 2 * slow) << label << " in " << c.source;
  }
  std::string rest;
  EXPECT_FALSE(figures >> rest) << "after 256K: " << rest;
  executor.reset();
  EXPECT_EQ(liveObjects(), before);  // pools, the temporary handle and transfers all gone
}

// A sweep whose direct candidate fails its 9th job (the first on 16 KiB rows: four jobs per row
// size) stops there: the error names the row size and the candidate's own message, the
// calibration set before is kept whole (the sweep forces other thresholds while it runs), every
// pool, transfer and the temporary handle are gone, and the executor sweeps again afterwards.
TEST(AutoMeasure, ASweepThatFailsMidwaySaysWhereAndChangesNothing) {
  const auto before = liveObjects();
  int kernelJobs = 0, directJobs = 0;
  bool failNinth = true;
  std::unique_ptr<kvio::Executor> executor =
      standInAuto(&kernelJobs, &directJobs, nullptr,
                  [&](int job, uint64_t) -> int64_t { return failNinth && job == 9 ? -1 : 0; });
  AutoCalibration mine;
  mine.directRowBytes = 12345;
  mine.directRowBytesOverlap = 678;
  mine.directCopyBytesOverlap = 91011;
  mine.stagedMinBytes = 9 << 20;
  mine.source = "set by the test";
  autoOf(executor)->setCalibration(mine);
  kvio::AutoMeasureTarget target{KVIO_MEMORY_HOST, KVIO_MEMORY_HOST, -1, 64 << 10};
  ASSERT_EQ(kvio::measureAutoCalibration(&executor, target), KVIO_STATUS_BACKEND_ERROR);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("measuring the auto calibration (rows of 16384 B): the direct stand "
                         "fails its job 9"),
            std::string::npos)
      << message;
  EXPECT_EQ(kernelJobs, 3 * 4);  // 4, 8 and 16 KiB: the kernel ran before direct at each
  EXPECT_EQ(directJobs, 9);      // nothing after the failure
  ASSERT_NE(executor, nullptr);
  AutoCalibration c = autoOf(executor)->calibration();
  EXPECT_EQ(c.directRowBytes, mine.directRowBytes);
  EXPECT_EQ(c.directRowBytesOverlap, mine.directRowBytesOverlap);
  EXPECT_EQ(c.directCopyBytesOverlap, mine.directCopyBytesOverlap);
  EXPECT_EQ(c.stagedMinBytes, mine.stagedMinBytes);
  EXPECT_EQ(c.source, mine.source);
  EXPECT_EQ(liveObjects(), before);  // the 16 KiB pools, the failed transfer, the handle
  // Still works: a second sweep runs every job and sets the calibration.
  failNinth = false;
  ASSERT_EQ(kvio::measureAutoCalibration(&executor, target), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kernelJobs, 12 + 28);
  EXPECT_EQ(directJobs, 9 + 28);
  c = autoOf(executor)->calibration();
  EXPECT_EQ(c.source.rfind("measured at first use", 0), 0u) << c.source;
  EXPECT_EQ(c.directRowBytesOverlap, mine.directRowBytesOverlap);    // kept: not measured
  EXPECT_NE(c.directCopyBytesOverlap, mine.directCopyBytesOverlap);  // measured
  EXPECT_EQ(c.stagedMinBytes, mine.stagedMinBytes);
  EXPECT_EQ(liveObjects(), before);
}

// A sweep that cannot even start (a memory kind the pools refuse) says so the same way.
TEST(AutoMeasure, ASweepRefusedAtItsFirstPoolRunsNothing) {
  const auto before = liveObjects();
  int kernelJobs = 0, directJobs = 0;
  std::unique_ptr<kvio::Executor> executor = standInAuto(&kernelJobs, &directJobs);
  kvio::AutoMeasureTarget target{99, KVIO_MEMORY_HOST, -1, 64 << 10};
  EXPECT_EQ(kvio::measureAutoCalibration(&executor, target), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("measuring the auto calibration (rows of 4096 B)"),
            std::string::npos)
      << kvio_last_error();
  ASSERT_NE(executor, nullptr);
  EXPECT_EQ(autoOf(executor)->calibration().source, AutoCalibration().source);
  EXPECT_EQ(kernelJobs + directJobs, 0);
  executor.reset();
  EXPECT_EQ(liveObjects(), before);
}

TEST(AutoMeasure, MeasureInTheEnvironmentIsNotAFileName) {
  ASSERT_EQ(setenv("KVIO_AUTO_CALIBRATION", "measure", 1), 0);
  AutoCalibration c;
  bool measure = false;
  EXPECT_EQ(kvio::initialAutoCalibration(&c, &measure), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_TRUE(measure);
  EXPECT_EQ(c.source, "defaults (H200 figures)");
  // Without a GPU, auto is cpu: nothing to measure, the defaults stay.
  uint64_t executor = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_AUTO, 1, &executor), KVIO_STATUS_OK);
  if (kvio_backend_available(KVIO_BACKEND_KERNEL) != KVIO_STATUS_OK) {
    EXPECT_NE(std::string(kvio_executor_auto_calibration(executor)).find("defaults"),
              std::string::npos);
  }
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
  ASSERT_EQ(unsetenv("KVIO_AUTO_CALIBRATION"), 0);
  measure = true;
  EXPECT_EQ(kvio::initialAutoCalibration(&c, &measure), KVIO_STATUS_OK);
  EXPECT_FALSE(measure);
}

// Without a GPU: Ascend device memory on either side goes to kernel_ascend when an NPU executor is
// a candidate; everything else (host memory of every kind, Ascend pinned host memory included)
// to cpu; without an NPU executor, everything to cpu (whose acceptMemory refuses NPU memory).
TEST(AutoChoice, WithoutAGpuNpuMemoryGoesToKernelAscend) {
  const int32_t kinds[] = {KVIO_MEMORY_HOST, KVIO_MEMORY_HOST_PINNED, KVIO_MEMORY_ASCEND_DEVICE,
                           KVIO_MEMORY_ASCEND_HOST_PINNED};
  for (int32_t src : kinds) {
    for (int32_t dst : kinds) {
      const bool npu = src == KVIO_MEMORY_ASCEND_DEVICE || dst == KVIO_MEMORY_ASCEND_DEVICE;
      EXPECT_EQ(kvio::chooseWithoutGpu(src, dst, true), npu ? AutoPick::kAscend : AutoPick::kCpu)
          << src << " -> " << dst;
      EXPECT_EQ(kvio::chooseWithoutGpu(src, dst, false), AutoPick::kCpu) << src << " -> " << dst;
    }
  }
  EXPECT_STREQ(kvio::autoPickName(AutoPick::kAscend), "kernel_ascend");
}

}  // namespace
}  // namespace kvio_test
