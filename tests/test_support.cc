#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "hetrt/dtype.h"

namespace hetrt::testing {

std::string FixturesRoot() {
  if (const char* env = std::getenv("HETRT_FIXTURES"); env && *env) return env;
  return HETRT_DEFAULT_FIXTURES_DIR;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string TvmFixture(const std::string& model) {
  std::filesystem::path dir = std::filesystem::path(FixturesRoot()) / "tvm-0.18" / model;
  return std::filesystem::is_directory(dir) ? dir.string() : std::string();
}

std::vector<std::string> TvmFixtureModels() {
  std::vector<std::string> models;
  std::filesystem::path dir = std::filesystem::path(FixturesRoot()) / "tvm-0.18";
  if (!std::filesystem::is_directory(dir)) return models;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename() != "mlf")
      models.push_back(entry.path().filename().string());
  std::sort(models.begin(), models.end());
  return models;
}

::testing::AssertionResult TensorsClose(const Tensor& actual, const Tensor& expected, double rtol,
                                        double atol) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << ShapeToString(actual.shape()) << " vs "
                                         << ShapeToString(expected.shape());
  if (actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << "dtype " << DataTypeToString(actual.dtype()) << " vs "
                                         << DataTypeToString(expected.dtype());
  if (actual.dtype() != DLDataType{kDLFloat, 32, 1}) {
    if (std::memcmp(actual.data(), expected.data(), actual.nbytes()) != 0)
      return ::testing::AssertionFailure() << "bytes differ";
    return ::testing::AssertionSuccess();
  }
  const float* a = actual.data_as<float>();
  const float* e = expected.data_as<float>();
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - e[i]);
    if (!(diff <= atol + rtol * std::fabs(static_cast<double>(e[i]))))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs expected " << e[i] << " (|diff| " << diff
             << " > atol " << atol << " + rtol " << rtol << " * |expected|)";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace hetrt::testing
