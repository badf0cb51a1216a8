// The micro tests' fixture plumbing for a micro::ModelSession: param-dict
// inputs in (the SDK's reader, as the plugin reads them), outputs compared with
// TVM's expected arrays (the core's Tensor comparison).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../test_support.h"
#include "hetrt/formats/params.h"
#include "hetrt/sdk/param_dict.h"
#include "hetrt/sdk/tensor_layout.h"
#include "model_session.h"

namespace hetrt::testing {

// Every array of a param-dict file as the input of its name.
inline Status SetInputsFromFile(micro::ModelSession& session, const std::string& path) {
  HETRT_ASSIGN_OR_RETURN(auto inputs, sdk::ReadParamDictFile(path));
  for (const auto& p : inputs) {
    const int index = session.InputIndex(p.name);
    if (index < 0) return NotFound("the model has no input '" + p.name + "'");
    HETRT_RETURN_IF_ERROR(session.SetInput(index, p.bytes));
  }
  return OkStatus();
}

// `bytes` against the first array of a param-dict file, within float tolerance.
inline void ExpectBytesMatchFile(const std::vector<uint8_t>& bytes, const std::string& expected_params) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto expected, LoadParamDictFile(expected_params));
  const Tensor& e = expected[0].tensor;
  ASSERT_EQ(bytes.size(), e.nbytes());
  Tensor out = Tensor::Borrow(const_cast<uint8_t*>(bytes.data()), {kDLCPU, 0}, e.shape(), e.dtype());
  EXPECT_TRUE(TensorsClose(out, e, 1e-5, 1e-6));
}

inline void ExpectOutputMatchesFile(const micro::ModelSession& session, const std::string& expected_params) {
  HETRT_ASSERT_OK_AND_ASSIGN(auto bytes, session.GetOutput(0));
  ExpectBytesMatchFile(bytes, expected_params);
}

}  // namespace hetrt::testing
