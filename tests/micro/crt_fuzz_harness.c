/* Feeds every file in a folder to the C runtime's graph executor as graph JSON
 * (and the same bytes as a param dict), in one process. Any crash or sanitizer
 * report fails the test that runs it; errors are expected and fine. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetrt_crt.h"

static unsigned char g_arena[1 << 20];

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  DIR* dir = opendir(argv[1]);
  if (!dir) return 2;
  int count = 0;
  struct dirent* e;
  static char path[4096];
  static char data[1 << 16];
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
    FILE* f = fopen(path, "rb");
    if (!f) continue;
    const size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    hetrt_crt_arena_t arena;
    hetrt_crt_graph_t* g = NULL;
    hetrt_crt_arena_init(&arena, g_arena, sizeof g_arena);
    if (hetrt_crt_graph_create(&arena, NULL, data, n, NULL, 0, &g) == HETRT_CRT_OK) hetrt_crt_graph_run(g);
    hetrt_crt_arena_init(&arena, g_arena, sizeof g_arena);
    /* The same bytes as params for a graph that exists. */
    static const char kTiny[] =
        "{\"nodes\":[{\"op\":\"null\",\"name\":\"x\",\"inputs\":[]}],\"arg_nodes\":[0],\"heads\":[[0,0,0]],"
        "\"node_row_ptr\":[0,1],\"attrs\":{\"dltype\":[\"list_str\",[\"float32\"]],\"shape\":[\"list_shape\",[[4]]],"
        "\"storage_id\":[\"list_int\",[0]]}}";
    hetrt_crt_graph_create(&arena, NULL, kTiny, sizeof kTiny - 1, (const uint8_t*)data, n, &g);
    ++count;
  }
  closedir(dir);
  printf("%d inputs\n", count);
  return 0;
}
