build/bin/graph_bench --benchmark_min_time=0.05 --benchmark_out=build/figures/graph_bench.json --benchmark_out_format=json
