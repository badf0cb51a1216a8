// Process-wide settings a serving process makes once, before it serves:
// `hetrt serve` makes both, and so does the protocol floor it is measured
// against. A program that embeds the serving core decides for itself.
#pragma once

namespace hetrt::serve {

// gRPC's locks are absl::Mutex, and Debian builds Abseil without NDEBUG: every
// lock, unlock and destruction of one then consults a process-wide deadlock
// graph behind a global lock (GraphCycles in a profile of `hetrt serve`, about
// 2.5 % of its CPU over gRPC at concurrency 16). Turns that check off.
void SkipGrpcDeadlockChecksForThisProcess();

// A request's large tensors (the decoded input, the output's host copy, the
// encoded response) are allocated and freed once per request. glibc maps a
// fresh region for each and returns it at free, so every request pays a page
// fault per 4 KiB it touches (6 MiB tensors over gRPC: 15 % of the server's
// CPU). Keeps buffers up to kKeptBufferBytes in the heap and freed memory up
// to kKeptFreeBytes for the next request. Leaves malloc alone when the user
// tuned it through GLIBC_TUNABLES.
inline constexpr long kKeptBufferBytes = 64L << 20;
inline constexpr long kKeptFreeBytes = 256L << 20;
void KeepLargeBuffersForThisProcess();

}  // namespace hetrt::serve
