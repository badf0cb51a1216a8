// ModelInferRequest/ModelInferResponse (the Open Inference Protocol's gRPC
// messages) to and from the serving core's InferRequest/InferResponse, as
// they travel: raw tensor bytes go straight between the wire and host
// tensors, never through a protobuf string. Protobuf only (no gRPC): the
// frontend adapts gRPC's byte buffers, and the fuzzers link this alone.
#pragma once

#include <google/protobuf/io/zero_copy_stream.h>

#include <cstdint>
#include <string>
#include <vector>

#include "grpc_service.pb.h"
#include "hetrt/serve/inference.h"

namespace hetrt::serve {

// A ModelInferRequest as read from the wire: the message without its
// raw_input_contents, whose entries were read straight into 64-byte-aligned
// host buffers (uint8 [n] each), so that a graph can take them in place.
struct WireInferRequest {
  inference::ModelInferRequest message;
  std::vector<Tensor> raw_input_contents;
};

// Reads a serialized ModelInferRequest of `size` bytes (gRPC's received
// message, in whatever pieces it arrived). Malformed or truncated bytes are
// an InvalidArgument naming what was wrong, as are more than 4096 raw
// entries: what is allocated is bounded by the message's size.
Result<WireInferRequest> ReadInferRequest(google::protobuf::io::ZeroCopyInputStream& in, uint64_t size);

// Validates and converts a request: inputs from their typed `contents` or from
// raw_input_contents (never both), sizes checked against shape x datatype.
// Errors are InvalidArgument and name the input. Raw inputs keep the
// request's buffers (no copy).
Result<InferRequest> DecodeInferRequest(WireInferRequest request);

// A serialized ModelInferResponse in order: each piece's `bytes`, then, where
// `tensor` is defined, that tensor's host bytes sent from its own memory (an
// output large enough that a copy would cost more than lending it). The
// pieces hold the tensors alive; the sender keeps them until they are sent.
struct WireInferResponse {
  struct Piece {
    std::string bytes;
    Tensor tensor;
  };
  std::vector<Piece> pieces;
  uint64_t size() const;  // bytes of the whole message
};

// Outputs (name, datatype, shape) and their data as raw_output_contents, one
// entry per output.
Result<WireInferResponse> EncodeInferResponse(const InferResponse& response);

}  // namespace hetrt::serve
