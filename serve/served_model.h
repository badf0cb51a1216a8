// What the server holds for one served version of a model: a tensor model
// (ModelVersion: tensors in, tensors out, model_version.h) or a language model
// (GenerativeModel: a prompt in, a stream of tokens out, generative_model.h).
// The repository, readiness, metadata and shutdown treat both alike; a request
// asks for the kind it needs.
#pragma once

#include <cstdint>
#include <string>

#include "hetrt/serve/inference.h"

namespace hetrt::serve {

class ModelVersion;
class GenerativeModel;

class ServedModel {
 public:
  virtual ~ServedModel() = default;
  virtual const std::string& name() const = 0;
  virtual int64_t version() const = 0;
  // Inputs, outputs and platform (versions are the server's to fill in).
  virtual const ModelMetadata& metadata() const = 0;
  // Rejects new requests, lets those in flight finish, joins its threads. Idempotent.
  virtual void Stop() = 0;
  // The kind it is; nullptr for the other.
  virtual ModelVersion* tensor_model() { return nullptr; }
  virtual GenerativeModel* generative_model() { return nullptr; }
};

}  // namespace hetrt::serve
