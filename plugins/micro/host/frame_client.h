// The host side of hetrt's framed protocol (crt/include/hetrt_crt_protocol.h)
// over any Transport: frames requests, finds replies in whatever arrives
// (skipping garbage and frames that fail their CRC), retries after a timeout
// or a damaged frame, and notices a device that restarted.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport.h"

namespace hetrt::micro {

struct LinkOptions {
  int timeout_ms = 2000;         // per reply, before the request is sent again ...
  int bytes_per_second = 10000;  // ... plus the time the bytes need on the link (a 115200-baud UART: ~11500)
  int run_timeout_ms = 60000;    // RUN: a model may take long on a slow board
  int retries = 3;
  // Fault injection, for tests: garbage bytes before every Nth frame sent, and
  // the first transmission of every Nth frame dropped.
  int garbage_every = 0;
  int drop_every = 0;
};

class FrameClient {
 public:
  FrameClient(std::unique_ptr<Transport> transport, const LinkOptions& options)
      : transport_(std::move(transport)), options_(options) {}

  // Sends one request and returns the reply's payload; `reply_bytes` (what
  // the reply is expected to carry) lengthens the timeout as the request's
  // own size does. A device error frame
  // is INTERNAL with its text. UNAVAILABLE with `device_lost()` set when the
  // stream ended or the device announced a restart (its state is gone).
  Result<std::vector<uint8_t>> Exchange(uint8_t type, const std::vector<uint8_t>& payload, int timeout_ms,
                                        size_t reply_bytes = 0);

  // From HELLO on, a BOOT frame or a "no session" error means the device
  // restarted; before it (a fresh start) a BOOT frame is expected and skipped.
  void set_session_active(bool active) { session_active_ = active; }
  bool device_lost() const { return device_lost_; }
  void clear_device_lost() { device_lost_ = false; }

  Transport& transport() { return *transport_; }
  const LinkOptions& options() const { return options_; }
  int retransmissions() const { return retransmissions_; }

 private:
  // Takes the next complete, intact frame out of rx_ (false: none yet).
  bool NextFrame(uint16_t& seq, uint8_t& type, std::vector<uint8_t>& body);
  Status Lost(const std::string& why);
  // Lost, with the transport closed: its stream is gone (a dead device program, a closed socket).
  Status StreamEnded(const Status& why);

  std::unique_ptr<Transport> transport_;
  LinkOptions options_;
  uint16_t seq_ = 0;
  int frames_sent_ = 0, retransmissions_ = 0;
  bool session_active_ = false, device_lost_ = false;
  std::vector<uint8_t> rx_;
};

}  // namespace hetrt::micro
