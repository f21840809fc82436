"""A fault-injecting HTTP proxy for tests: forwards every request to an S3-compatible server on
loopback and answers chosen PUTs with 503 SlowDown instead (moto has no fault injection).

    proxy = FaultyProxy(upstream_port); proxy.fail_puts = 4   # the next 4 PUTs fail
    proxy.fail_puts_matching = "part-"                        # every PUT of a part fails, for good
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message><RequestId>faulty-proxy</RequestId></Error>")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


class FaultyProxy:
    """The proxy on 127.0.0.1:<port>, serving from a daemon thread until close()."""

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.fail_puts = 0  # fail this many of the next PUTs
        self.fail_puts_matching: str | None = None  # fail every PUT whose path contains this
        self.failed = 0  # PUTs answered with 503 so far
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    raw = b""
                    while True:
                        line = self.rfile.readline()
                        raw += line
                        size = int(line.split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while True:  # trailers, then the blank line
                                trailer = self.rfile.readline()
                                raw += trailer
                                if trailer in (b"\r\n", b"\n", b""):
                                    return raw
                        raw += self.rfile.read(size + 2)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _fault(self) -> bool:
                if self.command != "PUT":
                    return False
                with proxy.lock:
                    if proxy.fail_puts > 0:
                        proxy.fail_puts -= 1
                    elif not (proxy.fail_puts_matching and proxy.fail_puts_matching in self.path):
                        return False
                    proxy.failed += 1
                return True

            def _forward(self) -> None:
                body = self._body()
                if self._fault():
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(SLOW_DOWN)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(SLOW_DOWN)
                    self.close_connection = True
                    return
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=30)
                try:
                    self._relay(conn, body)
                except OSError:  # the server is not up yet (or went away): a plain 502
                    self.send_response(502)
                    self.send_header("Content-Length", "0")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.close_connection = True
                finally:
                    conn.close()

            def _relay(self, conn: http.client.HTTPConnection, body: bytes) -> None:
                conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for k, v in self.headers.items():
                    if k.lower() not in ("connection", "proxy-connection", "expect"):
                        conn.putheader(k, v)
                conn.endheaders()
                if body:
                    conn.send(body)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                        self.send_header(k, v)
                length = resp.getheader("Content-Length") if self.command == "HEAD" else str(len(data))
                self.send_header("Content-Length", length or "0")
                self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                self.close_connection = True

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
