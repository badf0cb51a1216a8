// y[r, j] = b[j] + sum_t x[r, t] * w[j, t]: x [N, K], w [M, K], b [M], y [N, M].
// One invocation per output, grid-strided. When K is a multiple of 4 the rows
// are read as vec4 through a second view of the same bindings (descriptor
// aliasing): a quarter of the loads, which is what lavapipe pays for.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = 1) readonly buffer W { float w[]; };
layout(set = 0, binding = 1) readonly buffer W4 { vec4 w4[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float b[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Args {
  layout(offset = 0) int n;
  layout(offset = 8) int k;
  layout(offset = 16) int m;
};

void main() {
  const uint outputs = uint(n * m), kk = uint(k);
  for (uint i = gl_GlobalInvocationID.x; i < outputs; i += gl_NumWorkGroups.x * 64u) {
    const uint r = i / uint(m), j = i % uint(m);
    float acc = b[j];
    if (kk % 4u == 0u) {
      const uint k4 = kk / 4u, xr = r * k4, wj = j * k4;
      for (uint t = 0u; t < k4; ++t) {
        const vec4 p = x4[xr + t] * w4[wj + t];
        acc += p.x;  // in the CPU kernel's order
        acc += p.y;
        acc += p.z;
        acc += p.w;
      }
    } else {
      for (uint t = 0u; t < kk; ++t) acc += x[r * kk + t] * w[j * kk + t];
    }
    y[i] = acc;
  }
}
