// y = a OP b elementwise (OP from the build: ADD or MUL). One invocation per
// element, grid-strided so that a dispatch capped at the device's group count
// still covers any size. Scalars are TVM-style 8-byte push-constant slots.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Args { layout(offset = 0) int n; };

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < uint(n); i += gl_NumWorkGroups.x * 64u) {
#ifdef ADD
    y[i] = a[i] + b[i];
#else
    y[i] = a[i] * b[i];
#endif
  }
}
