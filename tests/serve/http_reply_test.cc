// The fast path's responses (serve/http_reply.h) on a socket pair: what the
// socket takes at once is written by the answering thread, the rest by the
// connection's worker after a wake-up, and nothing is ever left unanswered.
#include "http_reply.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace hetrt::serve {
namespace {

using namespace std::chrono_literals;

// A connected socket pair whose server end sends through a small buffer.
struct Pair {
  int server = -1, client = -1;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    server = fds[0];
    client = fds[1];
    const int small = 4096;
    ::setsockopt(server, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  }
  ~Pair() {
    ::close(server);
    ::close(client);
  }
  // Everything the client end receives until the server end is shut down.
  std::string ReadAll() const {
    std::string bytes;
    char buffer[65536];
    for (ssize_t n; (n = ::recv(client, buffer, sizeof buffer, 0)) > 0;) bytes.append(buffer, static_cast<size_t>(n));
    return bytes;
  }
};

bool Signalled(int eventfd) {
  pollfd entry{eventfd, POLLIN, 0};
  return ::poll(&entry, 1, 0) == 1;
}

TEST(PendingReply, WhatTheSocketDoesNotTakeTheWorkerWritesAfterAWakeUp) {
  Pair pair;
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  auto pending = std::make_shared<PendingReply>(pair.server, wake, 5s);
  // A body and then two parts sent from where they lie (a response's
  // outputs), which their owner keeps until they are written.
  const std::string body(1 << 19, 'x');
  auto outputs = std::make_shared<const std::string>(std::string(1 << 18, 'y') + std::string(1 << 18, 'z'));
  const std::string_view tensors(*outputs);
  ReplyTail tail{{tensors.substr(0, 1 << 18), tensors.substr(1 << 18)}, outputs};
  std::weak_ptr<const std::string> owner = outputs;
  outputs.reset();
  HttpReply(pending).Send(200, "application/octet-stream", body, "Inference-Header-Content-Length", "7",
                          std::move(tail));
  EXPECT_TRUE(Signalled(wake)) << "a 1 MiB body fit a 4 KiB socket buffer: the worker was not woken";
  std::string received;
  std::thread reader([&] { received = pair.ReadAll(); });
  EXPECT_TRUE(pending->Await());
  ::shutdown(pair.server, SHUT_WR);
  reader.join();
  const std::string head =
      "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 1048576\r\n"
      "Inference-Header-Content-Length: 7\r\n\r\n";
  ASSERT_EQ(received.size(), head.size() + (1u << 20));
  EXPECT_EQ(received.substr(0, head.size()), head);
  EXPECT_EQ(received.substr(head.size()), body + std::string(1 << 18, 'y') + std::string(1 << 18, 'z'));
  EXPECT_FALSE(owner.expired()) << "the parts' owner went before the reply";
  pending.reset();
  EXPECT_TRUE(owner.expired()) << "the reply kept the parts' owner after it was done";
  ::close(wake);
}

TEST(PendingReply, AResponseTheSocketTakesAtOnceNeedsNoWorker) {
  Pair pair;
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  auto pending = std::make_shared<PendingReply>(pair.server, wake, 5s);
  std::thread answering([pending] { HttpReply(pending).Send(404, "application/json", R"({"error":"x"})"); });
  EXPECT_TRUE(pending->Await());  // waits for the other thread's Send
  answering.join();
  EXPECT_FALSE(Signalled(wake));
  ::shutdown(pair.server, SHUT_WR);
  EXPECT_EQ(pair.ReadAll(),
            "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n"
            R"({"error":"x"})");
  ::close(wake);
}

TEST(PendingReply, AClientThatNeverReadsFailsTheResponseAfterTheWriteTimeout) {
  Pair pair;
  auto pending = std::make_shared<PendingReply>(pair.server, -1, 50ms);
  HttpReply(pending).Send(200, "application/octet-stream", std::string(1 << 20, 'x'));
  EXPECT_FALSE(pending->Await()) << "a write that made no progress did not fail";
}

TEST(PendingReply, AReplyDroppedUnsentAnswers500) {
  Pair pair;
  auto pending = std::make_shared<PendingReply>(pair.server, -1, 5s);
  { HttpReply dropped(pending); }
  EXPECT_TRUE(pending->Await());
  ::shutdown(pair.server, SHUT_WR);
  EXPECT_EQ(pair.ReadAll().rfind("HTTP/1.1 500 Internal Server Error\r\n", 0), 0u);
}

TEST(PendingReply, AResponseTheRouteWroteItselfSettlesTheWaitAndAddsNothing) {
  for (const bool complete : {true, false}) {
    Pair pair;
    auto pending = std::make_shared<PendingReply>(pair.server, -1, 5s);
    {
      HttpReply reply(pending);
      std::thread route([&] { reply.Wrote(complete); });  // as a stream's last write, elsewhere
      route.join();
    }  // (no 500 from the reply going: it was settled)
    EXPECT_EQ(pending->Await(), complete);
    ::shutdown(pair.server, SHUT_WR);
    EXPECT_EQ(pair.ReadAll(), "") << "complete " << complete;
  }
}

}  // namespace
}  // namespace hetrt::serve
