#include "agent/transport/in_memory_transport.h"

#include <deque>
#include <map>

namespace edgetrain::agent {
namespace {

// Both directions of one stream, under one lock.
struct Pipe {
  explicit Pipe(Clock& clock) : changed(clock) {}
  std::mutex mu;
  ClockCondition changed;
  std::function<void(const v1::WorkerMessage&)> tap;  // set at creation
  std::deque<v1::WorkerMessage> to_coordinator;       // guarded by mu
  std::deque<v1::CoordinatorMessage> to_worker;       // guarded by mu
  bool closed = false;                                // guarded by mu
  Status ended = UnavailableError("the coordinator ended the stream");  // what the worker hears once closed

  void Close(Status why) {
    std::lock_guard lock(mu);
    if (closed) return;
    closed = true;
    ended = std::move(why);
    changed.NotifyAll();
  }
};

class InMemoryWorkerStream final : public WorkerStream {
 public:
  explicit InMemoryWorkerStream(Pipe& pipe) : pipe_(pipe) {}
  Status Send(const v1::CoordinatorMessage& message) override {
    std::lock_guard lock(pipe_.mu);
    if (pipe_.closed) return UnavailableError("the worker's stream is closed");
    pipe_.to_worker.push_back(message);
    pipe_.changed.NotifyAll();
    return Status::Ok();
  }
  StatusOr<v1::WorkerMessage> Receive() override {
    std::unique_lock lock(pipe_.mu);
    pipe_.changed.Wait(lock, [&] { return pipe_.closed || !pipe_.to_coordinator.empty(); });
    if (pipe_.to_coordinator.empty()) return UnavailableError("the worker closed its stream");
    v1::WorkerMessage m = std::move(pipe_.to_coordinator.front());
    pipe_.to_coordinator.pop_front();
    if (pipe_.tap) pipe_.tap(m);
    return m;
  }
  void Cut() override { pipe_.Close(CancelledError("the coordinator cut the stream")); }

 private:
  Pipe& pipe_;
};

class InMemoryCoordinatorStream final : public CoordinatorStream {
 public:
  explicit InMemoryCoordinatorStream(std::shared_ptr<Pipe> pipe) : pipe_(std::move(pipe)) {}
  ~InMemoryCoordinatorStream() override { Close(); }
  Status Send(const v1::WorkerMessage& message) override {
    std::lock_guard lock(pipe_->mu);
    if (pipe_->closed) return UnavailableError("the stream to the coordinator is closed");
    pipe_->to_coordinator.push_back(message);
    pipe_->changed.NotifyAll();
    return Status::Ok();
  }
  StatusOr<v1::CoordinatorMessage> Receive() override {
    std::unique_lock lock(pipe_->mu);
    pipe_->changed.Wait(lock, [&] { return pipe_->closed || !pipe_->to_worker.empty(); });
    if (pipe_->to_worker.empty()) return pipe_->ended;
    v1::CoordinatorMessage m = std::move(pipe_->to_worker.front());
    pipe_->to_worker.pop_front();
    return m;
  }
  void Close() override { pipe_->Close(CancelledError("closed by the worker")); }

 private:
  std::shared_ptr<Pipe> pipe_;
};

class InMemoryServer;

}  // namespace

struct InMemoryNetwork::State {
  explicit State(Clock& c) : clock(c), changed(c) {}
  Clock& clock;
  std::mutex mu;
  ClockCondition changed;                 // a server appeared
  std::function<void(const v1::WorkerMessage&)> tap;
  std::map<std::string, InMemoryServer*> servers;  // guarded by mu
};

namespace {

class InMemoryServer final : public TrainingServer {
 public:
  InMemoryServer(std::shared_ptr<InMemoryNetwork::State> net, std::string address, WorkerSessions& sessions)
      : net_(std::move(net)), address_(std::move(address)), sessions_(sessions) {}
  ~InMemoryServer() override { Shutdown(); }
  const std::string& address() const override { return address_; }

