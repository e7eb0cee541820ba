#!/usr/bin/env python3
"""A TLS-terminating proxy in front of one API server, for the HA scenarios.

A reconciler pointed at it (its kubeconfig's server is this proxy) works as
usual until the proxy gets SIGUSR1: from then on its Lease requests (any
path with /leases) are held, never forwarded nor answered, as if the Lease
had become unreachable, while its other requests still go through. SIGUSR2
lets them through again.

Each request is logged to --log as one JSON line: wall time, method, path,
and whether it was forwarded or held, so a scenario can count what the
reconciler wrote and when. Requests are parsed (HTTP/1.1, Content-Length or
chunked bodies); responses are relayed byte for byte (watch streams too).

The proxy serves --cert/--key (the API server's own serving certificate, so
the reconciler's CA accepts it) and connects upstream as --client-cert.
"""
import argparse
import json
import signal
import socket
import ssl
import sys
import threading
import time

MAX_HEADER = 64 * 1024
MAX_BODY = 16 * 1024 * 1024

held = threading.Event()
log_lock = threading.Lock()


def log(f, method, path, action):
    line = json.dumps({"t": time.time(), "method": method, "path": path, "action": action})
    with log_lock:
        f.write(line + "\n")
        f.flush()


def read_until(sock, buf, marker, limit):
    while marker not in buf:
        if len(buf) > limit:
            raise ValueError("too long")
        data = sock.recv(65536)
        if not data:
            raise EOFError
        buf += data
    return buf


def read_exact(sock, buf, n):
    while len(buf) < n:
        data = sock.recv(65536)
        if not data:
            raise EOFError
        buf += data
    return buf


def read_request(sock, buf):
    """Returns (raw request bytes, method, path, rest of buf)."""
    buf = read_until(sock, buf, b"\r\n\r\n", MAX_HEADER)
    end = buf.index(b"\r\n\r\n") + 4
    head, buf = buf[:end], buf[end:]
    lines = head.decode("latin-1").split("\r\n")
    method, target = lines[0].split(" ")[:2]
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            buf = read_until(sock, buf, b"\r\n", MAX_HEADER)
            i = buf.index(b"\r\n")
            size = int(buf[:i].split(b";")[0], 16)
            buf = read_exact(sock, buf, i + 2 + size + 2)
            body += buf[: i + 2 + size + 2]
            buf = buf[i + 2 + size + 2:]
            if size == 0:
                break
    elif "content-length" in headers:
        n = int(headers["content-length"])
        if n > MAX_BODY:
            raise ValueError("body too large")
        buf = read_exact(sock, buf, n)
        body, buf = buf[:n], buf[n:]
    return head + body, method, target.split("?")[0], buf


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except (OSError, ssl.SSLError):
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(conn, args, srv_ctx, up_ctx, logf):
    upstream = None
    try:
        conn = srv_ctx.wrap_socket(conn, server_side=True)
        buf = b""
        while True:
            raw, method, path, buf = read_request(conn, buf)
            if "/leases" in path and held.is_set():
                log(logf, method, path, "held")
                # never answered: wait for the client to give up
                while conn.recv(65536):
                    pass
                return
            log(logf, method, path, "forward")
            if upstream is None:
                plain = socket.create_connection((args.upstream_host, args.upstream_port))
                upstream = up_ctx.wrap_socket(plain, server_hostname=args.upstream_host)
                threading.Thread(target=pipe, args=(upstream, conn), daemon=True).start()
            upstream.sendall(raw)
    except (EOFError, OSError, ssl.SSLError, ValueError):
        pass
    finally:
        for s in (conn, upstream):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--upstream", required=True, help="host:port")
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--client-cert", required=True)
    p.add_argument("--client-key", required=True)
    p.add_argument("--log", required=True)
    args = p.parse_args()
    args.upstream_host, port = args.upstream.rsplit(":", 1)
    args.upstream_port = int(port)

    srv_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv_ctx.load_cert_chain(args.cert, args.key)
    srv_ctx.set_alpn_protocols(["http/1.1"])
    up_ctx = ssl.create_default_context(cafile=args.ca)
    up_ctx.load_cert_chain(args.client_cert, args.client_key)
    up_ctx.set_alpn_protocols(["http/1.1"])

    signal.signal(signal.SIGUSR1, lambda *_: held.set())
    signal.signal(signal.SIGUSR2, lambda *_: held.clear())
    logf = open(args.log, "a")
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", args.listen))
    ls.listen(64)
    print(f"lease-proxy: 127.0.0.1:{args.listen} -> {args.upstream}", flush=True)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c, args, srv_ctx, up_ctx, logf), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
