/usr/bin/python3 bench/serve_load.py --hetrt build/bin/hetrt --floor build/bin/protocol_floor_server --seconds 1 --model mlp --concurrency 1,16 --json build/figures/serve_load.json
