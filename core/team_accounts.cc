#include "core/team_accounts.h"

#include <algorithm>
#include <cmath>

namespace edgetrain {

TeamAccounts::TeamAccounts(int workers, int batch_size, int64_t train_size)
    : workers_(static_cast<size_t>(workers)), batch_size_(batch_size), train_size_(train_size) {}

void TeamAccounts::StreamOpened(int w, int64_t iteration) {
  Worker& k = workers_[w];
  k.compute_s += k.report.compute_s;
  k.stall_s += k.report.stall_s;
  k.wall_s += k.report.wall_s;
  k.energy_j += k.report.energy_j;
  // Its stream's counts and injected samples are its stream's too, carried
  // as a checkpoint carries them: a worker restarted had them start again
  // from 0 in its table, and one reconnected to a coordinator resumed from
  // its checkpoint had them counted twice, the checkpoint's and its own
  // since its start (found in review).
  if (const StreamProgress* kept = KeptStream(k)) {
    k.stream_arrived += kept->arrived_for_good;
    if (!kept->read_through.empty()) k.stream_read_through = kept->read_through;
  }
  if (k.report.stream) {
    k.stream_dropped += k.report.stream->dropped;
    k.stream_wait_s += k.report.stream->wait_s;
    k.stream_refused_files += k.report.stream->refused_files;
    if (!k.report.stream->last_refused.empty()) k.stream_last_refused = k.report.stream->last_refused;
  }
  k.injected += k.report.injected;
  k.counted_stream.reset();
  k.report = {};
  k.iteration = iteration;
}

void TeamAccounts::Pushed(int w, int64_t iteration, int rows, int64_t bytes) {
  Worker& k = workers_[w];
  k.iteration = std::max(k.iteration, iteration);
  k.rows_sent += rows;
  k.bytes_sent += bytes;
}

void TeamAccounts::Reported(int w, const WorkerReport& report, bool trained) {
  Worker& k = workers_[w];
  k.report = report;
  if (trained && report.samples > 0 && report.stream) k.counted_stream = report.stream;
  if (trained) {
    k.samples += report.samples;
    samples_ += report.samples;
  }
  if (report.loss_count > 0) {
    // Each of the report's batches moves it as one step of a job of one does.
    const double mean = report.loss_sum / static_cast<double>(report.loss_count);
    const double share = 1 - std::pow(1 - kLossSmoothing, static_cast<double>(report.loss_count));
    smoothed_loss_ = smoothed_loss_ < 0 ? mean : smoothed_loss_ + share * (mean - smoothed_loss_);
  }
}

void TeamAccounts::Delivered(int w, int64_t bytes, Duration took) {
  workers_[w].bytes_received += bytes;
  workers_[w].untold_transfer_s += ToSeconds(took);
}

double TeamAccounts::TakeTransferSeconds(int w) { return std::exchange(workers_[w].untold_transfer_s, 0.0); }

void TeamAccounts::Holding(int w, bool holding, Duration for_) {
  workers_[w].holding_team = holding;
  if (holding) workers_[w].held_team_s += ToSeconds(for_);
}

std::vector<WorkerTotals> TeamAccounts::Totals() const {
  std::vector<WorkerTotals> totals;
  for (const Worker& k : workers_) {
    totals.push_back({k.iteration, k.samples, k.rows_sent, k.bytes_sent, k.bytes_received,
                      k.compute_s + k.report.compute_s, k.stall_s + k.report.stall_s, k.wall_s + k.report.wall_s,
                      k.energy_j + k.report.energy_j, k.held_team_s});
  }
  for (size_t w = 0; w < workers_.size(); ++w) {
    const Worker& k = workers_[w];
    WorkerTotals& t = totals[w];
    t.stream_read_through = StreamReadThrough(static_cast<int>(w));
    // Of a stream from a folder, only the files read through: a resumed run
    // reads the others again, and counts them then.
    const StreamProgress* kept = KeptStream(k);
    t.stream_arrived = k.stream_arrived + (kept ? kept->arrived_for_good : 0);
    t.stream_dropped = k.stream_dropped + (k.report.stream ? k.report.stream->dropped : 0);
    t.stream_wait_s = k.stream_wait_s + (k.report.stream ? k.report.stream->wait_s : 0);
    t.stream_refused_files = k.stream_refused_files + (k.report.stream ? k.report.stream->refused_files : 0);
    t.stream_last_refused = k.report.stream && !k.report.stream->last_refused.empty() ? k.report.stream->last_refused
                                                                                      : k.stream_last_refused;
    t.injected = k.injected + k.report.injected;
  }
  totals.insert(totals.end(), departed_.begin(), departed_.end());
  return totals;
}

const StreamProgress* TeamAccounts::KeptStream(const Worker& k) {
  const bool folder = (k.report.stream && !k.report.stream->read_through.empty()) ||
                      (k.counted_stream && !k.counted_stream->read_through.empty());
  if (folder) return k.counted_stream ? &*k.counted_stream : nullptr;
  return k.report.stream ? &*k.report.stream : nullptr;
}

std::string TeamAccounts::StreamReadThrough(int w) const {
  const Worker& k = workers_[static_cast<size_t>(w)];
  const StreamProgress* kept = KeptStream(k);
  if (kept && !kept->read_through.empty()) return kept->read_through;
  return k.stream_read_through;
}

void TeamAccounts::TrainedOnFromCopy(int64_t own_clock, int64_t copy_clock) {
  const int64_t each = std::max<int64_t>(0, copy_clock - own_clock) * batch_size_;
  samples_ += each * static_cast<int64_t>(workers_.size());
  // Each worker's share of them too, so that the workers still add up to
  // the job's samples: they had counted only what the new coordinator heard
  // (a user's trial: 306,944 twice against the job's 846,144).
  for (Worker& k : workers_) k.samples += each;
}

void TeamAccounts::Restore(int64_t iteration, int64_t samples, const std::vector<WorkerTotals>& workers,
                           std::optional<double> loss, double job_energy_j) {
  double held_j = 0;
  for (const WorkerTotals& t : workers) held_j += t.energy_j;
  carried_energy_j_ = std::max(0.0, job_energy_j - held_j);
  samples_ = samples;
  resumed_iteration_ = iteration;
  resumed_samples_ = samples;
  if (loss) smoothed_loss_ = *loss;
  departed_.assign(workers.begin() + static_cast<std::ptrdiff_t>(std::min(workers.size(), workers_.size())),
                   workers.end());
  for (size_t w = 0; w < workers.size() && w < workers_.size(); ++w) {
    const WorkerTotals& t = workers[w];
    Worker& k = workers_[w];
    k = Worker{};
    k.iteration = t.iteration;
    k.samples = t.samples;
    k.rows_sent = t.rows_sent;
    k.bytes_sent = t.bytes_sent;
    k.bytes_received = t.bytes_received;
    k.compute_s = t.compute_s;
    k.stall_s = t.stall_s;
    k.wall_s = t.wall_s;
    k.energy_j = t.energy_j;
    k.held_team_s = t.held_team_s;
    k.stream_read_through = t.stream_read_through;
    k.stream_arrived = t.stream_arrived;
    k.stream_dropped = t.stream_dropped;
    k.stream_wait_s = t.stream_wait_s;
    k.stream_refused_files = t.stream_refused_files;
    k.stream_last_refused = t.stream_last_refused;
    k.injected = t.injected;
  }
}

JobProgress TeamAccounts::Progress(double elapsed_s, const std::vector<bool>& active) const {
  JobProgress p;
  p.state = JobState::kTraining;
  p.iteration = team_iteration();
  p.samples = samples_;
  p.epoch = static_cast<int>(samples_ / std::max<int64_t>(1, train_size_));
  p.loss = loss();
  p.elapsed_s = elapsed_s;
  p.samples_per_second = elapsed_s > 0 ? static_cast<double>(samples_) / elapsed_s : 0;
  for (int w = 0; w < static_cast<int>(workers_.size()); ++w) {
    const Worker& k = workers_[w];
    WorkerProgress wp;
    wp.rank = w;
    // The batch it last said it takes (dealt by compute under computeWeighted).
    wp.batch_size = k.report.batch_size > 0 ? k.report.batch_size : batch_size_;
    wp.samples = k.samples;
    wp.bandwidth_mbps = k.report.uplink_mbps;
    wp.stall_s = k.stall_s + k.report.stall_s;
    wp.wall_s = k.wall_s + k.report.wall_s;
    wp.compute_s = k.compute_s + k.report.compute_s;
    wp.stall_fraction = wp.wall_s > 0 ? wp.stall_s / wp.wall_s : 0;
    wp.iteration = k.iteration;
    wp.rows_sent = k.rows_sent;
    wp.bytes_sent = k.bytes_sent;
    wp.bytes_received = k.bytes_received;
    wp.active = active[w];
    wp.stream = k.report.stream;
    // Counted over every run, as its samples are: a resumed run's table adds up.
    if (wp.stream) {
      wp.stream->arrived += k.stream_arrived;
      wp.stream->arrived_for_good += k.stream_arrived;
      wp.stream->dropped += k.stream_dropped;
      wp.stream->wait_s += k.stream_wait_s;
      wp.stream->refused_files += k.stream_refused_files;
      if (wp.stream->last_refused.empty()) wp.stream->last_refused = k.stream_last_refused;
    }
    wp.injected = k.injected + k.report.injected;
    wp.compression = k.report.compression;
    wp.energy_joules = k.energy_j + k.report.energy_j;
    wp.held_team_s = k.held_team_s;
    wp.holding_team = k.holding_team;
    p.workers.push_back(wp);
  }
  for (const WorkerTotals& gone : departed_) {
    p.departed_bytes_sent += gone.bytes_sent;
    p.departed_bytes_received += gone.bytes_received;
  }
  p.energy_joules = EnergyJoules();
  return p;
}

double TeamAccounts::EnergyJoules() const {
  // Modelled: the workers' devices; the coordinator stands for the access point.
  double energy = carried_energy_j_;
  for (const Worker& k : workers_) energy += k.energy_j + k.report.energy_j;
  for (const WorkerTotals& gone : departed_) energy += gone.energy_j;
  return energy;
}

}  // namespace edgetrain
