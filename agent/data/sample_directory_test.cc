#include "agent/data/sample_directory.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <zlib.h>

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

// Samples of two features, three classes.
const DatasetInfo kInfo{1, 1, 2, 3, 0, 0};

struct SampleDirectoryTest : testing::Test {
  fs::path folder = fs::path(testing::TempDir()) /
                    ("sample-directory-" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
  void SetUp() override {
    fs::remove_all(folder);
    fs::create_directories(folder);
  }
  void Put(const std::string& name, const std::string& text) { std::ofstream(folder / name) << text; }
  // `name`, of one row, read, then changed by `change`, twice: nothing of it
  // read again, and the first change said once, as `said`.
  void ExpectAChangeSaidOnce(const std::string& name, const std::function<void()>& change, const std::string& said) {
    SampleDirectory source(folder.string(), kInfo);
    Put(name, "0,1,2\n");
    EXPECT_EQ(source.Look().samples, 1);
    change();
    SampleDirectory::Scan scan = source.Look();
    EXPECT_EQ(scan.samples, 0);
    ASSERT_EQ(scan.refused.size(), 1u);
    EXPECT_NE(scan.refused[0].find(said), std::string::npos) << scan.refused[0];
    change();
    EXPECT_TRUE(source.Look().refused.empty()) << "said once";
  }
};

TEST_F(SampleDirectoryTest, EachFileIsReadOnceWhenItAppearsInNameOrder) {
  SampleDirectory source(folder.string(), kInfo);
  EXPECT_EQ(source.Look().samples, 0);
  Put("b.csv", "2,0.5,0.25\n");
  Put("a.csv", "label,x,y\n0,1,2\n1,3,4\n");
  SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.first, 0);
  EXPECT_EQ(scan.samples, 3);
  EXPECT_TRUE(scan.refused.empty());
  EXPECT_EQ(source.held().labels, (std::vector<int64_t>{0, 1, 2}));  // a.csv first
  std::vector<float> x(2);
  source.held().CopySamples(2, 1, x.data());
  EXPECT_EQ(x, (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ(source.Look().samples, 0) << "read once";
  Put("c.csv", "1,7,8\n");
  scan = source.Look();
  EXPECT_EQ(scan.first, 3);
  EXPECT_EQ(scan.samples, 1);
}

// What the buffer has passed goes, in lumps of at least half of what is
// held; indices go on counting from the first sample ever read, and a
// resumed run's ReadThrough still counts the forgotten files' samples.
TEST_F(SampleDirectoryTest, SamplesTheBufferHasPassedAreForgottenAndIndicesGoOn) {
  SampleDirectory source(folder.string(), kInfo);
  Put("1.csv", "0,1,2\n1,3,4\n2,5,6\n");
  Put("2.csv", "1,7,8\n");
  ASSERT_EQ(source.Look().samples, 4);
  source.ForgetBefore(1);
  EXPECT_EQ(source.first_held(), 0) << "a quarter passed: kept until half is";
  source.ForgetBefore(3);
  EXPECT_EQ(source.first_held(), 3);
  EXPECT_EQ(source.held().labels, (std::vector<int64_t>{1}));
  std::vector<float> x(2);
  int64_t label = -1;
  source.CopySample(3, x.data(), label);
  EXPECT_EQ(x, (std::vector<float>{7, 8}));
  EXPECT_EQ(label, 1);
  Put("3.csv", "2,9,10\n");
  const SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.first, 4);
  EXPECT_EQ(scan.samples, 1);
  EXPECT_EQ(source.held().labels, (std::vector<int64_t>{1, 2}));
  source.ForgetBefore(100);
  EXPECT_EQ(source.first_held(), 5) << "no further than what arrived";
  EXPECT_TRUE(source.held().labels.empty());
  EXPECT_TRUE(source.held().features.empty());
  const SampleDirectory::Through through = source.ReadThrough(5);
  EXPECT_EQ(through.file, "3.csv");
  EXPECT_EQ(through.samples, 5);
}

// A stream of a file a frame: the files read through fold as they pass
// twice the 4,096 kept, and what is read through, and how many samples it
// and those before it held, are as they were (the files were kept for the
// run, each walked at every batch taken: found in review).
TEST_F(SampleDirectoryTest, FilesReadThroughFoldAndStillCount) {
  SampleDirectory source(folder.string(), kInfo);
  char name[32];
  const int files = 9000;
  for (int i = 0; i < files; ++i) {
    std::snprintf(name, sizeof name, "frame-%05d.csv", i);
    Put(name, i % 2 ? "1,3,4\n" : "0,1,2\n2,5,6\n");  // 3 samples a pair of files
  }
  int64_t arrived = 0;
  for (int looks = 0; looks < 100 && arrived < files / 2 * 3; ++looks) arrived += source.Look().samples;
  ASSERT_EQ(arrived, files / 2 * 3);
  // Taken through frame 6999's last sample: 3,500 pairs.
  const SampleDirectory::Through through = source.ReadThrough(3500 * 3);
  EXPECT_EQ(through.file, "frame-06999.csv");
  EXPECT_EQ(through.samples, 3500 * 3);
  EXPECT_EQ(source.ReadThrough(arrived).file, "frame-08999.csv") << "the folded and the kept";
  EXPECT_EQ(source.ReadThrough(arrived).samples, arrived);
  EXPECT_EQ(source.ReadThrough(3500 * 3).file, "frame-06999.csv") << "folded files are not unread";
  // A file named after the last, taken in part: read through stays before it.
  Put("frame-09000.csv", "0,1,2\n1,3,4\n");
  ASSERT_EQ(source.Look().samples, 2);
  EXPECT_EQ(source.ReadThrough(arrived + 1).file, "frame-08999.csv");
  EXPECT_EQ(source.ReadThrough(arrived + 1).samples, arrived);
}

// The names of files read and since removed are forgotten once more than
// 4,096 are remembered, within 64 listings: a camera's frames, removed once
// read, had kept a name each for the run. A file made under one again is new.
TEST_F(SampleDirectoryTest, NamesOfFilesRemovedAreForgotten) {
  SampleDirectory source(folder.string(), kInfo);
  char name[32];
  for (int i = 0; i < 4100; ++i) {
    std::snprintf(name, sizeof name, "old-%05d.csv", i);
    Put(name, "0,1,2\n");
  }
  int64_t arrived = 0;
  for (int looks = 0; looks < 100 && arrived < 4100; ++looks) arrived += source.Look().samples;
  ASSERT_EQ(arrived, 4100);
  for (const auto& entry : fs::directory_iterator(folder)) fs::remove(entry.path());
  Put("old-00000.csv", "1,3,4\n");
  EXPECT_EQ(source.Look().samples, 0) << "remembered until a pruning listing";
  fs::remove(folder / "old-00000.csv");
  // Each new file changes the folder, and the next look lists it.
  for (int i = 0; i < 64; ++i) {
    std::snprintf(name, sizeof name, "new-%05d.csv", i);
    Put(name, "2,5,6\n");
    source.Look();
  }
  Put("old-00000.csv", "1,3,4\n");
  int64_t again = 0;
  for (int looks = 0; looks < 30 && again == 0; ++looks) again += source.Look().samples;
  EXPECT_EQ(again, 1) << "forgotten once removed, and made again: a new file";
}

// A file written in place a line at a time is read once its last line is
// finished; what is written to it after is not read, and is said once, as
// a file left out, not lost unsaid (a new user's trial: 1 row of 30 read).
TEST_F(SampleDirectoryTest, RowsWrittenToAFileAfterItWasReadAreSaidOnce) {
  ExpectAChangeSaidOnce(
      "slow.csv", [&] { std::ofstream(folder / "slow.csv", std::ios::app) << "1,3,4\n2,5,6\n"; },
      "slow.csv: 12 bytes were written to it after it was read, and are not read: write a file whole under another "
      "name (.NAME.csv) and rename it into the folder");
}

// Files are read as the buffer has room: what does not fit waits on disk
// for a later look, in name order, rather than push samples out.
TEST_F(SampleDirectoryTest, FilesAreReadOnlyAsTheBufferHasRoom) {
  SampleDirectory source(folder.string(), kInfo);
  Put("a.csv", "0,1,2\n1,3,4\n");
  Put("b.csv", "2,5,6\n");
  Put("c.csv", "1,7,8\n0,9,10\n");
  EXPECT_EQ(source.Look(0, 4).samples, 0) << "no room: nothing read";
  EXPECT_EQ(source.Look(1, 4).samples, 0) << "a file is read whole, when it fits";
  EXPECT_EQ(source.Look(2, 4).samples, 2) << "a.csv";
  SampleDirectory::Scan scan = source.Look(4, 4);
  EXPECT_EQ(scan.first, 2);
  EXPECT_EQ(scan.samples, 3) << "b.csv and c.csv";
  EXPECT_EQ(source.held().labels, (std::vector<int64_t>{0, 1, 2, 1, 0}));
  EXPECT_EQ(source.Look(10, 10).samples, 0) << "each file once";
  // A file larger than the whole buffer is taken alone once the buffer is empty.
  Put("d.csv", "0,1,1\n1,2,2\n2,3,3\n");
  EXPECT_EQ(source.Look(1, 2).samples, 0);
  scan = source.Look(2, 2);
  EXPECT_EQ(scan.samples, 3);
  // Named, with its rows, for the worker to say what its buffer drops of it.
  EXPECT_EQ(scan.oversized, (std::vector<std::pair<std::string, int64_t>>{{"d.csv", 3}}));
  EXPECT_TRUE(source.Look(10, 10).oversized.empty());
}

TEST_F(SampleDirectoryTest, AFileBeingWrittenUnderADotNameWaitsAndABadOneIsRefusedOnce) {
  SampleDirectory source(folder.string(), kInfo);
  Put(".incoming.csv", "0,1,2\n");
  Put("bad.csv", "0,1\n");     // a feature short
  Put("label.csv", "5,1,2\n");  // a label of no class
  SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.samples, 0);
  ASSERT_EQ(scan.refused.size(), 2u);
  EXPECT_NE(scan.refused[0].find("bad.csv:1"), std::string::npos) << scan.refused[0];
  EXPECT_NE(scan.refused[1].find("out of range"), std::string::npos) << scan.refused[1];
  fs::rename(folder / ".incoming.csv", folder / "incoming.csv");
  scan = source.Look();
  EXPECT_EQ(scan.samples, 1);
  EXPECT_TRUE(scan.refused.empty()) << "a refused file is not tried again";
}

