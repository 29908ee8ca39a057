#pragma once
// A real stream source (spec.data.stream.directory): a folder that a sensor
// process, a camera's uploader or a message-queue consumer drops samples into
// as CSV files, a label and then the features a row (agent/data/csv_format.h).
// Each file named NAME.csv (or NAME.csv.gz) is read once, when it is first seen, in name order
// with numbers in names taken by value (StreamNameBefore; one whose last line
// is unfinished, written to just now, waits for the rest). Other names are
// left alone: a writer puts a file in whole by writing it under a dot name or
// as NAME.csv.tmp (or elsewhere on the file system) and renaming it, and a
// README beside the files is not a sample. Files are kept: what was read is
// remembered by name.
//
// The samples are kept in memory, appended, for the worker's stream buffer
// (core/sample_stream.h) to index, until the buffer has passed them
// (ForgetBefore). Files are read only as the buffer has room
// for them: they wait on disk, where nothing is lost, rather than push
// samples out of a full buffer (a folder filled before the run would lose
// all but a buffer's worth).

#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/data/dataset.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace edgetrain::agent {

// A name the stream reads: NAME.csv or NAME.csv.gz, the suffix in any case,
// not starting with a dot. Every other name was read as CSV too: a writer's
// batch.csv.tmp before its rename was then read twice, under both names.
bool IsStreamFileName(const std::string& name);

// The order files are read in, and skipped by on resume: by name, a run of
// digits against a run of digits by its value. A writer counting its files
// 1.csv, 2.csv, ... 10.csv writes them in that order; by bytes 10.csv came
// before 9.csv, and a run resumed after 9.csv skipped 10.csv unread.
// Zero-padded counters and timestamps order as they did.
bool StreamNameBefore(std::string_view a, std::string_view b);

// The rows a stream's file holds as it is now: its lines, a header line
// not counted; none for a gzip file, whose rows are not counted unpacked.
// For what is said before a run (a file larger than the buffer loses rows).
std::optional<int64_t> StreamFileRows(const std::string& path);

// Where a stream's features must lie for the model they feed: a built-in
// data set's loader scales its pixels to [0, 1] (agent/data/datasets.cc), and
// samples in other units (digits' raw 0..16, a camera's 0..255), or rows with
// the label last whose first feature read as a label, trained on in silence
// (a new user's trial). `of` names the data set in what is said.
struct FeatureRange {
  float low = 0, high = 1;
  std::string of;
};
// A job's: a built-in data set's [0, 1]; none for a data set from files,
// whose units are its own.
std::optional<FeatureRange> FeatureRangeOf(const DataSpec& data);

class SampleDirectory {
 public:
  // `info`: the shape a sample must have and the classes its label is among;
  // `range`, if given, where its features must lie (a file outside it is
  // refused, as one of the wrong shape is).
  SampleDirectory(std::string folder, const DatasetInfo& info, std::optional<FeatureRange> range = std::nullopt);

  struct Scan {
    int64_t first = 0;    // the index of the first sample that arrived
    int64_t samples = 0;  // how many arrived
    // Files that could not be read ("<file>:<line>: <what>"): left out, and
    // not tried again.
    std::vector<std::string> refused;
    // Files read with a line left out: a writer that stopped mid-line left
    // an unfinished last line that is no row ("<file>:<line>: <what>").
    std::vector<std::string> cut_short;
    // Files read after one named after them (the file, and the one it came
    // after): read, but a resumed run, which goes by name, reads that one again.
    std::vector<std::pair<std::string, std::string>> out_of_order;
    // Files of more samples than the whole buffer (the file, its samples),
    // read alone: what the buffer cannot hold of them is dropped as they
    // arrive, which a file that came mid-run had done unsaid (a user's trial).
    std::vector<std::pair<std::string, int64_t>> oversized;
    // The file left for a later look as still being written (changed in the
    // last moments, or its last line unfinished), with those after it;
    // empty: none. `edgetrain partition` says so: it had shown a worker's
    // folder as holding nothing, unsaid (a user's trial).
    std::string still_written;
    // Why the folder could not be listed ("<folder>: <why>": not allowed to
    // read it, a file where the folder should be); empty: it was, or it
    // does not exist yet. Tried again at the next look.
    std::string unreadable;
    // Files taken as read at this look (SkipThrough): named through what the
    // run this one resumes had read through.
    int64_t skipped_as_read = 0;
  };
  // Reads files not read yet, in name order (StreamNameBefore), as long as
  // they fit in `room` samples (a file is read whole); the rest wait on disk
  // for a later look.
  // A file larger than `whole` (the buffer's capacity) would never fit: it
  // is read alone when `room` is the whole buffer. A folder that does not
  // exist yet is empty: the source may not have started.
  Scan Look(int64_t room = std::numeric_limits<int64_t>::max(), int64_t whole = std::numeric_limits<int64_t>::max());

  // The last file read all of whose samples are among the first `taken`
  // that arrived (a buffer hands them out in order; empty: none), and how
  // many of this run's samples it and the files before it held. A resumed
  // run's worker need not read them again, and its arrivals go on from
  // those samples (a file taken in part, or waiting in the buffer, is read
  // again and arrives again).
  struct Through {
    std::string file;
    int64_t samples = 0;
  };
  Through ReadThrough(int64_t taken) const;
  // Files named `name` or before it, last written before this call, are
  // taken as read, now and when they appear: the run this one resumes
  // trained on them, or they came while the job was stopped. One written
  // since is read, as any new file is, whatever its name: skipped too, every
  // file a writer named before `name` and wrote while the resumed run
  // trained went unread, and the team stood still for want of them (a new
  // user's trial). Called after the folder was first listed (a Welcome
  // again), it only moves the read-through on: this process knows what it
  // read.
  void SkipThrough(std::string name);

