"""``sessiongraph serve``: a local web server over the store (pages and a REST API with OpenAPI).

:func:`create_app` builds the Starlette application; other packages add routes and pages through the
``sessiongraph.server`` entry-point group (:class:`Extension`); :mod:`graph.server.security` holds the
token, Host/Origin and header rules every request goes through.
"""

from graph.server.app import ApiError, Extension, NavLink, ServerContext, create_app, render
from graph.server.security import new_token

__all__ = ["ApiError", "Extension", "NavLink", "ServerContext", "create_app", "new_token", "render"]