// Only NAME.csv is read: a writer's NAME.csv.tmp renamed once written was
// read under both names, its samples trained on twice, and a README beside
// the files was refused as a bad sample file.
TEST_F(SampleDirectoryTest, OnlyFilesNamedCsvAreRead) {
  EXPECT_TRUE(IsStreamFileName("a.csv"));
  EXPECT_TRUE(IsStreamFileName("A.CSV"));
  EXPECT_FALSE(IsStreamFileName(".a.csv"));
  EXPECT_FALSE(IsStreamFileName(".csv"));
  EXPECT_FALSE(IsStreamFileName("a.csv.tmp"));
  EXPECT_FALSE(IsStreamFileName("README.txt"));
  EXPECT_FALSE(IsStreamFileName("batch-0001"));
  // Compressed, as a gzip file is read under any name.
  EXPECT_TRUE(IsStreamFileName("a.csv.gz"));
  EXPECT_TRUE(IsStreamFileName("A.CSV.GZ"));
  EXPECT_FALSE(IsStreamFileName(".a.csv.gz"));
  EXPECT_FALSE(IsStreamFileName("a.csv.gz.tmp"));
  EXPECT_FALSE(IsStreamFileName("a.gz"));
  SampleDirectory source(folder.string(), kInfo);
  Put("batch-1.csv.tmp", "0,1,2\n1,3,4\n");
  Put("README.txt", "samples from the line camera\n");
  SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.samples, 0);
  EXPECT_TRUE(scan.refused.empty()) << scan.refused.front();
  fs::rename(folder / "batch-1.csv.tmp", folder / "batch-1.csv");
  EXPECT_EQ(source.Look().samples, 2);
  EXPECT_EQ(source.Look().samples, 0);
  gzFile packed = gzopen((folder / "batch-2.csv.gz").c_str(), "wb");
  ASSERT_NE(packed, nullptr);
  const std::string rows = "2,5,6\n1,7,8\n0,9,9\n";
  ASSERT_EQ(gzwrite(packed, rows.data(), static_cast<unsigned>(rows.size())), static_cast<int>(rows.size()));
  ASSERT_EQ(gzclose(packed), Z_OK);
  EXPECT_EQ(source.Look().samples, 3) << "batch-2.csv.gz";
}

