#include "model_sources.h"

#include <algorithm>
#include <filesystem>

#include "host_files.h"
#include "model_glue.h"

namespace hetrt::micro {
namespace fs = std::filesystem;

std::string MicroSourceDir() { return DataDir() + "/micro"; }

std::vector<std::string> RuntimeSources() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(MicroSourceDir() + "/crt/src"))
    if (e.path().extension() == ".c") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> RuntimeIncludeDirs() { return {MicroSourceDir() + "/crt/include", GeneratedCodeIncludeDir()}; }

Result<std::vector<std::string>> WriteModelSources(const MlfPackage& mlf, const std::string& dir_name) {
  const fs::path dir(dir_name);
  std::error_code ec;
  for (const char* sub : {"mlf", "crt/include/dlpack", "crt/src", "firmware"}) fs::create_directories(dir / sub, ec);
  if (ec) return Unavailable("creating " + dir.string() + ": " + ec.message());
  HETRT_RETURN_IF_ERROR(mlf.ExtractTo((dir / "mlf").string()));
  HETRT_ASSIGN_OR_RETURN(std::string glue, GenerateModelGlue(mlf));
  HETRT_RETURN_IF_ERROR(WriteTextFile((dir / "model_glue.c").string(), glue));
  HETRT_RETURN_IF_ERROR(WriteTextFile((dir / "crt" / "include" / "hetrt_model.h").string(), kModelApiHeader));
  const auto copy = fs::copy_options::recursive | fs::copy_options::overwrite_existing;
  const std::string src = MicroSourceDir();
  fs::copy(src + "/crt/include", dir / "crt" / "include", copy, ec);
  if (!ec) fs::copy(src + "/crt/src", dir / "crt" / "src", copy, ec);
  if (!ec) fs::copy(src + "/firmware", dir / "firmware", copy, ec);
  if (!ec) fs::copy(GeneratedCodeIncludeDir(), dir / "crt" / "include", copy, ec);
  if (!ec)
    fs::copy(GeneratedCodeIncludeDir() + "/dlpack/dlpack.h", dir / "crt" / "include" / "dlpack" / "dlpack.h",
             fs::copy_options::overwrite_existing, ec);
  if (ec) return Unavailable("copying the C runtime into " + dir.string() + ": " + ec.message());
  std::vector<std::string> sources{"model_glue.c"};
  for (const auto& e : fs::directory_iterator(dir / "crt" / "src"))
    if (e.path().extension() == ".c") sources.push_back("crt/src/" + e.path().filename().string());
  for (const std::string& code : mlf.HostCode()) sources.push_back("mlf/" + code);
  std::sort(sources.begin() + 1, sources.end());
  return sources;
}

std::vector<std::string> ModelIncludeFlags(const std::string& dir_name) {
  const fs::path dir(dir_name);
  return {"-I" + (dir / "crt" / "include").string(), "-I" + (dir / "mlf" / "codegen" / "host" / "include").string(),
          "-I" + (dir / "firmware").string(), "-I" + dir.string()};
}

}  // namespace hetrt::micro
