"""Prints a free loopback TCP port below the kernel's ephemeral range (32768 and up), from
which outgoing connections take their local ports: one found free there can be taken before
the process meant to listen on it binds it. The rule of grid_primitives::ports, for the
scripts."""
import random
import socket
import sys

for port in random.sample(range(10000, 32000), 200):
    try:
        socket.create_server(("127.0.0.1", port)).close()
    except OSError:
        continue
    print(port)
    sys.exit(0)
sys.exit("no free loopback port from 10000 to 31999")