// A writer that writes in place rather than under a dot name: a file whose
// last line is unfinished and that was written to just now waits, and those
// named after it with it; finished, it is read whole (its first rows were
// read and the rest lost: a new user's trial). One that stays unfinished is
// read once it has settled.
TEST_F(SampleDirectoryTest, AFileStillBeingWrittenInPlaceWaitsForItsLastLine) {
  SampleDirectory source(folder.string(), kInfo);
  Put("a.csv", "0,1,2\n1,3");
  Put("b.csv", "2,5,6\n");
  EXPECT_EQ(source.Look().samples, 0) << "a.csv is being written; b.csv waits behind it";
  Put("a.csv", "0,1,2\n1,3,4\n");
  SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.samples, 3);
  EXPECT_TRUE(scan.refused.empty());
  Put("c.csv", "0,7,8");  // no final newline, and left so
  EXPECT_EQ(source.Look().samples, 0);
  fs::last_write_time(folder / "c.csv", fs::file_time_type::clock::now() - std::chrono::seconds(10));
  EXPECT_EQ(source.Look().samples, 1) << "settled: read as it is";
  // Written an hour "from now" by a clock that is off: not waited for ever.
  Put("d.csv", "0,9,10");
  fs::last_write_time(folder / "d.csv", fs::file_time_type::clock::now() + std::chrono::hours(1));
  EXPECT_EQ(source.Look().samples, 1) << "its time is no writer's at work";
}

