"""Paddock's Python SDK: a client for a paddockd server's HTTP API.

It uses the standard library only. The client is a view over the same
declared state as the CLI: creating a box declares it and the server's
reconciler makes it.

    from paddock import Client
    c = Client()                      # PADDOCK_HOST and PADDOCK_TOKEN, or 'paddock login' 
    box = c.create_box(type="small", ttl="1h")
    c.push(box["name"], "./project", to="/config/project")
    r = c.exec(box["name"], ["bash", "-lc", "cd /config/project && npm test"])
    print(r.exit_code, r.stdout.decode())
    c.stop_box(box["name"])

    # A box that goes when the block ends (unless box.keep() is called):
    with Box.create(c, type="small") as box:
        print(box.exec(["uname", "-a"]).stdout.decode())
"""

from . import models
from .client import AsyncClient, AsyncExecStream, Box, Client, ExecResult, ExecStream, PaddockError, cli_login

__version__ = "0.1.0"

__all__ = ["AsyncClient", "AsyncExecStream", "Box", "Client", "ExecResult", "ExecStream", "PaddockError", "cli_login", "models", "__version__"]
