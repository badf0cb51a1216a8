"""`hetrt serve` over gRPC through a Node.js client (npm's @grpc/grpc-js and
@grpc/proto-loader): serves the mlp fixture and runs node_client/infer_test.js
through server_process.py. Usage: grpc_node_test.py HETRT_BINARY.

node_modules comes from `npm ci --prefix tests/serve/node_client` (scripts/setup.sh);
a missing Node or package fails the test: CI requires every client.
"""
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import server_process  # noqa: E402

CLIENT = os.path.join(HERE, "node_client")


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    node = shutil.which("node")
    if node is None:
        sys.exit("FAIL: node is missing: install nodejs (scripts/setup.sh)")
    for package in ("@grpc/grpc-js", "@grpc/proto-loader"):
        if not os.path.isfile(os.path.join(CLIENT, "node_modules", package, "package.json")):
            sys.exit(f"FAIL: npm package {package} is missing from {CLIENT}/node_modules: "
                     "run `npm ci --prefix tests/serve/node_client` (scripts/setup.sh)")
    fixtures = os.environ.get("HETRT_FIXTURES", os.path.join(REPO_ROOT, "..", "shared", "fixtures"))
    if not os.path.isdir(os.path.join(fixtures, "tvm-0.18", "mlp")):
        return server_process.missing_fixtures(fixtures)
    os.environ["HETRT_FIXTURES"] = fixtures
    repository = server_process.fixture_repository(os.path.join(fixtures, "tvm-0.18"),
                                                   {"mlp": ("mlp", ["deploy.so"], None)})
    try:
        return server_process.main([argv[0], argv[1], repository, "--", node,
                                    os.path.join(CLIENT, "infer_test.js")])
    finally:
        shutil.rmtree(repository, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