// A writer stopped mid-line (killed, its disk full) leaves a file whose
// last line is unfinished and no row: once settled, the finished rows before
// it are read and that line is said to be left out. The whole file had been
// refused, its good rows with it (a user's trial). A bad row before the last
// line still refuses the file.
TEST_F(SampleDirectoryTest, ASettledFileCutMidLineKeepsItsFinishedRows) {
  SampleDirectory source(folder.string(), kInfo);
  Put("a.csv", "0,1,2\n1,3,4\n2,5");
  Put("b.csv", "0,1\n1,3,4\n2,5");
  Put("c.csv", "2,5");
  for (const char* name : {"a.csv", "b.csv", "c.csv"}) {
    fs::last_write_time(folder / name, fs::file_time_type::clock::now() - std::chrono::seconds(10));
  }
  const SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.samples, 2) << "a.csv's two finished rows";
  ASSERT_EQ(scan.cut_short.size(), 1u);
  EXPECT_NE(scan.cut_short[0].find("a.csv:3:"), std::string::npos) << scan.cut_short[0];
  EXPECT_NE(scan.cut_short[0].find("unfinished"), std::string::npos) << scan.cut_short[0];
  ASSERT_EQ(scan.refused.size(), 2u) << "b.csv's bad first row, c.csv's only line";
  EXPECT_NE(scan.refused[0].find("b.csv:1:"), std::string::npos) << scan.refused[0];
  EXPECT_NE(scan.refused[1].find("c.csv:1:"), std::string::npos) << scan.refused[1];
  EXPECT_EQ(source.held().labels, (std::vector<int64_t>{0, 1}));
}

// A writer's open() makes a file empty before its rows come, and a header
// may come before them: such a file, written within the last 2 s, waits for
// its rows. Refused at once, it was never looked at again, and the 20 rows
// written a second later were never read (a user's trial). Settled, it is
// refused; a bad row is refused at once
// (AFileBeingWrittenUnderADotNameWaitsAndABadOneIsRefusedOnce).
TEST_F(SampleDirectoryTest, AFileOfNoRowsYetWaitsForThem) {
  SampleDirectory source(folder.string(), kInfo);
  Put("a.csv", "");
  Put("b.csv", "label,x,y\n");
  Put("c.csv", "2,5,6\n");
  SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.samples, 0) << "c.csv waits behind them, in name order";
  EXPECT_TRUE(scan.refused.empty()) << scan.refused.front();
  Put("a.csv", "0,1,2\n1,3,4\n");
  std::ofstream(folder / "b.csv", std::ios::app) << "2,5,6\n";
  scan = source.Look();
  EXPECT_EQ(scan.samples, 4);
  EXPECT_TRUE(scan.refused.empty());
  Put("d.csv", "label,x,y\n");
  fs::last_write_time(folder / "d.csv", fs::file_time_type::clock::now() - std::chrono::seconds(10));
  scan = source.Look();
  ASSERT_EQ(scan.refused.size(), 1u);
  EXPECT_NE(scan.refused[0].find("d.csv: no samples"), std::string::npos) << scan.refused[0];
}

