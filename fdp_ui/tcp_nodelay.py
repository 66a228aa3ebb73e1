"""Turn off Nagle's algorithm on the app server's TCP sockets (TCP_NODELAY).

Why: Streamlit's server binds its listening socket as ``socket.socket(family)`` (protocol 0),
and asyncio sets TCP_NODELAY only on sockets whose protocol is IPPROTO_TCP, so every accepted
connection keeps Nagle's algorithm. A response written as headers, then body waits for the
browser's delayed ACK of the headers: 40 ms per request on a reused (keep-alive) connection,
measured with curl on /_stcore/health and on every static file. A session's first page loads
about 80 script chunks lazily over at most 6 connections, so those 40 ms stalls added up to
0.5-1 s before the page showed (benchmarks/bench_app_start_split.py); the websocket's
messages were held back the same way.

What: every TCP socket of this process gets TCP_NODELAY, found through /proc/self/fd (Linux;
elsewhere nothing happens). Linux copies the option from a listening socket to the
connections it accepts, so once the listener has it, later connections have it too; the
connections already open (the browser's first page) are fixed in place. Harmless for other
TCP sockets of the process (a PostgreSQL ledger's connection: libpq sets it itself).
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path

_FD_DIR = Path("/proc/self/fd")
_INET = (socket.AF_INET, socket.AF_INET6)


def _tcp_socket_fds() -> list[int]:
    fds = []
    try:
        entries = list(_FD_DIR.iterdir())
    except OSError:
        return fds
    for entry in entries:
        try:
            if os.readlink(entry).startswith("socket:"):
                fds.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return fds


def disable_nagle() -> int:
    """Set TCP_NODELAY on every TCP socket of the process; returns how many were set."""
    done = 0
    for fd in _tcp_socket_fds():
        try:
            sock = socket.socket(fileno=fd)  # wraps the descriptor; detached below, never closed
        except OSError:
            continue
        try:
            if sock.family in _INET and sock.type == socket.SOCK_STREAM:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                done += 1
        except OSError:
            pass
        finally:
            sock.detach()
    return done


@functools.cache
def ensure() -> int:
    """disable_nagle() once per process (the first script run): the listener then passes the
    option on to every later connection."""
    return disable_nagle()
