#include "host_files.h"

#include <dlfcn.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace hetrt::micro {
namespace fs = std::filesystem;

std::string DataDir() {
  Dl_info info;
  fs::path self = ".";
  if (dladdr(reinterpret_cast<void*>(&DataDir), &info) != 0 && info.dli_fname != nullptr)
    self = fs::path(info.dli_fname).parent_path();
  std::error_code ec;
  for (const fs::path& candidate : {self / ".." / "share" / "hetrt", self / ".." / ".." / "share" / "hetrt"})
    if (fs::is_directory(candidate / "micro", ec)) return fs::weakly_canonical(candidate, ec).string();
  return (self / ".." / "share" / "hetrt").string();  // named in the errors of what then fails to open
}

std::string GeneratedCodeIncludeDir() { return DataDir() + "/include"; }

std::string ReadText(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";  // a folder would make the stream throw
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) return Unavailable("cannot write " + path);
  return OkStatus();
}

std::string ShellQuote(const std::string& argument) {
  std::string quoted = "'";
  for (char c : argument) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

Status RunCommand(const std::string& command, const std::string& what) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return Unavailable("cannot run " + what);
  std::string output;
  char chunk[4096];
  while (size_t n = fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, n);
  const int rc = pclose(pipe);
  if (rc == 0) return OkStatus();
  return FailedPrecondition(what + " failed (exit " + std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : rc) + "):\n" +
                            output.substr(0, 8000));
}

Status CompileSharedLibrary(const std::vector<std::string>& inputs, const std::string& output,
                            const CompileOptions& options) {
  std::string command = ShellQuote(options.compiler) + " -shared -fPIC -O2 -o " + ShellQuote(output);
  for (const auto& input : inputs) command += " " + ShellQuote(input);
  for (const auto& flag : options.flags) command += " " + ShellQuote(flag);
  return RunCommand(command, "compiling '" + output + "' with '" + options.compiler + "'");
}

}  // namespace hetrt::micro
