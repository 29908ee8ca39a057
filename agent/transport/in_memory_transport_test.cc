#include "agent/transport/in_memory_transport.h"

#include <gtest/gtest.h>

#include "core/deterministic_clock.h"

namespace edgetrain::agent {
namespace {

using std::chrono::seconds;

// Echoes each push's iteration back as an update part number, until the worker leaves.
class EchoSessions final : public WorkerSessions {
 public:
  Status Admit(const v1::Hello& hello) override {
    return hello.job() == "echo" ? Status::Ok() : FailedPreconditionError("this coordinator trains job \"echo\"");
  }
  Status Serve(const v1::Hello&, WorkerStream& stream) override {
    for (;;) {
      auto m = stream.Receive();
      if (!m.ok()) return Status::Ok();
      v1::CoordinatorMessage reply;
      reply.mutable_update()->set_part(static_cast<int>(m->push().iteration()));
      if (!stream.Send(reply).ok()) return Status::Ok();
    }
  }
};

// A stream to the server at "c" that has sent its hello for `job`.
std::unique_ptr<CoordinatorStream> Opened(InMemoryNetwork& network, const std::string& job) {
  auto stream = network.Connector("c")->Connect(seconds(1));
  EXPECT_TRUE(stream.ok());
  v1::WorkerMessage hello;
  *hello.mutable_hello() = MakeHello(job, 1, 0);
  EXPECT_TRUE((*stream)->Send(hello).ok());
  return std::move(*stream);
}

TEST(InMemoryTransportTest, AStreamDeliversInOrderAfterAnAdmittedHello) {
  DeterministicClock clock;
  clock.Run("test", [&] {
    InMemoryNetwork network(clock);
    EchoSessions sessions;
    auto server = network.Serve("c", sessions);
    ASSERT_TRUE(server.ok());
    auto stream = Opened(network, "echo");
    for (int i = 1; i <= 3; ++i) {
      v1::WorkerMessage push;
      push.mutable_push()->set_iteration(i);
      ASSERT_TRUE(stream->Send(push).ok());
    }
    for (int i = 1; i <= 3; ++i) {
      auto reply = stream->Receive();
      ASSERT_TRUE(reply.ok());
      EXPECT_EQ(reply->update().part(), i);
    }
    (*server)->Shutdown();
    auto after = stream->Receive();
    ASSERT_FALSE(after.ok());
    EXPECT_EQ(after.status().code(), StatusCode::kUnavailable);
  });
}

TEST(InMemoryTransportTest, ARefusedHelloEndsTheStreamWithTheCoordinatorsStatus) {
  DeterministicClock clock;
  clock.Run("test", [&] {
    InMemoryNetwork network(clock);
    EchoSessions sessions;
    auto server = network.Serve("c", sessions);
    auto reply = Opened(network, "other")->Receive();
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(reply.status().message().find("trains job \"echo\""), std::string::npos);
  });
}

TEST(InMemoryTransportTest, ConnectingWaitsForTheServerUpToItsTimeout) {
  DeterministicClock clock;
  const TimePoint start = clock.Now();
  clock.Run("test", [&] {
    InMemoryNetwork network(clock);
    auto connector = network.Connector("c");
    auto none = connector->Connect(seconds(2));
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(clock.Now() - start, seconds(2));
    EchoSessions sessions;
    ClockThread late = clock.StartThread("late server", [&] {
      clock.SleepFor(seconds(1));
      auto server = network.Serve("c", sessions);
      ASSERT_TRUE(server.ok());
      clock.SleepFor(seconds(5));
      (*server)->Shutdown();
    });
    auto stream = connector->Connect(seconds(3));
    EXPECT_TRUE(stream.ok());
    EXPECT_EQ(clock.Now() - start, seconds(3));
    stream->reset();  // closes it: the server's stream ends
    late.Join();
  });
}

}  // namespace
}  // namespace edgetrain::agent