// A file renamed over one already read, under its name, is not read again
// (each name is read once) and says so, with what to do; the advice for
// rows written in place was no help to a writer who had written whole and
// renamed (a user's trial), and one of the same size was dropped unsaid.
TEST_F(SampleDirectoryTest, AFileReplacedUnderANameReadBeforeIsSaidOnce) {
  ExpectAChangeSaidOnce(
      "latest.csv",
      [&] {
        Put(".latest.csv", "1,3,4\n");  // the same size
        fs::rename(folder / ".latest.csv", folder / "latest.csv");
      },
      "latest.csv: replaced after it was read, under the same name, and not read again: each name is read once; "
      "give each file a name of its own");
}

TEST_F(SampleDirectoryTest, AFolderThatDoesNotExistYetIsEmpty) {
  SampleDirectory source((folder / "not-yet").string(), kInfo);
  EXPECT_EQ(source.Look().samples, 0);
  fs::create_directories(folder / "not-yet");
  std::ofstream(folder / "not-yet" / "1.csv") << "0,1,2\n";
  EXPECT_EQ(source.Look().samples, 1);
}

// Only a folder not there yet is empty: one that cannot be listed says why,
// at each look until it can. A path to a file, read as empty, had its worker
// train on nothing and the job exit 0 (found in review).
TEST_F(SampleDirectoryTest, AFolderThatCannotBeListedSaysWhy) {
  Put("worker-0", "0,1,2\n");
  SampleDirectory source((folder / "worker-0").string(), kInfo);
  SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.samples, 0);
  EXPECT_EQ(scan.unreadable, (folder / "worker-0").string() + ": a file, not a folder");
  EXPECT_EQ(source.Look().unreadable, scan.unreadable) << "said again while it lasts";
  EXPECT_EQ(SampleDirectory((folder / "not-yet").string(), kInfo).Look().unreadable, "");
}

// A file that does not fit the room is read once and waits as read: its cut
// line is said when it is taken, not at every look it waited (a file larger
// than the room was read and parsed at each look, its line said each time:
// found in review).
TEST_F(SampleDirectoryTest, AFileThatWaitsForRoomIsReadOnceAndSaidWhenTaken) {
  SampleDirectory source(folder.string(), kInfo);
  Put("a.csv", "0,1,2\n1,3,4\n2,5,6\n0,7");
  fs::last_write_time(folder / "a.csv", fs::file_time_type::clock::now() - std::chrono::seconds(10));
  for (int look = 0; look < 3; ++look) {
    const SampleDirectory::Scan scan = source.Look(2, 8);
    EXPECT_EQ(scan.samples, 0);
    EXPECT_TRUE(scan.cut_short.empty()) << scan.cut_short.front();
  }
  SampleDirectory::Scan scan = source.Look(3, 8);
  EXPECT_EQ(scan.samples, 3);
  ASSERT_EQ(scan.cut_short.size(), 1u);
  EXPECT_NE(scan.cut_short[0].find("a.csv:4:"), std::string::npos) << scan.cut_short[0];
  // Changed while it waited, it is read again as it is now.
  Put("b.csv", "0,1,2\n1,3,4\n");
  EXPECT_EQ(source.Look(1, 8).samples, 0);
  Put("b.csv", "0,1,2\n1,3,4\n2,5,6\n");
  EXPECT_EQ(source.Look(3, 8).samples, 3);
}

// A gzip file's last byte says nothing of whether it is finished: one just
// written that does not unpack whole waits, newline last or not; settled, it
// is refused. One whose last byte was a newline was refused at once, for
// good (found in review).
TEST_F(SampleDirectoryTest, AGzipFileJustWrittenThatDoesNotUnpackWaits) {
  SampleDirectory source(folder.string(), kInfo);
  // The first bytes of a gzip stream, cut short, a newline last.
  Put("a.csv", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x33\xd0\x31\n", 14));
  SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.still_written, (folder / "a.csv").string());
  EXPECT_TRUE(scan.refused.empty()) << scan.refused.front();
  fs::last_write_time(folder / "a.csv", fs::file_time_type::clock::now() - std::chrono::seconds(10));
  scan = source.Look();
  ASSERT_EQ(scan.refused.size(), 1u);
  EXPECT_NE(scan.refused[0].find("gzip"), std::string::npos) << scan.refused[0];
}

