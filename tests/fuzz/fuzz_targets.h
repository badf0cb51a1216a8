// Entry points that feed arbitrary bytes to each of hetrt's parsers. Used by
// the libFuzzer harnesses (fuzz_main.cc, clang) and by the mutation test that
// runs in every CI build (parser_fuzz_test.cc). Each must return normally for
// any input: errors as values, no crash, no hang, no huge allocation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hetrt::fuzz {

void ParamDict(const uint8_t* data, size_t size);
void ModuleBlob(const uint8_t* data, size_t size);  // a __tvm_dev_mblob payload
void GraphJson(const uint8_t* data, size_t size);
void Npy(const uint8_t* data, size_t size);
void ElfSymbols(const uint8_t* data, size_t size);
void MlfTar(const uint8_t* data, size_t size);  // a Model Library Format tarball
// A REST inference request body, "#<N>\n" first for Inference-Header-Content-Length: N.
void RestInferRequest(const uint8_t* data, size_t size);
// A gRPC ModelInferRequest as the gRPC frontend reads it; the first byte is
// the size of the pieces the message arrives in (0: one piece).
void GrpcInferRequest(const uint8_t* data, size_t size);
// The head of an HTTP/1.1 request as the REST fast path parses it (through
// its empty line), then every field looked up.
void HttpRequestHead(const uint8_t* data, size_t size);
// A Relax VM executable image (the relax.Executable blob entry's payload),
// read with either ABI's constant tags.
void RelaxExecutable(const uint8_t* data, size_t size);
// A __tvm_ffi__library_bin payload (TVM v0.22+).
void FfiModuleBlob(const uint8_t* data, size_t size);
// A v0.21+ device payload; the first byte picks the kind (cuda, opencl, vulkan).
void DevicePayload(const uint8_t* data, size_t size);
// A tensor cache's tensor-cache.json, written into a directory that holds the
// shards the seeds name (tests/fuzz/seeds/tensor_cache), then opened; every
// record of a cache that opens is decoded.
void TensorCacheJson(const uint8_t* data, size_t size);
// The body of a language model's generate request (REST, Triton's generate
// extension), then its answer and a stream event encoded.
void GenerateRequestJson(const uint8_t* data, size_t size);
// A ModelInferRequest as ModelStreamInfer receives it for a language model,
// then a response encoded.
void GrpcGenerateRequest(const uint8_t* data, size_t size);

}  // namespace hetrt::fuzz
