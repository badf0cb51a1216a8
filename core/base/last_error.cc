#include "hetrt/base/last_error.h"

namespace hetrt {
namespace {
thread_local std::string t_last_error;
}  // namespace

void SetLastError(const char* message) { t_last_error = message ? message : ""; }
void ClearLastError() { t_last_error.clear(); }
std::string LastErrorMessage() { return t_last_error; }
const char* LastErrorCString() { return t_last_error.c_str(); }

}  // namespace hetrt
