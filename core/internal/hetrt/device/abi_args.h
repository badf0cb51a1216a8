// How a call's args struct starts: zeroed, with the struct_size of this
// build's version of the struct (plugin_abi.h's rule), for calls that go to
// the plugin instance rather than one device (Device::Make fills those).
#pragma once

#include "hetrt/plugin_abi.h"

namespace hetrt {

template <typename Args>
Args AbiArgs() {
  Args args{};
  args.struct_size = sizeof(Args);
  return args;
}

}  // namespace hetrt
