#include "agent/data/sample_directory.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <vector>

#include "agent/data/csv_format.h"
#include "agent/data/gzip_file.h"

namespace edgetrain::agent {

namespace fs = std::filesystem;

namespace {

// How long a file whose last line is unfinished waits for the rest.
constexpr auto kSettle = std::chrono::seconds(2);

// Whether a time stat gave (st_mtim) is within kSettle of now: a folder's,
// stat'ed already at every look, is not asked for again.
bool ChangedWithinSettle(const timespec& changed) {
  timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const auto age = std::chrono::seconds(now.tv_sec - changed.tv_sec) +
                   std::chrono::nanoseconds(now.tv_nsec - changed.tv_nsec);
  // One written "in the future" by more than that is of a clock that is off
  // (a share's server, a copy that kept a device's time): taken as written
  // just now, it waited for ever, and every file after it with it (found
  // in review).
  return age < kSettle && age > -kSettle;
}

// The same of a time as nanoseconds since the epoch (FileIdentity's): the
// files a look reads were stat'ed as it began, and are not asked for again.
bool ChangedWithinSettle(int64_t modified_ns) {
  return ChangedWithinSettle(timespec{static_cast<time_t>(modified_ns / 1'000'000'000),
                                      static_cast<long>(modified_ns % 1'000'000'000)});
}

// Whether `bytes` start as gzip does (ReadDataFile unpacks such a file).
bool StartsAsGzip(std::string_view bytes) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  return bytes.size() >= 2 && byte(0) == 0x1f && byte(1) == 0x8b;
}

bool IsGzipFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[2] = {0, 0};
  return in.read(magic, 2) && StartsAsGzip(std::string_view(magic, 2));
}

// A file its writer may still be writing, in place rather than under a dot
// name: its last line unfinished (no newline), written to within kSettle. Its
// first rows were read and the rest lost, unsaid (a new user's trial). One
// that stays so, a file written whole without a final newline, is read once
// it has settled. Not a gzip file, whose last byte is its length's, newline
// or not: one whose last byte happened to be a newline was read unfinished
// and refused for good (found in review); one that does not unpack whole
// waits instead (Look).
bool StillBeingWritten(const fs::path& path, int64_t modified_ns) {
  std::ifstream in(path, std::ios::binary);
  // One open for its first bytes and its last.
  char first[2] = {0, 0};
  in.read(first, 2);
  const auto read = static_cast<size_t>(in.gcount());
  if (read == 0 || StartsAsGzip(std::string_view(first, read))) return false;  // empty, not there, or gzip
  in.clear();
  in.seekg(-1, std::ios::end);
  char last = '\n';
  in.get(last);
  return last != '\n' && ChangedWithinSettle(modified_ns);
}

// A line with words in it, not a row of numbers: a header.
bool HasWords(std::string_view line) {
  return std::any_of(line.begin(), line.end(), [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) != 0 && c != 'e' && c != 'E';  // 1e-3 is a number
  });
}

// A file that does not read as samples yet may be one whose rows are on
// their way: nothing at all (a writer's open() makes it empty), or a header
// alone. Written to within kSettle, it waits to settle before it is refused:
// an empty file refused at once was never looked at again, its rows, written
// a second later, never read (a user's trial). A bad row is refused at once.
bool MayHaveRowsComing(const std::string& text, int64_t modified_ns) {
  const size_t first_end = text.find('\n');
  if (first_end != std::string::npos && first_end + 1 != text.size()) return false;  // rows past the first line
  return (text.empty() || HasWords(text)) && ChangedWithinSettle(modified_ns);
}


}  // namespace

std::optional<int64_t> StreamFileRows(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string first;
  std::getline(in, first);
  if (StartsAsGzip(first)) return std::nullopt;
  if (first.empty() && in.eof()) return 0;
  int64_t rows = HasWords(first) ? 0 : 1;
  // The rest a block at a time: a folder filled before the run may hold
  // files of many megabytes.
  std::vector<char> block(1 << 20);
  char last = '\n';
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    const auto n = static_cast<size_t>(in.gcount());
    rows += std::count(block.begin(), block.begin() + static_cast<std::ptrdiff_t>(n), '\n');
    last = block[n - 1];
  }
  return rows + (last != '\n' ? 1 : 0);  // an unfinished last line is a row too
}

std::optional<Dataset> SampleDirectory::FinishedRows(const std::string& text, const std::string& path) const {
  if (text.empty() || text.back() == '\n') return std::nullopt;
  const size_t last_line = text.rfind('\n');
  if (last_line == std::string::npos) return std::nullopt;  // no finished line at all
  StatusOr<Dataset> finished = ParseCsv(std::string_view(text).substr(0, last_line + 1), samples_.info, {}, path);
  if (!finished.ok() || finished->size() == 0) return std::nullopt;  // a fault before the last line
  return std::move(*finished);
}

bool IsStreamFileName(const std::string& name) {
  if (name.empty() || name[0] == '.') return false;
  const auto ends_with = [&](std::string_view suffix) {
    return name.size() > suffix.size() &&
           std::equal(suffix.begin(), suffix.end(), name.end() - static_cast<std::ptrdiff_t>(suffix.size()),
                      [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
  };
  // NAME.csv.gz too, as a gzip file is read under any name: left alone, a
  // writer's compressed files starved its worker (a new user's trial).
  return ends_with(".csv") || ends_with(".csv.gz");
}

bool StreamNameBefore(std::string_view a, std::string_view b) {
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      // Leading zeros aside, the longer run is the larger number.
      size_t i_end = i, j_end = j;
      while (i_end < a.size() && digit(a[i_end])) ++i_end;
      while (j_end < b.size() && digit(b[j_end])) ++j_end;
      while (i + 1 < i_end && a[i] == '0') ++i;
      while (j + 1 < j_end && b[j] == '0') ++j;
      const std::string_view x = a.substr(i, i_end - i), y = b.substr(j, j_end - j);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i_end;
      j = j_end;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;  // equal but for leading zeros (01.csv, 1.csv): still an order
}

std::optional<FeatureRange> FeatureRangeOf(const DataSpec& data) {
  if (data.files) return std::nullopt;
  return FeatureRange{0, 1, std::string(NameOf(data.dataset))};
}

std::optional<SampleDirectory::FileIdentity> SampleDirectory::IdentityOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{static_cast<std::uintmax_t>(st.st_size), st.st_ino,
                      static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

SampleDirectory::SampleDirectory(std::string folder, const DatasetInfo& info, std::optional<FeatureRange> range)
    : folder_(std::move(folder)), range_(std::move(range)) {
  samples_.info = info;
  samples_.info.train_size = samples_.info.test_size = 0;
}

void SampleDirectory::CheckWatched(Scan& scan) {
  for (auto was = read_as_.begin(); was != read_as_.end();) {
    const std::string path = (fs::path(folder_) / was->first).string();
    const std::optional<FileIdentity> now = IdentityOf(path);
    if (now && now->inode != was->second.inode) {
      // Renamed over the one read, as a writer does who writes whole
      // under a dot name: the advice that rows written in place are lost
      // was no help to one who had done just that (a user's trial).
      scan.refused.push_back(path + ": replaced after it was read, under the same name, and not read again: each "
                             "name is read once; give each file a name of its own (a count, a time) after the last");
      was = read_as_.erase(was);
    } else if (now && now->size > was->second.size) {
      scan.refused.push_back(path + ": " + std::to_string(now->size - was->second.size) +
                             " bytes were written to it after it was read, and are not read: write a file whole "
                             "under another name (.NAME.csv) and rename it into the folder");
      was = read_as_.erase(was);
    } else {
      ++was;
    }
  }
}

void SampleDirectory::ListNew(const std::optional<ResumeSkip>& skip, Scan& scan) {
  struct stat folder {};
  if (::stat(folder_.c_str(), &folder) != 0) {
    // Not there yet is the source not started; anything else is said: a
    // folder the agent may not read, or a path to a file, read as empty,
    // trained on nothing and exited 0 (found in review).
    if (errno != ENOENT) scan.unreadable = folder_ + ": " + std::strerror(errno);
    return;
  }
  if (!S_ISDIR(folder.st_mode)) {
    scan.unreadable = folder_ + ": a file, not a folder";
    return;
  }
  // A file the run this one resumes had read through, by its name and by
  // its time: named through the read-through and last written before the
  // resume. One written since is new and read, whatever its name: skipped
  // too, a camera's frames named before a sensor's went unread through the
  // resumed run (a new user's trial). By its time, not by whether the first
  // listing saw it: a folder empty at the resume (a volume filled late) had
  // every file trained on read again (found in review).
  const auto read_before = [&](const fs::directory_entry& entry) {
    if (!skip || StreamNameBefore(skip->name, entry.path().filename().string())) return false;
    std::error_code unknown;
    const fs::file_time_type written = entry.last_write_time(unknown);
    return !unknown && written <= skip->at;
  };
  // A folder's time changes as names come into it or leave it: one that has
  // not changed since it was listed holds no new name, and is not listed
  // again (found in review: a backlog of 60,000 files of one row, listed
  // and sorted at every look, was read at 272 samples a second in looks of
  // 32, and at 9,562 so, docs/streams.md). A file system stamps coarsely,
  // and a name added within the tick of the listing keeps its time: a
  // folder changed within the last moments is listed at every look, any
  // at least every kRelistEvery looks.
  const timespec changed = folder.st_mtim;
  const bool same = listed_.load() && changed.tv_sec == listed_time_.tv_sec && changed.tv_nsec == listed_time_.tv_nsec;
  if (same && !ChangedWithinSettle(changed) && ++looks_since_listed_ < kRelistEvery) return;
  std::error_code ec;
  // Now and then, the names read that have left the folder are forgotten:
  // a writer that removes what was read (a camera's frames, rotated) would
  // otherwise grow seen_ by a name a file for the run. A file made again
  // under a name forgotten is a new file, read.
  const bool prune = ++listings_ % kPruneSeenEvery == 0 && seen_.size() > kFilesKept;
  std::set<std::string> still_here;
  for (fs::directory_iterator it(folder_, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (prune && seen_.contains(name)) still_here.insert(name);
    if (!IsStreamFileName(name) || seen_.contains(name) || pending_.contains(name)) continue;
    std::error_code kind;  // not `ec`: a file gone since it was listed does not end the listing
    if (!it->is_regular_file(kind)) continue;
    if (read_before(*it)) {
      seen_.insert(std::move(name));
      ++scan.skipped_as_read;
    } else {
      pending_.insert(std::move(name));
    }
  }
  if (ec) {
    scan.unreadable = folder_ + ": " + ec.message();  // listed again at the next look
    return;
  }
  if (prune) seen_ = std::move(still_here);  // the listing was whole
  listed_.store(true);
  listed_time_ = changed;
  looks_since_listed_ = 0;
}

SampleDirectory::Scan SampleDirectory::Look(int64_t room, int64_t whole) {
  Scan scan;
  scan.first = first_held_ + samples_.size();
  std::optional<ResumeSkip> skip;
  {
    std::lock_guard lock(mu_);
    skip = resume_skip_;
  }
  CheckWatched(scan);
  ListNew(skip, scan);
  const int64_t sample = samples_.SampleSize();
  for (auto next = pending_.begin(); next != pending_.end() && scan.samples < room;) {
    // The rest wait on disk for room in the buffer.
    const std::string name = *next;
    const std::string path = (fs::path(folder_) / name).string();
    // Gone since it was listed: there is nothing to read; listed again if it comes back.
    const std::optional<FileIdentity> before = IdentityOf(path);
    if (!before) {
      next = pending_.erase(next);
      continue;
    }
    // A file that did not fit at the last look is not read again while it
    // is as it was: one larger than the room was read and parsed at every
    // look, nine times over (found in review).
    std::optional<Waiting> read_before;
    if (waiting_ && waiting_->name == name && waiting_->as == *before) read_before = std::move(waiting_);
    waiting_.reset();
    if (!read_before) {
      // It and those after it wait for a later look: files are taken in name
      // order, which a resumed run's skipping by name relies on.
      if (StillBeingWritten(path, before->modified_ns)) {
        scan.still_written = path;
        break;
      }
      const StatusOr<std::string> text = ReadDataFile(path);
      StatusOr<Dataset> read = text.ok() ? ParseCsv(*text, samples_.info, {}, path) : StatusOr<Dataset>(text.status());
      std::string cut_short;
      if (!read.ok() && text.ok()) {
        // Settled with an unfinished last line that is no row: its writer
        // stopped mid-line (killed, its disk full). The finished rows before it
        // are read, that line said to be left out; the whole file had been
        // refused, its good rows with it (a user's trial).
        if (std::optional<Dataset> finished = FinishedRows(*text, path)) {
          cut_short = read.status().message() + " (its last line, unfinished: no newline ends it)";
          read = std::move(*finished);
        }
      }
      if (read.ok()) {
        if (const std::string outside = OutsideRange(*read, path); !outside.empty()) {
          read = Status(StatusCode::kInvalidArgument, outside);
        }
      }
      // Changed while it was read (written to, renamed over): what was read
      // is not what the file is; it waits for a later look. The file read
      // is known to be the one stat saw before and after (found in review).
      if (IdentityOf(path) != before) {
        scan.still_written = path;
        break;
      }
      if (!read.ok()) {
        // It and those after it wait for a later look, as above; so does a
        // gzip file written to just now that does not unpack whole, which
        // no unfinished line shows (its last byte may be anything).
        if ((text.ok() && MayHaveRowsComing(*text, before->modified_ns)) ||
            (!text.ok() && IsGzipFile(path) && ChangedWithinSettle(before->modified_ns))) {
          scan.still_written = path;
          break;
        }
        seen_.insert(name);
        next = pending_.erase(next);
        scan.refused.push_back(read.status().message());
        // In the order of the files, with no samples: read through once the
        // files before it are, so that a resumed run does not refuse it again
        // (its refusal is counted over the runs, core/team_accounts.h).
        std::lock_guard lock(mu_);
        files_.emplace_back(first_held_ + samples_.size(), name);
        ++files_read_;
        continue;
      }
      read_before = Waiting{name, *before, std::move(*read), std::move(cut_short)};
    }
    const int64_t n = read_before->samples.size();
    // One that does not fit waits for room, unless it never would (larger
    // than the whole buffer): that one is taken, alone, once the buffer is empty.
    if (scan.samples + n > room && (scan.samples > 0 || n <= whole || room < whole)) {
      waiting_ = std::move(read_before);
      break;
    }
    if (!read_before->cut_short.empty()) scan.cut_short.push_back(read_before->cut_short);
    if (n > whole) scan.oversized.emplace_back(name, n);
    seen_.insert(name);
    next = pending_.erase(next);
    if (StreamNameBefore(name, furthest_read_)) {
      scan.out_of_order.emplace_back(name, furthest_read_);
    } else {
      furthest_read_ = name;
    }
    // As read: its size then, and which file it was.
    read_as_[name] = read_before->as;
    read_order_.push_back(name);
    if (read_order_.size() > kWatchedAfterRead) {
      read_as_.erase(read_order_.front());
      read_order_.pop_front();
    }
    const Dataset& read = read_before->samples;
    const size_t at = samples_.features.size();
    samples_.features.resize(at + static_cast<size_t>(n * sample));
    read.CopySamples(0, n, samples_.features.data() + at);
    samples_.labels.insert(samples_.labels.end(), read.labels.begin(), read.labels.end());
    scan.samples += n;
    std::lock_guard lock(mu_);
    files_.emplace_back(first_held_ + samples_.size(), name);
    ++files_read_;
  }
  return scan;
}

std::string SampleDirectory::OutsideRange(const Dataset& read, const std::string& path) const {
  if (!range_ || read.size() == 0) return "";
  // Over the samples as read, in whichever form they are held: not copied
  // out first (they are copied once, into the buffer, after this).
  float low = 0, high = 0;
  if (!read.features.empty()) {
    const auto [l, h] = std::minmax_element(read.features.begin(), read.features.end());
    low = *l, high = *h;
  } else {
    const auto [l, h] = std::minmax_element(read.pixels.begin(), read.pixels.end());
    low = *l * read.pixel_scale, high = *h * read.pixel_scale;
  }
  // A rounding's worth of slack: a pixel written as 1.0000001 is 1.
  constexpr float kSlack = 1e-3f;
  if (low >= range_->low - kSlack && high <= range_->high + kSlack) return "";
  std::ostringstream said;
  said << path << ": its features run from " << low << " to " << high << ", where the " << range_->of << " set's run from "
       << range_->low << " to " << range_->high
       << " (pixels, scaled): divide each by the largest a pixel can be (16, 255), and put the label first";
  return said.str();
}

void SampleDirectory::ForgetBefore(int64_t first) {
  const int64_t passed = std::min(first - first_held_, samples_.size());
  // Erasing from the front moves what stays: only once what goes is as much.
  if (passed <= 0 || passed * 2 < samples_.size()) return;
  const auto features = static_cast<std::ptrdiff_t>(passed * samples_.SampleSize());
  samples_.features.erase(samples_.features.begin(), samples_.features.begin() + features);
  samples_.labels.erase(samples_.labels.begin(), samples_.labels.begin() + static_cast<std::ptrdiff_t>(passed));
  // The capacity too: a burst that filled the buffer once is not held for ever.
  samples_.features.shrink_to_fit();
  samples_.labels.shrink_to_fit();
  first_held_ += passed;
}

SampleDirectory::Through SampleDirectory::ReadThrough(int64_t taken) const {
  std::lock_guard lock(mu_);
  // Asked at every push, keep-alives among them, and the same until a batch
  // is taken or a file read: worked out again only then. Each asking walks
  // every file read, one a frame for a camera's stream (found in review).
  if (through_ && through_->taken == taken && through_->files == files_read_ &&
      through_->skip_through == skip_through_) {
    return through_->through;
  }
  // Files are read as they come, and one may come after a file named after
  // it (3.csv after 10.csv). What is read through is a name: the greatest
  // before which every file read was taken whole, so that a resumed run,
  // skipping by name, skips none it did not train on. The last taken in the
  // order read said 3.csv, and a resumed run trained on 10.csv again (a new
  // user's trial); a file taken but named after one not taken is read again.
  std::optional<std::string> least_not_taken;
  for (const auto& [end, name] : files_) {
    if (end > taken && (!least_not_taken || StreamNameBefore(name, *least_not_taken))) least_not_taken = name;
  }
  const auto read_through = [&](const std::string& name, int64_t end) {
    return end <= taken && (!least_not_taken || StreamNameBefore(name, *least_not_taken));
  };
  // Past twice kFilesKept, the oldest read through fold, down to kFilesKept.
  // Taken now, they stay taken; read through now, they would cease to be
  // only if a file named before them came after kFilesKept others, which a
  // writer's own order does not do.
  size_t fold = 0;
  if (files_.size() > 2 * kFilesKept) {
    while (files_.size() - fold > kFilesKept && read_through(files_[fold].second, files_[fold].first)) ++fold;
  }
  for (size_t i = 0; i < fold; ++i) {
    auto& [end, name] = files_[i];
    folded_.samples += end - folded_.end;
    folded_.end = end;
    if (folded_.file.empty() || StreamNameBefore(folded_.file, name)) folded_.file = std::move(name);
  }
  files_.erase(files_.begin(), files_.begin() + static_cast<std::ptrdiff_t>(fold));
  Through through{skip_through_, folded_.samples};
  if (!folded_.file.empty() && (through.file.empty() || StreamNameBefore(through.file, folded_.file))) {
    through.file = folded_.file;
  }
  int64_t begin = folded_.end;
  for (const auto& [end, name] : files_) {
    const int64_t held = end - begin;
    begin = end;
    if (!read_through(name, end)) continue;
    through.samples += held;
    if (through.file.empty() || StreamNameBefore(through.file, name)) through.file = name;
  }
  through_ = ThroughAsked{taken, files_read_, skip_through_, through};
  return through;
}

void SampleDirectory::SkipThrough(std::string name) {
  std::lock_guard lock(mu_);
  if (skip_through_.empty() || StreamNameBefore(skip_through_, name)) skip_through_ = name;
  // Only before this process first listed its folder: after, what it read
  // is known by name, and a Welcome again (a worker counted out and taken
  // back, its stream reconnected) took its pending files as read, the
  // camera's frames among them (found in review).
  if (listed_.load()) return;
  if (!resume_skip_ || StreamNameBefore(resume_skip_->name, name)) {
    resume_skip_ = ResumeSkip{std::move(name), fs::file_time_type::clock::now()};
  }
}

}  // namespace edgetrain::agent