  // The samples held: those from first_held() on, in the order they
  // arrived. A sample's index, Look's scan.first on, counts every sample that
  // ever arrived, the forgotten too.
  const Dataset& held() const { return samples_; }
  int64_t first_held() const { return first_held_; }
  // Sample `i` (counted as Look's scan.first counts) into `features` and
  // `label`: one the buffer still holds, not forgotten.
  void CopySample(int64_t i, float* features, int64_t& label) const {
    samples_.CopySamples(i - first_held_, 1, features);
    label = samples_.labels[static_cast<size_t>(i - first_held_)];
  }
  // Samples before `first` are not asked for again (the stream's buffer has
  // passed them): their memory goes back, in lumps of at least half of what
  // is held, so that each is moved at most about once. A worker on a stream
  // kept every sample it had read: at 100 samples a second of
  // Fashion-MNIST's 784 floats, 1.1 GB an hour.
  void ForgetBefore(int64_t first);
  const std::string& folder() const { return folder_; }

 private:
  // Of a file that does not read as samples whole: its rows up to the last
  // newline, if its last line is unfinished and they read; else nothing.
  std::optional<Dataset> FinishedRows(const std::string& text, const std::string& path) const;
  // Why the features `read` from `path` lie outside range_, or empty.
  std::string OutsideRange(const Dataset& read, const std::string& path) const;
  // Of the files watched after they were read, those grown or replaced since, said in `scan`.
  void CheckWatched(Scan& scan);
  // A resumed run's skip (SkipThrough): the name read through, and when it
  // resumed.
  struct ResumeSkip {
    std::string name;
    std::filesystem::file_time_type at;
  };
  // Names new in the folder, not read, into pending_, those `skip` takes as
  // read into seen_; the folder listed only when it may hold new names.
  void ListNew(const std::optional<ResumeSkip>& skip, Scan& scan);

  const std::string folder_;
  const std::optional<FeatureRange> range_;
  Dataset samples_;  // the samples held, features as floats
  int64_t first_held_ = 0;  // the index of samples_'s first
  std::set<std::string> seen_;  // the files read or refused, by name, while they are in the folder
  int64_t listings_ = 0;
  static constexpr int64_t kPruneSeenEvery = 64;
  struct NameOrder {
    bool operator()(const std::string& a, const std::string& b) const { return StreamNameBefore(a, b); }
  };
  std::set<std::string, NameOrder> pending_;  // listed, not read yet, in the order they are read
  // Listed whole once: set by Look's thread, read by SkipThrough's.
  std::atomic<bool> listed_{false};
  timespec listed_time_{};  // the folder's time of change when it was last listed
  int looks_since_listed_ = 0;
  static constexpr int kRelistEvery = 20;
  // Of the last files read, each one's size and inode then, until it is
  // seen to grow or be replaced: a file written in place a line at a time,
  // read after its first line, lost its other lines unsaid (a new user's
  // trial), and one renamed over under a name read before was not read
  // again, unsaid. Neither is read: each is said once, as a file left out.
  // Only the last kWatchedAfterRead: a writer writes one file at a time, and
  // every look (each 50 ms while a worker waits) stats those watched.
  static constexpr size_t kWatchedAfterRead = 8;
  // A file as stat sees it: its size, which file it is (one renamed over
  // another under its name is another inode), and when it last changed.
  struct FileIdentity {
    std::uintmax_t size = 0;
    ino_t inode = 0;
    // When its bytes last changed: a file rewritten in place at the same
    // size, or made again under an inode reused, is another file's bytes.
    int64_t modified_ns = 0;
    bool operator==(const FileIdentity&) const = default;
  };
  static std::optional<FileIdentity> IdentityOf(const std::string& path);
  std::map<std::string, FileIdentity> read_as_;
  // The file read that did not fit the room of the last look, kept as read
  // while the file is as it was then.
  struct Waiting {
    std::string name;
    FileIdentity as;
    Dataset samples;
    std::string cut_short;  // said once the file is taken, not at each look it waits
  };
  std::optional<Waiting> waiting_;
  std::deque<std::string> read_order_;  // the watched files, oldest first
  std::string furthest_read_;            // the last by name of the files read
  // ReadThrough and SkipThrough come from other threads than Look's.
  mutable std::mutex mu_;
  std::string skip_through_;  // names up to this one are read (SkipThrough), for ReadThrough
  std::optional<ResumeSkip> resume_skip_;  // given before the first listing
  // Each file read or refused, in the order read: where its samples end, and its name.
  // The oldest, once taken and read through, fold into folded_ past
  // kFilesKept (ReadThrough): a camera's stream of a file a frame had grown
  // it by 860,000 a day, each walked at every batch taken (found in review).
  // A file named before a folded one that comes after it is no longer
  // judged against it (see ReadThrough).
  mutable std::vector<std::pair<int64_t, std::string>> files_;
  static constexpr size_t kFilesKept = 4096;
  struct Folded {
    int64_t end = 0;      // where the last folded file's samples end
    int64_t samples = 0;  // the folded files' samples
    std::string file;     // the greatest of their names
  };
  mutable Folded folded_;
  int64_t files_read_ = 0;  // files_'s entries over the run, folded ones too
  // The last ReadThrough, and what it was worked out of.
  struct ThroughAsked {
    int64_t taken = 0;
    int64_t files = 0;
    std::string skip_through;
    Through through;
  };
  mutable std::optional<ThroughAsked> through_;  // guarded by mu_
};

}  // namespace edgetrain::agent
