#include "hetrt/base/install_layout.h"

#include <dlfcn.h>
#include <sys/stat.h>

namespace hetrt {

std::string CoreLibraryDir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&CoreLibraryDir), &info) == 0 || info.dli_fname == nullptr) return ".";
  std::string lib = info.dli_fname;
  const auto slash = lib.rfind('/');
  return slash == std::string::npos ? "." : lib.substr(0, slash);
}

std::string DefaultPluginDir() { return CoreLibraryDir() + "/hetrt-plugins"; }
std::string KernelObjectDir() { return CoreLibraryDir() + "/hetrt/kernels"; }
std::string DataDir() {
  // A prefix install keeps data in <prefix>/share; the Python package, which
  // is one folder, keeps it inside itself.
  const std::string lib = CoreLibraryDir();
  struct stat st;
  const std::string packaged = lib + "/share/hetrt";
  if (stat(packaged.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return packaged;
  return lib + "/../share/hetrt";
}
std::string GeneratedCodeIncludeDir() { return DataDir() + "/include"; }

}  // namespace hetrt
