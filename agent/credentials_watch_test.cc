#include "agent/credentials_watch.h"

#include <atomic>
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "core/deterministic_clock.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

fs::path Credentials(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("credentials-watch-" + name);
  fs::remove_all(dir);
  const auto now = std::chrono::system_clock::now();
  EXPECT_TRUE(pki::WriteNewJobCredentials(dir.string(), "watched", now - std::chrono::hours(1),
                                          now + std::chrono::hours(2)).ok());
  return dir;
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// A rotation by hand, a file at a time: the half-way pair is said once, with
// what to do, and so is the pair whole again with its new certificate's end.
TEST(CredentialsWatchTest, SaysWhenTheFilesCannotBeUsedTogetherAndWhenTheyCanAgain) {
  const fs::path dir = Credentials("in-use");
  const fs::path next = Credentials("next");
  const auto copy = [&](const char* file) {
    fs::copy_file(next / file, dir / file, fs::copy_options::overwrite_existing);
  };
  DeterministicClock clock;
  std::ostringstream log;
  std::string before, halfway, whole, gone;
  clock.Run("test", [&] {
    CredentialsWatch watch(pki::TlsFolderAt(dir.string()), "watched", clock, seconds(1), log);
    clock.SleepFor(seconds(2) + std::chrono::milliseconds(500));
    before = log.str();
    copy("tls.crt");
    clock.SleepFor(seconds(3));
    halfway = log.str();
    copy("tls.key");
    clock.SleepFor(seconds(2));
    whole = log.str();
    fs::remove(dir / "tls.key");
    clock.SleepFor(seconds(2));
    gone = log.str();
  });
  EXPECT_EQ(before, "") << "files as they were: nothing to say";
  EXPECT_EQ(halfway, "tls: --tls-dir " + dir.string() + " cannot be used as it is now (tls.key is not the key of "
                     "tls.crt): new connections are refused until it can, open ones go on; replace each file whole "
                     "(write it beside, then rename it over) or swap the folder, as the kubelet does\n")
      << "said once, at the first look after the change";
  const std::string again = whole.substr(halfway.size());
  EXPECT_EQ(again.rfind("tls: --tls-dir " + dir.string() + " can be used again\ntls: --tls-dir " + dir.string() +
                            " holds a new certificate, valid until 20",
                        0),
            0u)
      << again;
  EXPECT_NE(again.find(": new connections take it up within 1 s\n"), std::string::npos) << again;
  EXPECT_EQ(Count(gone, "cannot be used as it is now"), 2u) << gone;
  EXPECT_NE(gone.find("(cannot read " + (dir / "tls.key").string() + ": No such file or directory)"),
            std::string::npos)
      << gone;
}

// A certificate that runs out while the agent holds it is said once, as its
// end passes, and so is the authority's; a new one is watched afresh.
TEST(CredentialsWatchTest, SaysWhenTheCertificateItHoldsRunsOut) {
  const fs::path dir = Credentials("running-out");  // certificate and authority end 2 h from now
  const auto start = std::chrono::system_clock::now();
  std::atomic<int> ahead{0};  // hours the time of day has moved on: read on the watch's thread
  DeterministicClock clock;
  std::ostringstream log;
  std::string before, after, later;
  clock.Run("test", [&] {
    CredentialsWatch watch(pki::TlsFolderAt(dir.string()), "watched", clock, seconds(1), log,
                           [&] { return start + std::chrono::hours(ahead.load()); });
    clock.SleepFor(seconds(2));
    before = log.str();
    ahead = 3;
    clock.SleepFor(seconds(2));
    after = log.str();
    clock.SleepFor(seconds(3));
    later = log.str();
  });
  EXPECT_EQ(before, "") << "valid: nothing to say";
  EXPECT_NE(after.find("tls: the job's authority in --tls-dir " + dir.string() + " (ca.crt) expired at 20"),
            std::string::npos)
      << after;
  // Its certificate ended with the authority: a new one of that authority
  // mends nothing, and is not asked for.
  EXPECT_EQ(after.find("tls: this agent's certificate in --tls-dir"), std::string::npos) << after;
  EXPECT_EQ(later, after) << "said once";
}

// Another job's credentials put in the folder mid-run are said, as the
// agent's start says them, and so is a certificate of an authority the
// folder does not hold; the job's own renewed are not.
TEST(CredentialsWatchTest, SaysWhenTheFolderNowHoldsACertificateItsJobWouldRefuse) {
  const fs::path dir = Credentials("swapped");
  const fs::path renewed = Credentials("renewed");
  const fs::path other = fs::path(::testing::TempDir()) / "credentials-watch-other";
  fs::remove_all(other);
  const auto now = std::chrono::system_clock::now();
  ASSERT_TRUE(pki::WriteNewJobCredentials(other.string(), "other", now - std::chrono::hours(1),
                                          now + std::chrono::hours(2)).ok());
  DeterministicClock clock;
  std::ostringstream log;
  std::string swapped, all;
  clock.Run("test", [&] {
    CredentialsWatch watch(pki::TlsFolderAt(dir.string()), "watched", clock, seconds(1), log);
    for (const char* file : {"ca.crt", "tls.crt", "tls.key"}) {
      fs::copy_file(renewed / file, dir / file, fs::copy_options::overwrite_existing);
    }
    clock.SleepFor(seconds(2));
    EXPECT_EQ(log.str().find("would refuse"), std::string::npos) << "the job's own, renewed\n" << log.str();
    for (const char* file : {"ca.crt", "tls.crt", "tls.key"}) {
      fs::copy_file(other / file, dir / file, fs::copy_options::overwrite_existing);
    }
    clock.SleepFor(seconds(2));
    swapped = log.str();
  });
  EXPECT_NE(swapped.find("tls: --tls-dir " + dir.string() + " now holds a certificate its job would refuse: a "
                         "certificate of job \"other\", not of job \"watched\""),
            std::string::npos)
      << swapped;
}

// A key made readable by every user mid-run (rotated in as a new file of the
// umask's 0644), and a folder others may write in, are said
// once each, as the agent's start says them, and so is the folder kept from
// them again: only the start had looked.
TEST(CredentialsWatchTest, SaysWhenOtherUsersComeToBeAbleToReadTheKeyOrSwapTheFiles) {
  const fs::path dir = Credentials("exposed");
  const std::string key = (dir / "tls.key").string();
  DeterministicClock clock;
  std::ostringstream log;
  std::string readable, closed, writable;
  clock.Run("test", [&] {
    CredentialsWatch watch(pki::TlsFolderAt(dir.string()), "watched", clock, seconds(1), log);
    clock.SleepFor(seconds(1) + std::chrono::milliseconds(500));
    EXPECT_EQ(log.str(), "") << "the folder as the start judged it: nothing to say";
    fs::permissions(key, fs::perms::others_read, fs::perm_options::add);
    clock.SleepFor(seconds(3));
    readable = log.str();
    fs::permissions(key, fs::perms::others_read, fs::perm_options::remove);
    clock.SleepFor(seconds(2));
    closed = log.str().substr(readable.size());
    fs::permissions(dir, fs::perms::others_write, fs::perm_options::add);
    clock.SleepFor(seconds(2));
    writable = log.str().substr(readable.size() + closed.size());
    fs::permissions(dir, fs::perms::others_write, fs::perm_options::remove);
  });
  EXPECT_EQ(readable, "tls: WARNING: --tls-dir " + dir.string() + ": " + key + " may be read by every user of this "
                      "machine, who could present this job's certificate as its own (chmod o-r on it)\n")
      << "said once, at the first look after the change";
  EXPECT_EQ(closed, "tls: --tls-dir " + dir.string() + " is kept from other users again\n");
  EXPECT_NE(writable.find("tls: WARNING: --tls-dir " + dir.string() + ": "), std::string::npos) << writable;
  EXPECT_NE(writable.find(", who could swap the job's credentials in it (chmod go-w on it and its files)\n"),
            std::string::npos)
      << writable;
  EXPECT_EQ(Count(writable, "WARNING"), 1u) << writable;
}

}  // namespace
}  // namespace edgetrain::agent
