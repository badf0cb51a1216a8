#include "cgroup_cpu_limit.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

namespace hetrt::cpu {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

// A whole decimal number, or -1 (an absent file, "max", "-1", garbage).
int64_t ParseCount(const std::string& text) {
  if (text.empty() || text.size() > 18) return -1;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

// CPUs granted by the limit files in `dir`, as a fraction; infinity when unlimited.
double LimitIn(const std::string& dir, bool v2) {
  int64_t quota = -1, period = -1;
  if (v2) {  // "max 100000" or "150000 100000"
    std::istringstream fields(ReadFirstLine(dir + "/cpu.max"));
    std::string quota_text, period_text;
    fields >> quota_text >> period_text;
    quota = ParseCount(quota_text);
    period = ParseCount(period_text);
  } else {
    quota = ParseCount(ReadFirstLine(dir + "/cpu.cfs_quota_us"));
    period = ParseCount(ReadFirstLine(dir + "/cpu.cfs_period_us"));
  }
  if (quota <= 0 || period <= 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(quota) / static_cast<double>(period);
}

struct Hierarchy {
  std::string mount_point;  // where it is mounted here
  std::string mount_root;   // which of its cgroups the mount shows at mount_point
  bool v2 = false;
};

bool HasOption(const std::string& options, const std::string& name) {
  std::istringstream list(options);
  std::string option;
  while (std::getline(list, option, ','))
    if (option == name) return true;
  return false;
}

// The cgroup v2 mount and the v1 mount carrying the "cpu" controller.
std::vector<Hierarchy> CpuHierarchies(const std::string& root) {
  std::vector<Hierarchy> found;
  std::ifstream mountinfo(root + "/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) {
    // "36 25 0:31 /root /mount/point opts [optional...] - fstype source super_opts"
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string id, parent, device, mount_root, mount_point, fstype, source, super_options;
    head >> id >> parent >> device >> mount_root >> mount_point;
    tail >> fstype >> source >> super_options;
    if (fstype == "cgroup2")
      found.push_back({mount_point, mount_root, true});
    else if (fstype == "cgroup" && HasOption(super_options, "cpu"))
      found.push_back({mount_point, mount_root, false});
  }
  return found;
}

// This process's cgroup path in the v2 hierarchy ("0::/path") or the v1
// hierarchy listing the cpu controller ("4:cpu,cpuacct:/path"); empty if none.
std::string CgroupPath(const std::string& root, bool v2) {
  std::ifstream cgroups(root + "/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    if (v2 ? controllers.empty() && line.compare(0, first, "0") == 0 : HasOption(controllers, "cpu"))
      return line.substr(second + 1);
  }
  return "";
}

}  // namespace

int32_t CgroupCpuLimit(const std::string& root) {
  double tightest = std::numeric_limits<double>::infinity();
  for (const Hierarchy& hierarchy : CpuHierarchies(root)) {
    std::string path = CgroupPath(root, hierarchy.v2);
    if (path.empty()) continue;
    // Inside a cgroup namespace the mount shows the process's own cgroup as
    // its root; outside, the mount root is a prefix of the path to strip.
    if (hierarchy.mount_root != "/" && path.compare(0, hierarchy.mount_root.size(), hierarchy.mount_root) == 0)
      path = path.substr(hierarchy.mount_root.size());
    if (path.find("..") != std::string::npos) continue;
    // The limit of every ancestor up to the mount applies too.
    while (true) {
      tightest = std::min(tightest, LimitIn(root + hierarchy.mount_point + path, hierarchy.v2));
      if (path.empty() || path == "/") break;
      const size_t slash = path.find_last_of('/');
      path = slash == std::string::npos ? "" : path.substr(0, slash);
    }
  }
  if (!std::isfinite(tightest)) return 0;
  const double cpus = std::ceil(tightest);
  return cpus >= 1024.0 ? 1024 : std::max(1, static_cast<int32_t>(cpus));
}

}  // namespace hetrt::cpu
