// y[r, j] = b[j] + sum_t x[r, t] * w[j, t]: x [N, K], w [M, K], b [M], y [N, M].
// Accumulates in the CPU kernel's order so that results agree closely.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float w[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float b[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Args {
  layout(offset = 0) int n;
  layout(offset = 8) int k;
  layout(offset = 16) int m;
};

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < uint(n * m); i += gl_NumWorkGroups.x * 64u) {
    const uint r = i / uint(m), j = i % uint(m);
    precise float acc = b[j];
    for (uint t = 0u; t < uint(k); ++t) acc += x[r * uint(k) + t] * w[j * uint(k) + t];
    y[i] = acc;
  }
}
