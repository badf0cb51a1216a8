// y = max(x, 0) elementwise.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Args { layout(offset = 0) int n; };

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < uint(n); i += gl_NumWorkGroups.x * 64u) y[i] = max(x[i], 0.0);
}