// A name listed and gone before it was read is no file left out: it was
// taken away; and if it comes back it is read.
TEST_F(SampleDirectoryTest, AFileGoneBeforeItWasReadIsNotSaidAndReadIfItComesBack) {
  SampleDirectory source(folder.string(), kInfo);
  Put("a.csv", "0,1,2\n1,3,4\n");
  Put("b.csv", "2,5,6\n");
  EXPECT_EQ(source.Look(1, 8).samples, 0) << "a.csv waits for room; b.csv behind it";
  fs::remove(folder / "a.csv");
  SampleDirectory::Scan scan = source.Look(1, 8);
  EXPECT_EQ(scan.samples, 1);
  EXPECT_TRUE(scan.refused.empty()) << scan.refused.front();
  Put("a.csv", "0,1,2\n");
  EXPECT_EQ(source.Look(1, 8).samples, 1);
}

// A folder whose time has not changed since it was listed is not listed
// again at every look; one changed within the same tick of the file
// system's clock, its time the same, is listed again within a few looks.
TEST_F(SampleDirectoryTest, AFolderUnchangedSinceItWasListedIsListedAgainWithinAFewLooks) {
  SampleDirectory source(folder.string(), kInfo);
  Put("a.csv", "0,1,2\n");
  fs::last_write_time(folder / "a.csv", fs::file_time_type::clock::now() - std::chrono::seconds(10));
  const auto long_ago = fs::file_time_type::clock::now() - std::chrono::seconds(60);
  fs::last_write_time(folder, long_ago);
  EXPECT_EQ(source.Look().samples, 1);
  Put("b.csv", "1,3,4\n");
  fs::last_write_time(folder / "b.csv", fs::file_time_type::clock::now() - std::chrono::seconds(10));
  fs::last_write_time(folder, long_ago);  // as if b.csv came in the tick a.csv was listed in
  int looks = 1;
  while (source.Look().samples == 0 && looks < 100) ++looks;
  EXPECT_LE(looks, 20);
  EXPECT_GT(looks, 1) << "the folder was listed again at once: the test shows nothing";
}