  // With the network's lock held: a new stream, served on a thread of its own.
  std::shared_ptr<Pipe> Accept() {
    auto pipe = std::make_shared<Pipe>(net_->clock);
    pipe->tap = net_->tap;
    std::lock_guard lock(mu_);
    pipes_.push_back(pipe);
    threads_.push_back(net_->clock.StartThread("stream of " + address_, [this, pipe] { ServeStream(*pipe); }));
    return pipe;
  }

  void Shutdown() override {
    {
      std::lock_guard lock(net_->mu);
      auto it = net_->servers.find(address_);
      if (it != net_->servers.end() && it->second == this) net_->servers.erase(it);
    }
    std::vector<ClockThread> threads;
    {
      std::lock_guard lock(mu_);
      // Streams still open are ended at once: nobody waits on a dead link.
      for (auto& pipe : pipes_) pipe->Close(UnavailableError("the coordinator shut down"));
      threads = std::move(threads_);
    }
    for (auto& t : threads) t.Join();
  }

 private:
  void ServeStream(Pipe& pipe) {
    InMemoryWorkerStream stream(pipe);
    auto first = stream.Receive();
    if (!first.ok()) return pipe.Close(CancelledError("the stream ended before its hello"));
    if (!first->has_hello()) return pipe.Close(FailedPreconditionError("a stream must open with a hello"));
    if (Status admitted = sessions_.Admit(first->hello()); !admitted.ok()) return pipe.Close(admitted);
    Status served = sessions_.Serve(first->hello(), stream);
    pipe.Close(served.ok() ? UnavailableError("the coordinator ended the stream") : served);
  }

  std::shared_ptr<InMemoryNetwork::State> net_;
  const std::string address_;
  WorkerSessions& sessions_;
  std::mutex mu_;
  std::vector<std::shared_ptr<Pipe>> pipes_;  // guarded by mu_
  std::vector<ClockThread> threads_;          // guarded by mu_
};

class InMemoryConnector final : public CoordinatorConnector {
 public:
  InMemoryConnector(std::shared_ptr<InMemoryNetwork::State> net, std::string address)
      : net_(std::move(net)), address_(std::move(address)) {}
  StatusOr<std::unique_ptr<CoordinatorStream>> Connect(Duration timeout) override {
    std::unique_lock lock(net_->mu);
    if (!net_->changed.WaitFor(lock, timeout, [&] { return net_->servers.count(address_) > 0; })) {
      return UnavailableError("cannot reach the coordinator at " + address_);
    }
    return std::unique_ptr<CoordinatorStream>(
        std::make_unique<InMemoryCoordinatorStream>(net_->servers.at(address_)->Accept()));
  }
  const std::string& address() const override { return address_; }

 private:
  std::shared_ptr<InMemoryNetwork::State> net_;
  std::string address_;
};

}  // namespace

InMemoryNetwork::InMemoryNetwork(Clock& clock) : state_(std::make_shared<State>(clock)) {}
InMemoryNetwork::~InMemoryNetwork() = default;

StatusOr<std::unique_ptr<TrainingServer>> InMemoryNetwork::Serve(const std::string& address,
                                                                 WorkerSessions& sessions) {
  auto server = std::make_unique<InMemoryServer>(state_, address, sessions);
  std::lock_guard lock(state_->mu);
  if (state_->servers.count(address)) return UnavailableError(address + " is already served");
  state_->servers[address] = server.get();
  state_->changed.NotifyAll();
  return std::unique_ptr<TrainingServer>(std::move(server));
}

void InMemoryNetwork::OnPushRead(std::function<void(const v1::WorkerMessage&)> tap) {
  std::lock_guard lock(state_->mu);
  state_->tap = std::move(tap);
}

std::unique_ptr<CoordinatorConnector> InMemoryNetwork::Connector(const std::string& address) {
  return std::make_unique<InMemoryConnector>(state_, address);
}

}  // namespace edgetrain::agent
