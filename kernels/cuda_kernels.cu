// hetrt's CUDA kernel set (float32, NCHW), the OpenCL set's twin: one thread
// per output element, launched as blockIdx.x x threadIdx.x blocks; sizes come
// as int arguments. nvcc compiles it to PTX at build time (kernels/CMakeLists.txt);
// tests also compile it as host C++ for a fake driver, so it keeps to plain C.
#include <cfloat>

#define HETRT_CU_INDEX (static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x))

extern "C" __global__ void hetrt_cu_add_kernel(const float* a, const float* b, float* y, int n) {
  const int i = HETRT_CU_INDEX;
  if (i < n) y[i] = a[i] + b[i];
}

extern "C" __global__ void hetrt_cu_mul_kernel(const float* a, const float* b, float* y, int n) {
  const int i = HETRT_CU_INDEX;
  if (i < n) y[i] = a[i] * b[i];
}

extern "C" __global__ void hetrt_cu_relu_kernel(const float* x, float* y, int n) {
  const int i = HETRT_CU_INDEX;
  if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

extern "C" __global__ void hetrt_cu_dense_kernel(const float* x, const float* w, const float* b, float* y, int n,
                                                 int k, int m) {
  const int i = HETRT_CU_INDEX;
  if (i >= n * m) return;
  const int r = i / m, j = i % m;
  float acc = b[j];
  for (int t = 0; t < k; ++t) acc += x[r * k + t] * w[j * k + t];
  y[i] = acc;
}

extern "C" __global__ void hetrt_cu_softmax_kernel(const float* x, float* y, int rows, int c) {
  const int r = HETRT_CU_INDEX;
  if (r >= rows) return;
  float mx = -FLT_MAX, sum = 0.0f;
  for (int i = 0; i < c; ++i) mx = fmaxf(mx, x[r * c + i]);
  for (int i = 0; i < c; ++i) sum += (y[r * c + i] = expf(x[r * c + i] - mx));
  for (int i = 0; i < c; ++i) y[r * c + i] /= sum;
}

extern "C" __global__ void hetrt_cu_conv2d_kernel(const float* x, const float* w, const float* b, float* y, int n,
                                                  int c, int h, int wd, int o, int kh, int kw, int oh, int ow, int pad) {
  const int g = HETRT_CU_INDEX;
  if (g >= n * o * oh * ow) return;
  const int j = g % ow, i = (g / ow) % oh, oc = (g / (ow * oh)) % o, b0 = g / (ow * oh * o);
  float acc = b[oc];
  for (int ch = 0; ch < c; ++ch)
    for (int u = 0; u < kh; ++u) {
      const int yy = i + u - pad;
      if (yy < 0 || yy >= h) continue;
      for (int v = 0; v < kw; ++v) {
        const int xx = j + v - pad;
        if (xx < 0 || xx >= wd) continue;
        acc += x[((b0 * c + ch) * h + yy) * wd + xx] * w[((oc * c + ch) * kh + u) * kw + v];
      }
    }
  y[g] = acc;
}

extern "C" __global__ void hetrt_cu_maxpool_kernel(const float* x, float* y, int planes, int h, int w, int oh,
                                                   int ow) {
  const int g = HETRT_CU_INDEX;
  if (g >= planes * oh * ow) return;
  const int j = g % ow, i = (g / ow) % oh, p = g / (ow * oh), sh = h / oh, sw = w / ow;
  float m = -FLT_MAX;
  for (int u = 0; u < sh; ++u)
    for (int v = 0; v < sw; ++v) m = fmaxf(m, x[(p * h + i * sh + u) * w + j * sw + v]);
  y[g] = m;
}
