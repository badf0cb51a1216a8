// C glue that gives every Model Library Format model the same C API
// (hetrt_model_init/run/input/output, crt/include's hetrt_model.h): graph models
// with the graph JSON and params embedded, AOT models over the generated
// tvmgen_<model>_run interface.
#pragma once

#include <span>
#include <string>

#include "hetrt/sdk/mlf_package.h"

namespace hetrt::micro {

Result<std::string> GenerateModelGlue(const MlfPackage& mlf);

// hetrt_model.h: the API the glue implements.
extern const char* const kModelApiHeader;

// A C string literal holding arbitrary bytes (octal escapes, split lines).
std::string CBytesLiteral(std::span<const uint8_t> bytes);

}  // namespace hetrt::micro