// A resumed run's worker is told the last file it had taken all of before:
// that one and those before it are not read again; the file whose samples
// it had taken only some of is.
TEST_F(SampleDirectoryTest, AResumedWorkerSkipsTheFilesItHadTakenAllOf) {
  SampleDirectory before(folder.string(), kInfo);
  Put("a.csv", "0,1,2\n1,3,4\n");
  Put("b.csv", "2,5,6\n2,7,8\n");
  Put("c.csv", "1,9,9\n");
  ASSERT_EQ(before.Look().samples, 5);
  EXPECT_EQ(before.ReadThrough(0).file, "");
  EXPECT_EQ(before.ReadThrough(2).file, "a.csv");
  EXPECT_EQ(before.ReadThrough(3).file, "a.csv") << "b.csv only in part";
  EXPECT_EQ(before.ReadThrough(5).file, "c.csv");
  EXPECT_EQ(before.ReadThrough(3).samples, 2) << "a.csv's two; b.csv only in part";

  SampleDirectory resumed(folder.string(), kInfo);
  resumed.SkipThrough("a.csv");
  const SampleDirectory::Scan scan = resumed.Look();
  EXPECT_EQ(scan.samples, 3);
  EXPECT_EQ(resumed.held().labels, (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(resumed.ReadThrough(0).file, "a.csv") << "what it skipped counts as read";
  EXPECT_EQ(resumed.ReadThrough(2).file, "b.csv");
  EXPECT_EQ(scan.skipped_as_read, 1) << "a.csv";
}

// A resumed worker takes as read the files named through where the run it
// resumes had read and written before it resumed, whenever they appear; a
// file written since is new, and read whatever its name. Skipped too, every
// file a writer named before that and wrote while the resumed run trained
// went unread (a new user's camera frames beside a sensor's, and a team
// stood still).
TEST_F(SampleDirectoryTest, AFileNamedBeforeWhereAResumedRunSkipsWrittenSinceIsRead) {
  const auto now = fs::file_time_type::clock::now();
  Put("cam-1.csv", "0,1,2\n");
  Put("sensor-1.csv", "1,3,4\n");
  Put("sensor-2.csv", "2,5,6\n");
  SampleDirectory resumed(folder.string(), kInfo);
  resumed.SkipThrough("sensor-1.csv");
  SampleDirectory::Scan scan = resumed.Look();
  EXPECT_EQ(scan.samples, 1) << "sensor-2.csv";
  EXPECT_EQ(scan.skipped_as_read, 2) << "cam-1.csv and sensor-1.csv";
  Put("cam-2.csv", "1,7,8\n");
  // Written after the resume, whatever the grain of the file system's clock.
  fs::last_write_time(folder / "cam-2.csv", now + std::chrono::seconds(5));
  scan = resumed.Look();
  EXPECT_EQ(scan.samples, 1) << "cam-2.csv, written since";
  EXPECT_EQ(scan.skipped_as_read, 0);
  // One written before the resume that appears only now (a folder filled
  // late, a volume mounted late) is taken as read: it had been trained on.
  Put("cam-0.csv", "0,1,2\n");
  fs::last_write_time(folder / "cam-0.csv", now - std::chrono::seconds(60));
  scan = resumed.Look();
  EXPECT_EQ(scan.samples, 0);
  EXPECT_EQ(scan.skipped_as_read, 1) << "cam-0.csv";
}

// A Welcome again once the folder was listed (a worker counted out and taken
// back) moves the read-through on, and takes nothing as read: this process
// knows what it read. It took a waiting file named before the read-through
// as read, never trained on (found in review).
TEST_F(SampleDirectoryTest, AWelcomeAgainAfterTheFolderWasListedTakesNothingAsRead) {
  SampleDirectory source(folder.string(), kInfo);
  Put("sensor-5.csv", "1,3,4\n");
  Put("cam-7.csv", "0,1,2\n0,1,2\n");
  EXPECT_EQ(source.Look(1, 8).samples, 0) << "cam-7.csv waits for room";
  source.SkipThrough("sensor-5.csv");
  const SampleDirectory::Scan scan = source.Look(8, 8);
  EXPECT_EQ(scan.samples, 3) << "cam-7.csv and sensor-5.csv";
  EXPECT_EQ(scan.skipped_as_read, 0);
  EXPECT_EQ(source.ReadThrough(0).file, "sensor-5.csv") << "the read-through moved on";
}

// A refused file is read through with the files before it, holding no
// samples: a resumed run does not refuse it again, and count it twice.
TEST_F(SampleDirectoryTest, ARefusedFileIsReadThroughOnceTheFilesBeforeItAre) {
  SampleDirectory source(folder.string(), kInfo);
  Put("a.csv", "0,1,2\n1,3,4\n");
  Put("b.csv", "0,1\n");  // a feature short
  Put("c.csv", "1,9,9\n");
  const SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.samples, 3);
  EXPECT_EQ(scan.refused.size(), 1u);
  EXPECT_EQ(source.ReadThrough(1).file, "") << "a.csv only in part";
  EXPECT_EQ(source.ReadThrough(2).file, "b.csv") << "a.csv, and b.csv's nothing";
  EXPECT_EQ(source.ReadThrough(3).file, "c.csv");
}

// A writer counting its files 1.csv ... 10.csv wrote them in that order; by
// bytes 10.csv came before 2.csv, and a run resumed after 9.csv skipped
// 10.csv unread (a new user's trial).
TEST_F(SampleDirectoryTest, NumbersInNamesAreOrderedByValue) {
  EXPECT_TRUE(StreamNameBefore("9.csv", "10.csv"));
  EXPECT_FALSE(StreamNameBefore("10.csv", "9.csv"));
  EXPECT_TRUE(StreamNameBefore("cam-2-7.csv", "cam-2-11.csv"));
  EXPECT_TRUE(StreamNameBefore("0009.csv", "0010.csv")) << "zero-padded counters as before";
  EXPECT_TRUE(StreamNameBefore("2026-12-01T09.csv", "2026-12-01T10.csv"));
  EXPECT_TRUE(StreamNameBefore("a.csv", "b.csv"));
  EXPECT_TRUE(StreamNameBefore("a.csv", "a1.csv"));
  EXPECT_NE(StreamNameBefore("01.csv", "1.csv"), StreamNameBefore("1.csv", "01.csv")) << "still an order";
  EXPECT_FALSE(StreamNameBefore("1.csv", "1.csv"));

  SampleDirectory before(folder.string(), kInfo);
  for (int i = 1; i <= 10; ++i) Put(std::to_string(i) + ".csv", std::to_string(i % 3) + ",1,2\n");
  ASSERT_EQ(before.Look().samples, 10);
  EXPECT_EQ(before.held().labels, (std::vector<int64_t>{1, 2, 0, 1, 2, 0, 1, 2, 0, 1})) << "10.csv last";
  EXPECT_EQ(before.ReadThrough(9).file, "9.csv");

  SampleDirectory resumed(folder.string(), kInfo);
  resumed.SkipThrough("9.csv");
  EXPECT_EQ(resumed.Look().samples, 1) << "10.csv, read after 9.csv, is not skipped with it";
  EXPECT_EQ(resumed.ReadThrough(1).file, "10.csv");
  resumed.SkipThrough("2.csv");
  EXPECT_EQ(resumed.ReadThrough(1).file, "10.csv") << "a skip never goes back";
}

// Files that come after one named after them are read, and said to be; what
// is read through is the greatest name before which every file read was
// taken whole. The last taken in the order read (4.csv, read after 10.csv)
// had a resumed run train on 10.csv again (a new user's trial).
TEST_F(SampleDirectoryTest, WhatIsReadThroughIsANameBeforeWhichEveryFileReadWasTaken) {
  SampleDirectory source(folder.string(), kInfo);
  Put("1.csv", "0,1,2\n");
  Put("2.csv", "1,1,2\n");
  Put("10.csv", "2,1,2\n2,3,4\n");
  ASSERT_EQ(source.Look().samples, 4);
  Put("3.csv", "0,5,6\n");
  Put("4.csv", "1,5,6\n");
  const SampleDirectory::Scan late = source.Look();
  EXPECT_EQ(late.samples, 2);
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(late.out_of_order, (Pairs{{"3.csv", "10.csv"}, {"4.csv", "10.csv"}}));
  EXPECT_EQ(source.ReadThrough(6).file, "10.csv") << "every file taken";
  EXPECT_EQ(source.ReadThrough(6).samples, 6);
  EXPECT_EQ(source.ReadThrough(5).file, "3.csv") << "4.csv not taken: 10.csv, named after it, is read again";
  EXPECT_EQ(source.ReadThrough(5).samples, 3) << "1.csv's, 2.csv's and 3.csv's";

  SampleDirectory resumed(folder.string(), kInfo);
  resumed.SkipThrough(source.ReadThrough(6).file);
  EXPECT_EQ(resumed.Look().samples, 0) << "none trained twice";
}

// A built-in data set's features lie in [0, 1]: a file in other units
// (digits' raw 0..16), or with the label last so that its first feature read
// as a label, trained on in silence (a new user's trial). Refused, saying so.
TEST_F(SampleDirectoryTest, AFileOutsideTheDataSetsRangeIsRefused) {
  SampleDirectory source(folder.string(), kInfo, FeatureRange{0, 1, "digits"});
  Put("1.csv", "0,0.5,1\n1,0,0.25\n");
  Put("2.csv", "2,16,3\n");
  Put("3.csv", "1,1.0000001,0\n");
  const SampleDirectory::Scan scan = source.Look();
  EXPECT_EQ(scan.samples, 3) << "1.csv and 3.csv";
  ASSERT_EQ(scan.refused.size(), 1u);
  EXPECT_NE(scan.refused[0].find("2.csv: its features run from 3 to 16, where the digits set's run from 0 to 1"),
            std::string::npos)
      << scan.refused[0];
  EXPECT_EQ(source.ReadThrough(3).file, "3.csv") << "refused, it is read through with the others";

  SampleDirectory own(folder.string(), kInfo);  // a data set from files: its units are its own
  EXPECT_EQ(own.Look().samples, 4);
}

}  // namespace
}  // namespace edgetrain::agent
