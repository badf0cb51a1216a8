#include "sample_model.h"

#include <archive.h>
#include <archive_entry.h>

#include <cstring>
#include <memory>
#include <utility>

namespace hetrt::micro {
namespace {

constexpr float kInput[4] = {1.0f, -2.0f, 0.5f, 3.0f};

const char* const kMetadata = R"({
  "version": 7,
  "modules": {"sample": {
    "model_name": "sample", "executors": ["aot"], "target": ["c"], "style": "full-model",
    "memory": {"functions": {"main": [{
      "device": 1, "workspace_size_bytes": 0, "constants_size_bytes": 0, "io_size_bytes": 32,
      "inputs": {"x": {"dtype": "float32", "size": 16}},
      "outputs": {"output": {"dtype": "float32", "size": 16}}}],
      "operator_functions": []}}}}
})";

const char* const kInterface = R"(#ifndef TVMGEN_SAMPLE_H_
#define TVMGEN_SAMPLE_H_
#include <stdint.h>
struct tvmgen_sample_inputs { void* x; };
struct tvmgen_sample_outputs { void* output; };
int32_t tvmgen_sample_run(struct tvmgen_sample_inputs* inputs, struct tvmgen_sample_outputs* outputs);
#endif
)";

const char* const kCode = R"(#include "tvmgen_sample.h"
int32_t tvmgen_sample_run(struct tvmgen_sample_inputs* inputs, struct tvmgen_sample_outputs* outputs) {
  const float* x = (const float*)inputs->x;
  float* y = (float*)outputs->output;
  for (int i = 0; i < 4; ++i) y[i] = 2.0f * x[i] + 1.0f;
  return 0;
}
)";

std::vector<uint8_t> FloatBytes(const float (&values)[4]) {
  std::vector<uint8_t> bytes(sizeof values);
  std::memcpy(bytes.data(), values, sizeof values);
  return bytes;
}

}  // namespace

Result<SampleModel> WriteSampleModel(const std::string& dir) {
  SampleModel sample{dir + "/micro_sample_mlf.tar", FloatBytes(kInput), {}};
  float expected[4];
  for (int i = 0; i < 4; ++i) expected[i] = 2.0f * kInput[i] + 1.0f;
  sample.expected_output = FloatBytes(expected);

  std::unique_ptr<archive, int (*)(archive*)> tar(archive_write_new(), &archive_write_free);
  archive_write_set_format_pax_restricted(tar.get());
  if (archive_write_open_filename(tar.get(), sample.path.c_str()) != ARCHIVE_OK)
    return Unavailable("cannot write " + sample.path + ": " + archive_error_string(tar.get()));
  const std::pair<const char*, const char*> members[] = {{"metadata.json", kMetadata},
                                                         {"codegen/host/include/tvmgen_sample.h", kInterface},
                                                         {"codegen/host/src/sample_lib0.c", kCode}};
  for (const auto& [name, text] : members) {
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry(archive_entry_new(), &archive_entry_free);
    const size_t size = std::strlen(text);
    archive_entry_set_pathname(entry.get(), name);
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(size));
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), 0644);
    if (archive_write_header(tar.get(), entry.get()) != ARCHIVE_OK ||
        archive_write_data(tar.get(), text, size) != static_cast<la_ssize_t>(size))
      return Unavailable("writing " + sample.path + ": " + archive_error_string(tar.get()));
  }
  if (archive_write_close(tar.get()) != ARCHIVE_OK)
    return Unavailable("writing " + sample.path + ": " + archive_error_string(tar.get()));
  return sample;
}

}  // namespace hetrt::micro
