// Softmax over the last axis: one invocation per row of `c` values.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Args {
  layout(offset = 0) int rows;
  layout(offset = 8) int c;
};

void main() {
  for (uint r = gl_GlobalInvocationID.x; r < uint(rows); r += gl_NumWorkGroups.x * 64u) {
    const uint base = r * uint(c);
    float mx = -3.402823466e+38, sum = 0.0;
    for (uint i = 0u; i < uint(c); ++i) mx = max(mx, x[base + i]);
    for (uint i = 0u; i < uint(c); ++i) {
      y[base + i] = exp(x[base + i] - mx);
      sum += y[base + i];
    }
    for (uint i = 0u; i < uint(c); ++i) y[base + i] /= sum;
  }
}
