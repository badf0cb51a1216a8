// hetrt's OpenCL kernel set (float32, NCHW): one work item per output element,
// launched as blockIdx.x x threadIdx.x work groups; sizes come as int arguments.
__kernel void hetrt_cl_add_kernel(__global const float* a, __global const float* b, __global float* y, int n) {
  const int i = get_global_id(0);
  if (i < n) y[i] = a[i] + b[i];
}

__kernel void hetrt_cl_mul_kernel(__global const float* a, __global const float* b, __global float* y, int n) {
  const int i = get_global_id(0);
  if (i < n) y[i] = a[i] * b[i];
}

__kernel void hetrt_cl_relu_kernel(__global const float* x, __global float* y, int n) {
  const int i = get_global_id(0);
  if (i < n) y[i] = fmax(x[i], 0.0f);
}

__kernel void hetrt_cl_dense_kernel(__global const float* x, __global const float* w, __global const float* b,
                                    __global float* y, int n, int k, int m) {
  const int i = get_global_id(0);
  if (i >= n * m) return;
  const int r = i / m, j = i % m;
  float acc = b[j];
  for (int t = 0; t < k; ++t) acc += x[r * k + t] * w[j * k + t];
  y[i] = acc;
}

__kernel void hetrt_cl_softmax_kernel(__global const float* x, __global float* y, int rows, int c) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  float mx = -FLT_MAX, sum = 0.0f;
  for (int i = 0; i < c; ++i) mx = fmax(mx, x[r * c + i]);
  for (int i = 0; i < c; ++i) sum += (y[r * c + i] = exp(x[r * c + i] - mx));
  for (int i = 0; i < c; ++i) y[r * c + i] /= sum;
}

__kernel void hetrt_cl_conv2d_kernel(__global const float* x, __global const float* w, __global const float* b,
                                     __global float* y, int n, int c, int h, int wd, int o, int kh, int kw, int oh,
                                     int ow, int pad) {
  const int g = get_global_id(0);
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

__kernel void hetrt_cl_maxpool_kernel(__global const float* x, __global float* y, int planes, int h, int w, int oh,
                                      int ow) {
  const int g = get_global_id(0);
  if (g >= planes * oh * ow) return;
  const int j = g % ow, i = (g / ow) % oh, p = g / (ow * oh), sh = h / oh, sw = w / ow;
  float m = -FLT_MAX;
  for (int u = 0; u < sh; ++u)
    for (int v = 0; v < sw; ++v) m = fmax(m, x[(p * h + i * sh + u) * w + j * sw + v]);
  y[g] = m;
}
