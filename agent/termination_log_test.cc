#include "agent/termination_log.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace edgetrain::agent {
namespace {

TEST(TerminationLogTest, TheLastResultLineIsCapturedAndEverythingPassesThrough) {
  std::ostringstream out;
  ResultCapture capture(out);
  capture.stream() << "http 10.0.0.1:8080\n" << "result {\"state\": \"failed\"}\n";
  capture.stream() << "result {\"state\": \"succeeded\", \"accuracy\": 0.9}" << std::endl << "trailing";
  capture.stream().flush();
  EXPECT_EQ(out.str(),
            "http 10.0.0.1:8080\nresult {\"state\": \"failed\"}\nresult {\"state\": \"succeeded\", \"accuracy\": "
            "0.9}\ntrailing");
  EXPECT_EQ(capture.result(), "{\"state\": \"succeeded\", \"accuracy\": 0.9}");

  std::ostringstream none;
  ResultCapture nothing(none);
  nothing.stream() << "listening 127.0.0.1:7000\n";
  EXPECT_EQ(nothing.result(), "");
}

TEST(TerminationLogTest, ATeamTooLargeForTheKubeletsLimitKeepsTheJobsOwnFields) {
  nlohmann::json result = {{"state", "succeeded"}, {"accuracy", 0.91}, {"modelPath", "/models/x/model.pt"}};
  EXPECT_EQ(FitTerminationMessage(result.dump()), result.dump()) << "a short result is kept whole";

  // Twelve workers in full are past the limit; their figures the operator's status takes are not.
  nlohmann::json twelve = result;
  for (int rank = 0; rank < 12; ++rank) {
    nlohmann::json w = {{"rank", rank},
                        {"samples", 1000 + rank},
                        {"stallFraction", 0.25},
                        {"active", true},
                        {"layers", {{"first", 2}, {"end", 5}}}};
    for (int extra = 0; extra < 12; ++extra) w["someFigureOfManyDigits" + std::to_string(extra)] = 123456.789;
    twelve["workers"].push_back(w);
  }
  ASSERT_GT(twelve.dump().size(), kTerminationMessageLimit);
  const nlohmann::json compact = nlohmann::json::parse(FitTerminationMessage(twelve.dump()));
  ASSERT_EQ(compact["workers"].size(), 12u);
  EXPECT_FALSE(compact.contains("workersOmitted"));
  EXPECT_EQ(compact["workers"][11], (nlohmann::json{{"rank", 11},
                                                     {"samples", 1011},
                                                     {"stallFraction", 0.25},
                                                     {"active", true},
                                                     {"layers", {{"first", 2}, {"end", 5}}}}));

  for (int rank = 0; rank < 200; ++rank) result["workers"].push_back({{"rank", rank}, {"bandwidthMbps", 41.5}});
  ASSERT_GT(result.dump().size(), kTerminationMessageLimit);
  const nlohmann::json fitted = nlohmann::json::parse(FitTerminationMessage(result.dump()));
  EXPECT_EQ(fitted["accuracy"], 0.91);
  EXPECT_EQ(fitted["modelPath"], "/models/x/model.pt");
  EXPECT_EQ(fitted["workersOmitted"], 200);
  EXPECT_FALSE(fitted.contains("workers"));
}

TEST(TerminationLogTest, AResultTooLongWithoutItsWorkersIsShortenedNeverCut) {
  // A module's refusal whose error runs past the limit: the operator reads the
  // error only from JSON that parses.
  const std::string error = "spec.model.torchscript: " + std::string(6000, 'e');
  nlohmann::json refused = {{"error", error}};
  const nlohmann::json fitted = nlohmann::json::parse(FitTerminationMessage(refused.dump()));
  const std::string said = fitted["error"];
  EXPECT_EQ(said.rfind("spec.model.torchscript: eee", 0), 0u) << said;
  EXPECT_NE(said.find("(5512 more characters)"), std::string::npos) << said;

  // A cut never falls inside a character of several bytes.
  refused["error"] = std::string(511, 'x') + "\u00e9" + std::string(5000, 'y');
  const std::string accented = nlohmann::json::parse(FitTerminationMessage(refused.dump()))["error"];
  EXPECT_EQ(accented.rfind(std::string(511, 'x') + "...", 0), 0u) << accented.substr(0, 520);

  // Fields too large however their strings are cut are left out by name; the
  // job's own small fields stay.
  nlohmann::json big = {{"state", "succeeded"}, {"accuracy", 0.9}};
  for (int i = 0; i < 2000; ++i) big["stages"].push_back(i);
  const nlohmann::json kept = nlohmann::json::parse(FitTerminationMessage(big.dump()));
  EXPECT_EQ(kept["accuracy"], 0.9);
  EXPECT_EQ(kept["omitted"], nlohmann::json::array({"stages"}));
  EXPECT_LE(FitTerminationMessage(big.dump()).size(), kTerminationMessageLimit);
}

// A capture writes its last result to the termination log, as main and the
// terminate handler both do at the agent's end; none written, no file.
TEST(TerminationLogTest, ACaptureWritesItsLastResult) {
  const auto path = std::filesystem::temp_directory_path() / ("capture-" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  std::ostringstream out, log;
  ResultCapture nothing(out);
  nothing.WriteTerminationLogTo(path.string(), log);
  EXPECT_FALSE(std::filesystem::exists(path));
  ResultCapture capture(out);
  capture.stream() << "a line\nresult {\"state\": \"failed\"}\n";
  capture.WriteTerminationLogTo(path.string(), log);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "{\"state\": \"failed\"}");
  EXPECT_EQ(out.str(), "a line\nresult {\"state\": \"failed\"}\n") << "passed through, flushed";
  std::filesystem::remove(path);
}

TEST(TerminationLogTest, WritesTheMessageAndSaysWhenItCannot) {
  const auto path = std::filesystem::temp_directory_path() / ("termination-" + std::to_string(::getpid()));
  std::ostringstream log;
  ASSERT_TRUE(WriteTerminationLog(path.string(), "{\"state\": \"succeeded\"}", log));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "{\"state\": \"succeeded\"}");
  std::filesystem::remove(path);

  EXPECT_FALSE(WriteTerminationLog("/nonexistent-dir/termination-log", "{}", log));
  EXPECT_NE(log.str().find("/nonexistent-dir/termination-log: No such file or directory"), std::string::npos)
      << log.str();
}

}  // namespace
}  // namespace edgetrain::agent
