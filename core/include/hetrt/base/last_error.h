// The thread's last error: the one channel through which compiled code,
// plugins (hetrt_host_api_t.set_last_error) and the core report why a packed
// call failed (TVM's TVMGetLastError).
#pragma once

#include <string>

namespace hetrt {

void SetLastError(const char* message);
void ClearLastError();
std::string LastErrorMessage();
// The thread's message as a C string, valid until the thread sets another.
const char* LastErrorCString();

}  // namespace hetrt
