// conv2d NCHW, stride 1, symmetric zero padding: x [N,C,H,W], w [O,C,KH,KW],
// b [O] -> y [N,O,OH,OW]. One invocation per output element; ten scalars.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float w[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float b[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Args {
  layout(offset = 0) int n;
  layout(offset = 8) int c;
  layout(offset = 16) int h;
  layout(offset = 24) int wd;
  layout(offset = 32) int o;
  layout(offset = 40) int kh;
  layout(offset = 48) int kw;
  layout(offset = 56) int oh;
  layout(offset = 64) int ow;
  layout(offset = 72) int pad;
};

void main() {
  for (uint g = gl_GlobalInvocationID.x; g < uint(n * o * oh * ow); g += gl_NumWorkGroups.x * 64u) {
    const int j = int(g) % ow, i = (int(g) / ow) % oh, oc = (int(g) / (ow * oh)) % o, b0 = int(g) / (ow * oh * o);
    precise float acc = b[oc];
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
}
