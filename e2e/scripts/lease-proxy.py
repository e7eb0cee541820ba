#!/usr/bin/env python3
"""A TLS-terminating proxy in front of one API server, for the HA, the
hung-worker and the divergences scenarios.

A reconciler pointed at it (its kubeconfig's server is this proxy) works as
usual until the proxy gets SIGUSR1: from then on the requests whose path
matches --hold (a regular expression, default: the Lease's, any path with
/leases) are held, never forwarded nor answered, as if the server had
become unreachable while still accepting connections; the others still go
through, and so do the answers (watch streams too) of requests forwarded
before. `--hold .` holds every new request: a server that hangs. SIGUSR2
lets new requests through again (a held one stays held).

--empty (a regular expression, off by default) hides a resource from the
first request on, whatever the signals: a GET list whose path matches is
answered by the proxy itself with an empty List, and a watch on it is held,
so a client's cache of it stays empty while the objects exist upstream and
every other request on them (a GET of one by name, a create, a delete)
goes through.

Each request is logged to --log as one JSON line: wall time, method, path,
and whether it was forwarded or held, so a scenario can count what the
reconciler wrote and when (action "empty" for a list answered empty). Requests are parsed (HTTP/1.1, Content-Length or
chunked bodies); responses are relayed byte for byte (watch streams too),
in the same thread as the requests of their connection.

The proxy serves --cert/--key (the API server's own serving certificate, so
the reconciler's CA accepts it) and connects upstream as --client-cert.
"""
import argparse
import json
import re
import urllib.parse
import select
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


def parse_request(buf):
    """A whole request at the start of buf: (raw bytes, method, path, query,
    rest), or None while it is incomplete."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > MAX_HEADER:
            raise ValueError("header too long")
        return None
    end += 4
    lines = buf[:end].decode("latin-1").split("\r\n")
    method, target = lines[0].split(" ")[:2]
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    pos = end
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            i = buf.find(b"\r\n", pos)
            if i < 0:
                return None
            size = int(buf[pos:i].split(b";")[0], 16)
            if len(buf) < i + 2 + size + 2:
                return None
            pos = i + 2 + size + 2
            if size == 0:
                break
    elif "content-length" in headers:
        n = int(headers["content-length"])
        if n > MAX_BODY:
            raise ValueError("body too large")
        if len(buf) < pos + n:
            return None
        pos += n
    path, _, query = target.partition("?")
    return buf[:pos], method, path, query, buf[pos:]


EMPTY_LIST = json.dumps(
    {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}
).encode()


def empty_list_response():
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(EMPTY_LIST)) + EMPTY_LIST


def is_watch(query):
    w = urllib.parse.parse_qs(query).get("watch", [""])[0]
    return w in ("1", "true")


def serve(conn, args, srv_ctx, up_ctx, logf):
    """One client connection, in one thread: an SSL socket must never be
    read and written from two threads at once."""
    upstream = None
    try:
        conn = srv_ctx.wrap_socket(conn, server_side=True)
        buf, holding = b"", False
        while True:
            socks = [conn] + ([upstream] if upstream is not None else [])
            ready = [s for s in socks if s.pending()] or select.select(socks, [], [])[0]
            for s in ready:
                data = s.recv(65536)
                if not data:
                    return
                if s is upstream:
                    conn.sendall(data)
                    continue
                if holding:
                    continue  # a held request: never answered
                buf += data
                while True:
                    req = parse_request(buf)
                    if req is None:
                        break
                    raw, method, path, query, buf = req
                    hidden = args.empty is not None and method == "GET" and args.empty.search(path)
                    if hidden and not is_watch(query):
                        log(logf, method, path, "empty")
                        conn.sendall(empty_list_response())
                        continue
                    if (hidden and is_watch(query)) or (held.is_set() and args.hold.search(path)):
                        log(logf, method, path, "held")
                        holding = True
                        break
                    log(logf, method, path, "forward")
                    if upstream is None:
                        plain = socket.create_connection((args.upstream_host, args.upstream_port))
                        upstream = up_ctx.wrap_socket(plain, server_hostname=args.upstream_host)
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
    p.add_argument("--hold", default="/leases", help="regex of the paths held after SIGUSR1")
    p.add_argument("--empty", help="regex of the paths whose lists are empty and watches held")
    args = p.parse_args()
    args.hold = re.compile(args.hold)
    args.empty = re.compile(args.empty) if args.empty else None
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
