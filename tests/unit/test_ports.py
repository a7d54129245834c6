"""A second local stack refuses a taken port instead of reporting "up" against another stack's servers."""

from __future__ import annotations

import socket

from verbatim.embedded import free_port, port_free


def test_a_listening_port_is_not_free() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        taken = listener.getsockname()[1]
        assert port_free(taken) is False
    assert port_free(free_port()) is True
