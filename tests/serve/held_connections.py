"""Clients that hold `hetrt serve`'s REST connections open without using them,
over raw sockets: idle keep-alive connections, half-sent request headers,
a client dripping one byte every half second, and clients that pipeline
requests and never read the answers. For the starvation test and the
held-connections benchmark."""
import socket
import threading


def connect(address):
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=30)


def request(path, extra=""):
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode()


def answered(s, path):
    """Sends a GET for `path` on the open connection `s`; the status line and headers of its answer."""
    s.sendall(request(path))
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def idle_keep_alive(address, count):
    """Connections that made one request, read its answer and stay open."""
    held = []
    for _ in range(count):
        s = connect(address)
        data = answered(s, "/v2/health/live")
        if not data.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"an idle connection's first request was answered {data[:40]!r}")
        held.append(s)
    return held


def half_headers(address, count):
    held = []
    for _ in range(count):
        s = connect(address)
        s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Le")
        held.append(s)
    return held


def never_read(address, count):
    """Each pipelines far more answers than the socket buffers hold and reads none."""
    held = []
    burst = request("/v2/health/live") * 20000
    for _ in range(count):
        s = connect(address)
        s.setblocking(False)
        try:
            s.send(burst)  # as much as fits; the server blocks writing the answers
        except BlockingIOError:
            pass
        held.append(s)
    return held


def dripping(address, stop):
    """One header byte every 0.5 s until `stop`."""
    s = connect(address)
    text = request("/v2/health/live", "X-Slow: " + "a" * 1000 + "\r\n")
    for b in text:
        if stop.is_set():
            break
        try:
            s.send(bytes([b]))
        except OSError:
            break
        stop.wait(0.5)
    s.close()


class HeldConnections:
    """Opens `idle`, `half`, `never_read` connections and `drip` dripping
    clients to host:port at construction; close() lets them all go."""

    def __init__(self, address, idle=0, half=0, never_read_count=0, drip=0):
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=dripping, args=(address, self.stop), daemon=True)
                        for _ in range(drip)]
        for t in self.threads:
            t.start()
        self.sockets = idle_keep_alive(address, idle) + half_headers(address, half) + \
            never_read(address, never_read_count)

    def __len__(self):
        return len(self.sockets) + len(self.threads)

    def close(self):
        self.stop.set()
        for s in self.sockets:
            s.close()
