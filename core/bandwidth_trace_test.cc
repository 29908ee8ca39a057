#include "core/bandwidth_trace.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(BandwidthTraceTest, HoldsEachSampleUntilTheNextAndRepeats) {
  auto trace = BandwidthTrace::Parse("seconds,mbps\n0,10\n2,0\n3,40\n", "t.csv");
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_DOUBLE_EQ(trace->MbpsAt(0), 10);
  EXPECT_DOUBLE_EQ(trace->MbpsAt(1.99), 10);
  EXPECT_DOUBLE_EQ(trace->MbpsAt(2), 0);
  EXPECT_DOUBLE_EQ(trace->MbpsAt(3.5), 40);
  // The last sample lasts as long as the one before it (1 s): period 4 s.
  EXPECT_DOUBLE_EQ(trace->PeriodSeconds(), 4);
  EXPECT_DOUBLE_EQ(trace->MbpsAt(4.5), 10);
  EXPECT_DOUBLE_EQ(trace->MbpsAt(6.5), 0);
  // Mean over one period: (10*2 + 0*1 + 40*1) / 4.
  EXPECT_DOUBLE_EQ(trace->MeanMbps(), 15);
}

TEST(BandwidthTraceTest, ShiftAndScaleAsProfilesUseThem) {
  auto trace = BandwidthTrace::Parse("seconds,mbps\r\n0,10\r\n2,0\r\n3,40\r\n", "crlf.csv");
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  BandwidthTrace shifted = trace->Shifted(2).Scaled(0.5);
  EXPECT_DOUBLE_EQ(shifted.MbpsAt(0), 0);
  EXPECT_DOUBLE_EQ(shifted.MbpsAt(1), 20);
  EXPECT_DOUBLE_EQ(shifted.MeanMbps(), 7.5);
  EXPECT_DOUBLE_EQ(BandwidthTrace::Constant(30).MbpsAt(1e6), 30);
}

TEST(BandwidthTraceTest, ReadsEverySharedTrace) {
  std::filesystem::path dir = std::filesystem::path(EDGETRAIN_SOURCE_DIR) / "examples/traces";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".csv") continue;
    ++files;
    auto trace = BandwidthTrace::Parse(ReadFile(entry.path()), entry.path().filename());
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    EXPECT_GT(trace->points().size(), 50u) << entry.path();
    EXPECT_GT(trace->MeanMbps(), 0.1) << entry.path();
    EXPECT_LT(trace->MeanMbps(), 100) << entry.path();
  }
  EXPECT_GE(files, 7) << "expected the seven shared traces in " << dir;
}

TEST(BandwidthTraceTest, WalkAwayTraceFadesToZero) {
  auto trace = BandwidthTrace::Parse(
      ReadFile(std::filesystem::path(EDGETRAIN_SOURCE_DIR) / "examples/traces/wifi-walk-away-1.csv"),
      "wifi-walk-away-1.csv");
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_GT(trace->MbpsAt(0), 30);
  double lowest = 1e9;
  for (const auto& p : trace->points()) lowest = std::min(lowest, p.mbps);
  EXPECT_EQ(lowest, 0);
}

TEST(BandwidthTraceTest, MalformedTracesNameTheLineAndTheReason) {
  struct Case {
    const char* csv;
    const char* error;
  } cases[] = {
      {"", "bad.csv: empty trace"},
      {"seconds,mbps\n", "bad.csv: the trace has a header but no samples"},
      {"time,rate\n0,1\n", "bad.csv:1: expected the header \"seconds,mbps\""},
      {"seconds,mbps\n0,1\n1\n", "bad.csv:3: expected two fields"},
      {"seconds,mbps\n0,1,2\n", "bad.csv:2: expected two fields"},
      {"seconds,mbps\n0,fast\n", "bad.csv:2: mbps is not a number: \"fast\""},
      {"seconds,mbps\nzero,1\n", "bad.csv:2: seconds is not a number"},
      {"seconds,mbps\n0,-1\n", "bad.csv:2: mbps must be >= 0"},
      {"seconds,mbps\n0,nan\n", "bad.csv:2: mbps is not a number"},
      {"seconds,mbps\n1,5\n", "bad.csv:2: the first sample must be at 0 seconds (got 1)"},
      {"seconds,mbps\n0,5\n2.5,5\n2,6\n", "bad.csv:4: seconds must increase from row to row (2 after 2.5)"},
      // Invisible bytes shown as such.
      {"seconds\tmbps\n0\t5\n",
       "bad.csv:1: expected the header \"seconds,mbps\", got \"seconds\\tmbps\" (fields are separated by a comma)"},
      {"seconds,mbps\n0,5\x01\n", "bad.csv:2: mbps is not a number: \"5\\x01\""},
  };
  for (const auto& c : cases) {
    auto trace = BandwidthTrace::Parse(c.csv, "bad.csv");
    ASSERT_FALSE(trace.ok()) << c.csv;
    EXPECT_EQ(trace.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(trace.status().message().find(c.error), std::string::npos)
        << "got: " << trace.status().message() << "\nwanted: " << c.error;
  }
}

// Found by tests/fuzz/bandwidth_trace_fuzzer: a period so short (1e-119 s)
// that t less its whole periods rounded below 0 read the sample before the
// first; and rates or times so large that the mean is infinite. Refused.
TEST(BandwidthTraceTest, ValuesNoLinkOrRunHasAreRefused) {
  for (const char* csv : {"seconds,mbps\n0,1\n11e-120,0\n", "seconds,mbps\n0,1\n0.0004,0\n",
                          "seconds,mbps\n0,1e308\n10,0\n", "seconds,mbps\n0,1\n1e308,1\n"}) {
    auto trace = BandwidthTrace::Parse(csv, "odd.csv");
    ASSERT_FALSE(trace.ok()) << csv;
    EXPECT_EQ(trace.status().message().rfind("odd.csv:", 0), 0u) << "names the line: " << trace.status().message();
  }
  EXPECT_TRUE(BandwidthTrace::Parse("seconds,mbps\n0,1\n0.001,0\n", "ms.csv").ok());
}

// A spreadsheet's "CSV UTF-8" opens with a byte-order mark: read past it.
TEST(BandwidthTraceTest, AByteOrderMarkBeforeTheHeaderIsReadPast) {
  auto trace = BandwidthTrace::Parse("\xEF\xBB\xBFseconds,mbps\r\n0,5\r\n", "excel.csv");
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ(trace->MbpsAt(0), 5);
}

TEST(BandwidthTraceTest, PeakIsTheHighestSampleScaled) {
  auto trace = BandwidthTrace::Parse("seconds,mbps\n0,10\n1,65\n2,0\n", "t.csv");
  ASSERT_TRUE(trace.ok());
  EXPECT_DOUBLE_EQ(trace->PeakMbps(), 65);
  EXPECT_DOUBLE_EQ(trace->Shifted(1.5).Scaled(0.5).PeakMbps(), 32.5);
}

}  // namespace
}  // namespace edgetrain
