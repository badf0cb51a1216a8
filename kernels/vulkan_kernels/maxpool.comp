// max-pool NCHW with window = stride = H / OH (and W / OW).
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Args {
  layout(offset = 0) int planes;
  layout(offset = 8) int h;
  layout(offset = 16) int w;
  layout(offset = 24) int oh;
  layout(offset = 32) int ow;
};

void main() {
  for (uint g = gl_GlobalInvocationID.x; g < uint(planes * oh * ow); g += gl_NumWorkGroups.x * 64u) {
    const int j = int(g) % ow, i = (int(g) / ow) % oh, p = int(g) / (ow * oh), sh = h / oh, sw = w / ow;
    float m = -3.402823466e+38;
    for (int u = 0; u < sh; ++u)
      for (int v = 0; v < sw; ++v) m = max(m, x[(p * h + i * sh + u) * w + j * sw + v]);
    y[g] = m;
  }
}
