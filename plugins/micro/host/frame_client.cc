#include "frame_client.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "hetrt_crt_protocol.h"
#include "wire_format.h"

namespace hetrt::micro {
namespace {

std::vector<uint8_t> Frame(uint16_t seq, uint8_t type, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> f{
      HETRT_FRAME_MAGIC0, HETRT_FRAME_MAGIC1, static_cast<uint8_t>(seq), static_cast<uint8_t>(seq >> 8), type, 0};
  Put32(f, static_cast<uint32_t>(payload.size()));
  f.insert(f.end(), payload.begin(), payload.end());
  Put32(f, hetrt_crc32(0, f.data(), f.size()));
  return f;
}

constexpr uint32_t kMaxReply = 64u << 20;

}  // namespace

bool FrameClient::NextFrame(uint16_t& seq, uint8_t& type, std::vector<uint8_t>& body) {
  for (;;) {
    size_t skip = 0;  // up to the next magic (or a lone first magic byte at the end)
    while (skip < rx_.size() &&
           !(rx_[skip] == HETRT_FRAME_MAGIC0 && (skip + 1 == rx_.size() || rx_[skip + 1] == HETRT_FRAME_MAGIC1)))
      ++skip;
    rx_.erase(rx_.begin(), rx_.begin() + static_cast<long>(skip));
    if (rx_.size() < HETRT_FRAME_OVERHEAD) return false;
    const uint32_t len = Get32(rx_.data() + 6);
    if (len > kMaxReply) {
      rx_.erase(rx_.begin());
      continue;
    }
    if (rx_.size() < HETRT_FRAME_OVERHEAD + len) return false;
    if (hetrt_crc32(0, rx_.data(), HETRT_FRAME_HEADER + len) != Get32(rx_.data() + HETRT_FRAME_HEADER + len)) {
      rx_.erase(rx_.begin());  // not a frame after all: look for the next magic
      continue;
    }
    seq = static_cast<uint16_t>(rx_[2] | rx_[3] << 8);
    type = rx_[4];
    body.assign(rx_.begin() + HETRT_FRAME_HEADER, rx_.begin() + HETRT_FRAME_HEADER + len);
    rx_.erase(rx_.begin(), rx_.begin() + HETRT_FRAME_OVERHEAD + len);
    return true;
  }
}

Status FrameClient::Lost(const std::string& why) {
  device_lost_ = true;
  session_active_ = false;
  rx_.clear();
  return Unavailable(why);
}

Status FrameClient::StreamEnded(const Status& why) {
  transport_->Close();  // the next session opens it again: a new device program or emulator
  return Lost(why.message());
}

Result<std::vector<uint8_t>> FrameClient::Exchange(uint8_t type, const std::vector<uint8_t>& payload, int timeout_ms,
                                                   size_t reply_bytes) {
  if (!transport_->IsOpen()) return Lost(transport_->Describe() + " is not connected");
  if (options_.bytes_per_second > 0)
    timeout_ms += static_cast<int>(std::min<uint64_t>(
        (uint64_t{payload.size()} + reply_bytes + 2 * HETRT_FRAME_OVERHEAD) * 1000 / options_.bytes_per_second,
        3600000));
  const uint16_t seq = ++seq_ == 0 ? ++seq_ : seq_;  // seq 0 is the device's BOOT frame
  const std::vector<uint8_t> frame = Frame(seq, type, payload);
  std::mt19937 rng(seq);
  for (int attempt = 0; attempt <= options_.retries; ++attempt) {
    ++frames_sent_;
    if (attempt > 0) ++retransmissions_;
    if (options_.garbage_every > 0 && frames_sent_ % options_.garbage_every == 0) {
      std::vector<uint8_t> junk(1 + rng() % 64);
      for (auto& b : junk) b = static_cast<uint8_t>(rng());
      if (Status s = transport_->Write(junk.data(), junk.size()); !s.ok()) return StreamEnded(s);
    }
    const bool dropped = options_.drop_every > 0 && attempt == 0 && frames_sent_ % options_.drop_every == 0;
    if (!dropped)
      if (Status s = transport_->Write(frame.data(), frame.size()); !s.ok()) return StreamEnded(s);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    bool resend = false;
    while (!resend) {
      uint16_t rseq = 0;
      uint8_t rtype = 0;
      std::vector<uint8_t> body;
      while (NextFrame(rseq, rtype, body)) {
        if (rtype == HETRT_MSG_BOOT) {
          if (session_active_)
            return Lost(transport_->Describe() + ": the device restarted (it announced a boot as " +
                        std::string(body.begin(), body.end()) + ")");
          continue;
        }
        if (rseq != seq) continue;  // a reply to an earlier (retried) request, or to garbage
        if (rtype == HETRT_MSG_ERROR) {
          const std::string text(body.begin(), body.end());
          if (text == "bad CRC" || text == "frame too long") {  // our frame was damaged: resend
            resend = true;
            break;
          }
          if (text.rfind("no session", 0) == 0) return Lost(transport_->Describe() + ": " + text);
          return Internal("micro device: " + text);
        }
        if (rtype != (type | HETRT_MSG_REPLY))
          return DataLoss("micro device: reply type " + std::to_string(rtype) + " to request type " +
                          std::to_string(type));
        return body;
      }
      if (resend) break;
      const int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      if (left <= 0) break;  // timeout: send again
      uint8_t buf[65536];
      auto n = transport_->Read(buf, sizeof buf, left);
      if (!n.ok()) return StreamEnded(n.status());
      rx_.insert(rx_.end(), buf, buf + *n);
    }
  }
  return Unavailable("micro device did not answer (" + transport_->Describe() + ", " +
                     std::to_string(options_.retries + 1) + " tries of " + std::to_string(timeout_ms) + " ms)");
}

}  // namespace hetrt::micro
