"""fdp_ui.tcp_nodelay: the app server's sockets get TCP_NODELAY, and connections the listener
accepts afterwards inherit it (Streamlit's listener is created with protocol 0, so asyncio
leaves Nagle's algorithm on: 40 ms per response on a reused connection)."""

import socket
import sys

import pytest

from fdp_ui import tcp_nodelay

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd is Linux's")


def _nodelay(sock) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_listener_and_open_connections_get_nodelay_and_later_connections_inherit_it():
    with socket.socket(socket.AF_INET) as listener:  # as Streamlit binds it: protocol 0
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with socket.create_connection(listener.getsockname()) as client:
            before, _ = listener.accept()
            assert _nodelay(listener) == 0 and _nodelay(before) == 0
            assert tcp_nodelay.disable_nagle() >= 3  # listener, accepted, client
            assert _nodelay(listener) and _nodelay(before) and _nodelay(client)
            before.sendall(b"still open")  # the wrapped descriptors were not closed
            assert client.recv(10) == b"still open"
            before.close()
        with socket.create_connection(listener.getsockname()):
            later, _ = listener.accept()
            assert _nodelay(later)
            later.close()
